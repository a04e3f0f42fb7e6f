"""Tests of resolving the license of files and repositories in real git snapshots."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pygit2
import pytest

from tests.support.gitrepos import Symlink
from tests.worker.licenses.conftest import SnapshotFactory, license_text
from worker.errors import NotFound
from worker.licenses import LicenseCache, LicenseInfo, LicenseResolver
from worker.licenses.identify import TextLicense
from worker.licenses.resolver import MAX_LICENSE_FILES_PER_DIRECTORY

GARBAGE = "This project's license is on our website. Please see https://example.com/legal.\n"
CODE = b"def main():\n    return 0\n"


def file_license(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> LicenseInfo | None:
    """Resolve the license of the file at `path` with a fresh resolver."""
    blob = tree / path
    assert isinstance(blob, pygit2.Blob)
    return LicenseResolver(repo).for_file(tree, path, str(blob.id), blob.data)


def seen(info: LicenseInfo | None) -> tuple[str, str] | None:
    """The license and its source, as a test compares them (confidence is checked apart)."""
    return None if info is None else (info.spdx, info.source)


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("a.py", "# SPDX-License-Identifier: Apache-2.0\n"),
        ("a.c", "/* SPDX-License-Identifier: Apache-2.0 */\n"),
        ("a.rs", "// SPDX-License-Identifier: Apache-2.0\n"),
        ("a.sql", "-- SPDX-License-Identifier: Apache-2.0\n"),
        ("a.html", "<!-- SPDX-License-Identifier: Apache-2.0 -->\n"),
        ("a.el", ";; SPDX-License-Identifier: Apache-2.0\n"),
    ],
)
def test_header_wins_over_root_license(snapshot: SnapshotFactory, name: str, header: str) -> None:
    """A file's SPDX header decides its license even under an MIT root LICENSE."""
    repo, tree = snapshot({"LICENSE": license_text("MIT"), f"src/{name}": header + "x\n"})
    assert seen(file_license(repo, tree, f"src/{name}")) == ("Apache-2.0", "spdx-header")


def test_root_license_file(snapshot: SnapshotFactory) -> None:
    """Without a header, a file takes the root LICENSE, and so does the repository."""
    repo, tree = snapshot({"LICENSE": license_text("MIT"), "pkg/deep/er/mod.py": CODE})
    expected = ("MIT", "LICENSE")
    assert seen(file_license(repo, tree, "pkg/deep/er/mod.py")) == expected
    assert seen(LicenseResolver(repo).for_root(tree)) == expected


def test_nested_license_overrides_root(snapshot: SnapshotFactory) -> None:
    """A license file in a subdirectory applies below it; elsewhere the root one applies."""
    repo, tree = snapshot(
        {
            "LICENSE": license_text("MIT"),
            "vendor/x/COPYING": license_text("GPL-3.0-only"),
            "vendor/x/lib/a.c": CODE,
            "vendor/x/b.c": CODE,
            "vendor/y/c.c": CODE,
            "src/main.c": CODE,
        }
    )
    gpl = ("GPL-3.0-only", "vendor/x/COPYING")
    mit = ("MIT", "LICENSE")
    assert seen(file_license(repo, tree, "vendor/x/lib/a.c")) == gpl
    assert seen(file_license(repo, tree, "vendor/x/b.c")) == gpl
    assert seen(file_license(repo, tree, "vendor/y/c.c")) == mit
    assert seen(file_license(repo, tree, "src/main.c")) == mit
    assert seen(LicenseResolver(repo).for_root(tree)) == mit


def test_no_license_anywhere(snapshot: SnapshotFactory) -> None:
    """No header and no license file means no license, for files and for the repository."""
    repo, tree = snapshot({"README.md": "# hi\n", "src/a.py": CODE})
    assert file_license(repo, tree, "src/a.py") is None
    assert LicenseResolver(repo).for_root(tree) is None


def test_garbage_license_falls_further_up(snapshot: SnapshotFactory) -> None:
    """An unidentifiable LICENSE is skipped: the search goes on to the root's license."""
    repo, tree = snapshot(
        {"LICENSE.md": license_text("BSD-3-Clause"), "lib/LICENSE": GARBAGE, "lib/a.py": CODE}
    )
    assert seen(file_license(repo, tree, "lib/a.py")) == ("BSD-3-Clause", "LICENSE.md")


def test_garbage_root_license_is_no_license(snapshot: SnapshotFactory) -> None:
    """A root LICENSE that says nothing identifiable leaves the repository without a license."""
    repo, tree = snapshot({"LICENSE": GARBAGE, "COPYING": "", "a.py": CODE})
    assert LicenseResolver(repo).for_root(tree) is None
    assert file_license(repo, tree, "a.py") is None


def test_dual_license_header(snapshot: SnapshotFactory) -> None:
    """A dual-license header is kept as the OR expression the author wrote."""
    repo, tree = snapshot(
        {"LICENSE": license_text("ISC"), "a.rs": "// SPDX-License-Identifier: MIT OR Apache-2.0\n"}
    )
    assert seen(file_license(repo, tree, "a.rs")) == ("MIT OR Apache-2.0", "spdx-header")


def test_two_license_files_combine_with_and(snapshot: SnapshotFactory) -> None:
    """LICENSE-MIT and LICENSE-APACHE in one directory give both licenses, joined by AND."""
    repo, tree = snapshot(
        {
            "LICENSE-MIT": license_text("MIT"),
            "LICENSE-APACHE": license_text("Apache-2.0"),
            "crates/core/lib.rs": CODE,
        }
    )
    expected = ("Apache-2.0 AND MIT", "LICENSE-APACHE, LICENSE-MIT")
    assert seen(LicenseResolver(repo).for_root(tree)) == expected
    assert seen(file_license(repo, tree, "crates/core/lib.rs")) == expected


def test_license_file_declaring_its_spdx_id(snapshot: SnapshotFactory) -> None:
    """A license file that names its license with an SPDX tag (as Linux's COPYING does) counts."""
    copying = (
        "The Linux Kernel is provided under:\n\n"
        "\tSPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note\n\n"
        "Being under the terms of the GNU General Public License version 2 only,\n"
        "according with:\n\n\tLICENSES/preferred/GPL-2.0\n"
    )
    repo, tree = snapshot({"COPYING": copying, "kernel/fork.c": CODE})
    expected = ("GPL-2.0 WITH Linux-syscall-note", "COPYING")
    assert seen(LicenseResolver(repo).for_root(tree)) == expected
    assert seen(file_license(repo, tree, "kernel/fork.c")) == expected


def test_combined_choices_keep_their_parentheses(snapshot: SnapshotFactory) -> None:
    """A declared OR next to another license file is parenthesised before joining with AND."""
    repo, tree = snapshot(
        {
            "LICENSE": "SPDX-License-Identifier: MIT OR Apache-2.0\n",
            "COPYING": license_text("ISC"),
        }
    )
    info = LicenseResolver(repo).for_root(tree)
    assert info is not None
    assert info.spdx == "ISC AND (MIT OR Apache-2.0)"


def test_same_license_twice_is_one_license(snapshot: SnapshotFactory) -> None:
    """Two files with the same license name it once and cite both files."""
    repo, tree = snapshot(
        {"sub/LICENSE": license_text("MPL-2.0"), "sub/COPYING": license_text("MPL-2.0")}
    )
    assert seen(file_license(repo, tree, "sub/COPYING")) == ("MPL-2.0", "sub/COPYING, sub/LICENSE")


@pytest.mark.parametrize(
    "content",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00",
        bytes(range(256)) * 4,
        b"\xff\xfe" + "MIT License".encode("utf-16-le"),
        b"\xc3\x28\xa0\xa1 invalid utf-8 \xe2\x82",
    ],
)
def test_binary_or_undecodable_license_file(snapshot: SnapshotFactory, content: bytes) -> None:
    """A binary or non-UTF-8 LICENSE neither crashes nor counts as a license."""
    repo, tree = snapshot({"LICENSE": content, "a.py": CODE})
    assert LicenseResolver(repo).for_root(tree) is None
    assert file_license(repo, tree, "a.py") is None


def test_latin1_license_file(snapshot: SnapshotFactory) -> None:
    """A Latin-1 encoded license file is still identified."""
    text = license_text("MIT").replace("Example Author", "Société Générale")
    repo, tree = snapshot({"LICENCE": text.encode("latin-1")})
    assert seen(LicenseResolver(repo).for_root(tree)) == ("MIT", "LICENCE")


def test_binary_file_with_header_bytes(snapshot: SnapshotFactory) -> None:
    """A binary file is searched like any other and falls back to the license file."""
    repo, tree = snapshot({"LICENSE": license_text("MIT"), "img.png": b"\x89PNG\x00\x00" * 100})
    assert seen(file_license(repo, tree, "img.png")) == ("MIT", "LICENSE")


def test_symlinked_license_and_license_directory_are_ignored(snapshot: SnapshotFactory) -> None:
    """A LICENSE symlink or a directory named LICENSE is not a license file."""
    repo, tree = snapshot(
        {
            "COPYING": license_text("GPL-3.0-only"),
            "sub/LICENSE": Symlink("../COPYING"),
            "sub/LICENSE.md/x.txt": license_text("MIT"),
            "sub/a.c": CODE,
        }
    )
    assert seen(file_license(repo, tree, "sub/a.c")) == ("GPL-3.0-only", "COPYING")


def test_submodule_entry_does_not_crash(snapshot: SnapshotFactory) -> None:
    """A gitlink (submodule) named LICENSE in a tree is skipped."""
    repo, base = snapshot({"LICENSE": license_text("MIT"), "a.py": CODE})
    builder = repo.TreeBuilder(base)
    builder.insert("COPYING", pygit2.Oid(hex="1" * 40), pygit2.enums.FileMode.COMMIT)
    tree = repo[builder.write()]
    assert isinstance(tree, pygit2.Tree)
    assert seen(LicenseResolver(repo).for_root(tree)) == ("MIT", "LICENSE")


def test_path_outside_the_tree(snapshot: SnapshotFactory) -> None:
    """A path whose directory is not in the tree is NotFound, naming that directory."""
    repo, tree = snapshot({"a/b.py": CODE})
    blob = tree / "a/b.py"
    assert isinstance(blob, pygit2.Blob)
    with pytest.raises(NotFound) as raised:
        LicenseResolver(repo).for_file(tree, "a/missing/b.py", str(blob.id), blob.data)
    assert raised.value.details == {"path": "a/missing"}
    with pytest.raises(NotFound):
        LicenseResolver(repo).for_file(tree, "a/b.py/c.py", str(blob.id), blob.data)


def test_lookup_reads_only_ancestor_directories(snapshot: SnapshotFactory) -> None:
    """Resolving one file looks at its ancestors' trees only, never at sibling directories."""
    files: dict[str, str | bytes] = {f"other{i}/LICENSE": license_text("ISC") for i in range(5)}
    files |= {"LICENSE": license_text("MIT"), "a/b/c.py": CODE}
    repo, tree = snapshot(files)
    cache = LicenseCache()
    blob = tree / "a/b/c.py"
    assert isinstance(blob, pygit2.Blob)
    LicenseResolver(repo, cache=cache).for_file(tree, "a/b/c.py", str(blob.id), blob.data)
    assert len(cache.directories) == 3
    for directory in ("a/b", "a"):
        assert cache.directories.get(str((tree / directory).id), "absent") is None
    assert len(cache.texts) == 1


def test_shared_cache_identifies_a_text_once(snapshot: SnapshotFactory) -> None:
    """Two repositories with the same LICENSE blob share one cached identification."""
    cache = LicenseCache()
    first, first_tree = snapshot({"LICENSE": license_text("MIT"), "x.py": CODE})
    second, second_tree = snapshot({"LICENSE": license_text("MIT"), "y/z.py": b"pass\n"})
    assert LicenseResolver(first, cache=cache).for_root(first_tree) is not None
    assert LicenseResolver(second, cache=cache).for_root(second_tree) is not None
    assert len(cache.texts) == 1
    assert len(cache.directories) == 2


def test_header_is_cached_by_blob(snapshot: SnapshotFactory) -> None:
    """Identical files at two paths share one cached header parse."""
    header = b"# SPDX-License-Identifier: 0BSD\n"
    repo, tree = snapshot({"a.py": header, "b/a.py": header, "c.py": CODE})
    cache = LicenseCache()
    resolver = LicenseResolver(repo, cache=cache)
    for path in ("a.py", "b/a.py", "c.py"):
        blob = tree / path
        assert isinstance(blob, pygit2.Blob)
        resolver.for_file(tree, path, str(blob.id), blob.data)
    assert len(cache.headers) == 2


def test_concurrent_lookups_agree_with_sequential(snapshot: SnapshotFactory) -> None:
    """Many threads sharing a resolver get exactly the answers a single thread gets."""
    files: dict[str, str | bytes] = {"LICENSE": license_text("MIT")}
    for i in range(6):
        files[f"d{i}/LICENSE"] = license_text("BSD-3-Clause") if i % 2 else GARBAGE
        files |= {
            f"d{i}/s{j}/f{k}.py": CODE + bytes([65 + j, 65 + k]) for j in range(3) for k in range(3)
        }
    repo, tree = snapshot(files)
    paths = sorted(path for path in files if path.endswith(".py"))
    sequential = LicenseResolver(repo)
    shared = LicenseResolver(repo, cache=LicenseCache(max_nearest=4, max_directories=4))

    def resolve(resolver: LicenseResolver, path: str) -> LicenseInfo | None:
        blob = tree / path
        assert isinstance(blob, pygit2.Blob)
        return resolver.for_file(tree, path, str(blob.id), blob.data)

    expected = [resolve(sequential, path) for path in paths]
    assert {info.source if info else None for info in expected} == {
        "LICENSE",
        "d1/LICENSE",
        "d3/LICENSE",
        "d5/LICENSE",
    }
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            assert list(pool.map(lambda path: resolve(shared, path), paths)) == expected


def test_identified_texts_are_taken_as_given(snapshot: SnapshotFactory) -> None:
    """A text the mirror identified is not identified again: its recorded answer stands."""
    repo, tree = snapshot({"LICENSE": license_text("MIT"), "a.py": CODE})
    license_id = str((tree / "LICENSE").id)
    resolver = LicenseResolver(
        repo, identified={license_id: TextLicense(spdx="0BSD", confidence=0.95)}
    )
    assert seen(resolver.for_root(tree)) == ("0BSD", "LICENSE")
    assert LicenseResolver(repo, identified={license_id: None}).for_root(tree) is None


def test_identify_license_files_covers_every_directory(snapshot: SnapshotFactory) -> None:
    """Every directory's license files are identified, unrecognisable texts as None."""
    repo, tree = snapshot(
        {
            "LICENSE": license_text("MIT"),
            "vendor/x/COPYING": license_text("GPL-3.0-only"),
            "vendor/x/lib/LICENSE.txt": GARBAGE,
            "docs/guide.md": "# Guide\n",
            "src/license.py": CODE,
        }
    )
    found = LicenseResolver(repo).identify_license_files(tree)
    assert {blob: text.spdx if text else None for blob, text in found.items()} == {
        str((tree / "LICENSE").id): "MIT",
        str((tree / "vendor/x/COPYING").id): "GPL-3.0-only",
        str((tree / "vendor/x/lib/LICENSE.txt").id): None,
    }


def test_identify_license_files_reads_what_a_lookup_reads(snapshot: SnapshotFactory) -> None:
    """Only the license files a lookup would read are identified: the first few by name."""
    files: dict[str, str | bytes] = {
        f"LICENSE-{i:02d}": f"Copyright {i}\n" for i in range(MAX_LICENSE_FILES_PER_DIRECTORY + 2)
    }
    repo, tree = snapshot(files)
    ids = {name: str((tree / name).id) for name in files}
    known = dict.fromkeys(ids.values(), TextLicense(spdx="MIT", confidence=1.0))
    found = LicenseResolver(repo, identified=known).identify_license_files(tree)
    assert set(found) == {ids[name] for name in sorted(files)[:MAX_LICENSE_FILES_PER_DIRECTORY]}


def test_composite_file_gives_the_first_license_and_reports_the_bundled(
    snapshot: SnapshotFactory,
) -> None:
    """A LICENSE holding the project's BSD text then bundled MIT code's gives BSD-3-Clause."""
    composite = (
        license_text("BSD-3-Clause")
        + "\n\n"
        + "-" * 72
        + "\n\nThe bundled tabulate module is under the following license:\n\n"
        + license_text("MIT")
    )
    repo, tree = snapshot({"LICENSE": composite, "pkg/a.py": CODE})
    info = LicenseResolver(repo).for_root(tree)
    assert info is not None
    assert (info.spdx, info.source, info.additional) == ("BSD-3-Clause", "LICENSE", ("MIT",))
    assert 0.9 <= info.confidence <= 1.0


def test_two_license_files_and_metadata_give_its_choice(snapshot: SnapshotFactory) -> None:
    """LICENSE-MIT, LICENSE-APACHE and Cargo.toml's "MIT OR Apache-2.0" give that OR."""
    cargo = '[package]\nname = "fastroute"\nversion = "0.1.0"\nlicense = "MIT OR Apache-2.0"\n'
    repo, tree = snapshot(
        {
            "LICENSE-MIT": license_text("MIT"),
            "LICENSE-APACHE": license_text("Apache-2.0"),
            "Cargo.toml": cargo,
            "src/lib.rs": CODE,
        }
    )
    assert seen(LicenseResolver(repo).for_root(tree)) == (
        "MIT OR Apache-2.0",
        "LICENSE-APACHE, LICENSE-MIT, Cargo.toml",
    )


def test_two_license_files_and_a_readme_choice_give_or(snapshot: SnapshotFactory) -> None:
    """Without metadata, a README saying "either of ... at your option" makes the files an OR."""
    readme = (
        "# fastroute\n\n## License\n\nLicensed under either of\n\n * Apache License, Version"
        " 2.0\n * MIT license\n\nat your option.\n"
    )
    repo, tree = snapshot(
        {
            "LICENSE-MIT": license_text("MIT"),
            "LICENSE-APACHE": license_text("Apache-2.0"),
            "README.md": readme,
        }
    )
    assert seen(LicenseResolver(repo).for_root(tree)) == (
        "Apache-2.0 OR MIT",
        "LICENSE-APACHE, LICENSE-MIT, README.md",
    )


def test_a_statement_file_offering_either_license_gives_or(snapshot: SnapshotFactory) -> None:
    """A COPYING saying the project may be used under either license makes the files an OR."""
    statement = (
        "This project is dual-licensed under the ISC and MIT licenses.\n\n"
        "You may use this code under the terms of either license.\n"
    )
    repo, tree = snapshot(
        {
            "COPYING": statement,
            "LICENSE-MIT": license_text("MIT"),
            "LICENSE-ISC": license_text("ISC"),
        }
    )
    assert seen(LicenseResolver(repo).for_root(tree)) == (
        "ISC OR MIT",
        "LICENSE-ISC, LICENSE-MIT, COPYING",
    )


def test_one_file_offering_either_of_its_licenses_gives_or(snapshot: SnapshotFactory) -> None:
    """One LICENSE whose preamble offers either of the two texts that follow gives their OR."""
    text = (
        "You may use this software under the terms of either of the two licenses below,"
        " at your option.\n\n" + license_text("MIT") + "\n\n" + license_text("Apache-2.0")
    )
    repo, tree = snapshot({"LICENSE": text})
    info = LicenseResolver(repo).for_root(tree)
    assert seen(info) == ("MIT OR Apache-2.0", "LICENSE")


def test_metadata_decides_when_no_license_file_does(snapshot: SnapshotFactory) -> None:
    """No license file: pyproject.toml's [project] license is the answer, and the source."""
    pyproject = '[project]\nname = "fastroute"\nversion = "1.0"\nlicense = "BSD-3-Clause"\n'
    repo, tree = snapshot({"pyproject.toml": pyproject, "src/fastroute/a.py": CODE})
    info = LicenseResolver(repo).for_root(tree)
    assert seen(info) == ("BSD-3-Clause", "pyproject.toml")
    assert seen(file_license(repo, tree, "src/fastroute/a.py")) == (
        "BSD-3-Clause",
        "pyproject.toml",
    )
    assert info is not None
    assert info.confidence == 1.0


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("setup.cfg", "[metadata]\nname = fastroute\nlicense = MIT\n"),
        ("package.json", '{"name": "fastroute", "license": "MIT"}\n'),
        ("Cargo.toml", '[package]\nname = "fastroute"\nlicense = "MIT"\n'),
        ("Cargo.toml", '[workspace.package]\nlicense = "MIT"\n'),
    ],
)
def test_each_metadata_file_is_a_source(snapshot: SnapshotFactory, name: str, content: str) -> None:
    """setup.cfg, package.json and Cargo.toml (package or workspace) declare licenses too."""
    repo, tree = snapshot({name: content})
    assert seen(LicenseResolver(repo).for_root(tree)) == ("MIT", name)


def test_metadata_name_that_is_no_spdx_expression_is_ignored(snapshot: SnapshotFactory) -> None:
    """'Apache 2.0' or 'BSD' in metadata is a name, not an expression: no license."""
    pyproject = '[project]\nname = "x"\nlicense = {text = "BSD"}\n'
    repo, tree = snapshot(
        {"pyproject.toml": pyproject, "setup.cfg": "[metadata]\nlicense = Apache 2.0\n"}
    )
    assert LicenseResolver(repo).for_root(tree) is None


def test_metadata_refines_the_grant_of_a_gpl_text(snapshot: SnapshotFactory) -> None:
    """A GPL-3.0 text beside metadata saying GPL-3.0-or-later gives the metadata's answer."""
    pyproject = '[project]\nname = "x"\nlicense = "GPL-3.0-or-later"\n'
    repo, tree = snapshot({"COPYING": license_text("GPL-3.0-only"), "pyproject.toml": pyproject})
    assert seen(LicenseResolver(repo).for_root(tree)) == (
        "GPL-3.0-or-later",
        "COPYING, pyproject.toml",
    )


def test_metadata_naming_another_license_does_not_override_the_file(
    snapshot: SnapshotFactory,
) -> None:
    """A license file decides over metadata that names a different license."""
    pyproject = '[project]\nname = "x"\nlicense = "Apache-2.0"\n'
    repo, tree = snapshot({"LICENSE": license_text("MIT"), "pyproject.toml": pyproject})
    assert seen(LicenseResolver(repo).for_root(tree)) == ("MIT", "LICENSE")


def test_text_with_an_exception_is_left_to_the_metadata(snapshot: SnapshotFactory) -> None:
    """A license text followed by an exception is no license alone; metadata names it."""
    text = (
        license_text("Apache-2.0")
        + "\n\n--- Exceptions to the Apache 2.0 License ---\n\n"
        + (
            "As an exception, if, as a result of your compiling your source code, portions of this"
            " Software are embedded into an Object form of such source code, you may redistribute"
            " such embedded portions in such Object form without complying with the conditions.\n"
        )
    )
    repo, tree = snapshot({"LICENSE": text})
    assert LicenseResolver(repo).for_root(tree) is None
    pyproject = '[project]\nname = "x"\nlicense = "Apache-2.0 WITH LLVM-exception"\n'
    repo, tree = snapshot({"LICENSE": text, "pyproject.toml": pyproject})
    assert seen(LicenseResolver(repo).for_root(tree)) == (
        "Apache-2.0 WITH LLVM-exception",
        "pyproject.toml",
    )
