"""Tests of corpus preparation from local archives: reproducible commits, edits, reuse, .deb."""

from __future__ import annotations

import gzip
import io
import lzma
import tarfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pygit2
import pytest

from bench.corpora import BASE_REF, EDITED_REF, prepare, prepare_corpus
from bench.corpus_sources import CorpusError, sha256_of
from bench.corpus_specs import CorpusSpec, DebianSource, FileEdit, PypiSdist

README = b"Tiny project.\n"
MODULE = b"def answer():\n    return 42\n"
SCRIPT = b"#!/bin/sh\necho run\n"

EDITS = (
    FileEdit("pkg/mod.py", "append", "\n\ndef question():\n    return None\n"),
    FileEdit("README.txt", "delete"),
    FileEdit("pkg/new.py", "add", "NEW = True\n"),
)


def _tar_bytes(top: str = "tiny-1.0") -> bytes:
    """A tarball of the tiny tree: a file, an executable, a symlink, a hard link, a package."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:

        def add(name: str, data: bytes = b"", **fields: object) -> None:
            info = tarfile.TarInfo(f"{top}/{name}" if name else top)
            info.size = len(data)
            info.mtime = 1_600_000_000
            for key, value in fields.items():
                setattr(info, key, value)
            tar.addfile(info, io.BytesIO(data) if data else None)

        add("", type=tarfile.DIRTYPE, mode=0o755)
        add("README.txt", README, mode=0o644)
        add("bin/run.sh", SCRIPT, mode=0o755)
        add("link", type=tarfile.SYMTYPE, linkname="README.txt")
        add("hard", type=tarfile.LNKTYPE, linkname=f"{top}/README.txt")
        add("pkg", type=tarfile.DIRTYPE, mode=0o755)
        add("pkg/mod.py", MODULE, mode=0o644)
    return buffer.getvalue()


def _sdist_spec(downloads: Path, **changes: object) -> CorpusSpec:
    downloads.mkdir(parents=True, exist_ok=True)
    archive = downloads / "tiny-1.0.tar.gz"
    # mtime=0 keeps the gzip bytes, hence the sha256 in the commit message, fixed.
    archive.write_bytes(gzip.compress(_tar_bytes(), mtime=0))
    source = PypiSdist("tiny", "1.0", archive.name, sha256_of(archive))
    spec = CorpusSpec(name="tiny", owner="pypi", source=source, edits=EDITS)
    return replace(spec, **changes)  # type: ignore[arg-type]


def _ar(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    out.write(b"!<arch>\n")
    for name, data in members:
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n"
        out.write(header.encode("ascii"))
        out.write(data + (b"\n" if len(data) % 2 else b""))
    return out.getvalue()


def _deb_spec(downloads: Path) -> CorpusSpec:
    downloads.mkdir(parents=True, exist_ok=True)
    inner = lzma.compress(_tar_bytes(top="tiny-source"))
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for directory in ("./", "./usr/", "./usr/src/"):
            info = tarfile.TarInfo(directory)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        info = tarfile.TarInfo("./usr/src/tiny-source.tar.xz")
        info.size = len(inner)
        tar.addfile(info, io.BytesIO(inner))
    source = DebianSource("tiny-source", "1.0-1", "", "usr/src/tiny-source.tar.xz")
    archive = downloads / source.filename
    members = [
        ("debian-binary", b"2.0\n"),
        ("control.tar.xz", b""),
        ("data.tar.xz", data.getvalue()),
    ]
    archive.write_bytes(_ar(members))
    return CorpusSpec(
        name="tiny", owner="debian", source=replace(source, sha256=sha256_of(archive))
    )


def test_commits_are_reproducible(tmp_path: Path) -> None:
    """The same archive gives the same commit ids in two work dirs, and the id git itself gives.

    The pinned id was computed independently with the git CLI (same files, author, date, message).
    """
    first = prepare_corpus(_sdist_spec(tmp_path / "a" / "downloads"), tmp_path / "a")
    second = prepare_corpus(_sdist_spec(tmp_path / "b" / "downloads"), tmp_path / "b")
    assert first.path != second.path
    assert (first.base_commit, first.edited_commit) == (second.base_commit, second.edited_commit)
    assert first.base_commit == "00a855cf2d7293ada90c618eaba3b320b35b1021"


def test_tree_keeps_modes_links_and_strips_the_top_directory(tmp_path: Path) -> None:
    """Executables, symlinks and hard links survive; the archive's top directory is gone."""
    corpus = prepare_corpus(_sdist_spec(tmp_path / "downloads"), tmp_path)
    repo = pygit2.Repository(str(corpus.path))
    assert repo.is_bare
    tree = repo.revparse_single(BASE_REF).peel(pygit2.Tree)
    assert sorted(str(entry.name) for entry in tree) == ["README.txt", "bin", "hard", "link", "pkg"]
    assert tree["bin/run.sh"].filemode == pygit2.enums.FileMode.BLOB_EXECUTABLE
    assert tree["README.txt"].filemode == pygit2.enums.FileMode.BLOB
    assert tree["link"].filemode == pygit2.enums.FileMode.LINK
    assert repo[tree["link"].id].read_raw() == b"README.txt"
    assert tree["hard"].id == tree["README.txt"].id
    assert corpus.files == 5
    assert corpus.source_bytes == len(README) + len(SCRIPT) + len(MODULE)
    commit = repo.revparse_single(BASE_REF).peel(pygit2.Commit)
    assert commit.author.time == commit.committer.time == 1_704_067_200
    assert commit.author.name == "repo-reader bench"


def test_edited_commit_appends_deletes_and_adds(tmp_path: Path) -> None:
    """The second commit sits on the first and applies exactly the spec's edits."""
    corpus = prepare_corpus(_sdist_spec(tmp_path / "downloads"), tmp_path)
    repo = pygit2.Repository(str(corpus.path))
    edited = repo.revparse_single(EDITED_REF).peel(pygit2.Commit)
    assert str(edited.id) == corpus.edited_commit
    assert [str(parent) for parent in edited.parent_ids] == [corpus.base_commit]
    diff = repo.diff(corpus.base_commit, corpus.edited_commit)
    changes = sorted((delta.status_char(), delta.new_file.path) for delta in diff.deltas)
    assert changes == [("A", "pkg/new.py"), ("D", "README.txt"), ("M", "pkg/mod.py")]
    assert repo[edited.tree["pkg/mod.py"].id].read_raw() == MODULE + EDITS[0].text.encode()


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (FileEdit("pkg/mod.py", "add", "x"), "already exists"),
        (FileEdit("pkg/none.py", "delete"), "does not exist"),
        (FileEdit("pkg/none.py", "append", "x"), "does not exist"),
    ],
)
def test_impossible_edits_fail(tmp_path: Path, edit: FileEdit, fragment: str) -> None:
    """Adding a present file or changing an absent one is a CorpusError, and nothing is left."""
    spec = _sdist_spec(tmp_path / "downloads", edits=(edit,))
    with pytest.raises(CorpusError, match=fragment):
        prepare_corpus(spec, tmp_path)
    assert list((tmp_path / "repos" / "pypi").iterdir()) == []


def test_prepared_corpus_is_reused_until_it_changes(tmp_path: Path) -> None:
    """A verified repository is reused; one whose refs moved is rebuilt."""
    spec = _sdist_spec(tmp_path / "downloads")
    built = prepare_corpus(spec, tmp_path)
    reused = prepare_corpus(spec, tmp_path)
    assert not built.reused
    assert reused.reused
    assert (reused.base_commit, reused.files) == (built.base_commit, built.files)
    repo = pygit2.Repository(str(built.path))
    assert built.edited_commit is not None
    repo.references[BASE_REF].set_target(built.edited_commit)
    rebuilt = prepare_corpus(spec, tmp_path)
    assert not rebuilt.reused
    assert rebuilt.base_commit == built.base_commit


def test_concurrent_runs_build_a_corpus_once(tmp_path: Path) -> None:
    """Two runs preparing the same corpus at once: one builds, the other reuses its result."""
    spec = _sdist_spec(tmp_path / "downloads")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: prepare_corpus(spec, tmp_path), range(2)))
    assert sorted(result.reused for result in results) == [False, True]
    assert results[0].base_commit == results[1].base_commit


def test_commit_that_does_not_match_its_pin_fails(tmp_path: Path) -> None:
    """A pinned commit id the archive does not reproduce is an error, not a warning."""
    spec = _sdist_spec(tmp_path / "downloads", base_commit="0" * 40)
    with pytest.raises(CorpusError, match="does not reproduce the pinned"):
        prepare_corpus(spec, tmp_path)


def test_debian_package_gives_the_same_tree_as_the_sdist(tmp_path: Path) -> None:
    """The tarball inside a .deb's data.tar.xz is found and committed like an sdist."""
    from_deb = prepare_corpus(_deb_spec(tmp_path / "deb" / "downloads"), tmp_path / "deb")
    from_sdist = prepare_corpus(_sdist_spec(tmp_path / "sdist" / "downloads"), tmp_path / "sdist")
    assert from_deb.path == tmp_path / "deb" / "repos" / "debian" / "tiny.git"
    deb_tree = pygit2.Repository(str(from_deb.path)).revparse_single(BASE_REF).peel(pygit2.Tree)
    sdist_repo = pygit2.Repository(str(from_sdist.path))
    assert deb_tree.id == sdist_repo.revparse_single(BASE_REF).peel(pygit2.Tree).id
    assert from_deb.edited_commit is None


def test_archive_with_files_outside_its_top_directory_fails(tmp_path: Path) -> None:
    """Every member must sit under one top directory, so stripping it loses nothing."""
    downloads = tmp_path / "downloads"
    spec = _sdist_spec(downloads)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in ("tiny-1.0/a.txt", "other/b.txt"):
            tar.addfile(tarfile.TarInfo(name), io.BytesIO(b""))
    archive = downloads / spec.source.filename
    archive.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    source = replace(spec.source, sha256=sha256_of(archive))
    with pytest.raises(CorpusError, match="outside the top directory"):
        prepare_corpus(replace(spec, source=source), tmp_path)


def test_unknown_corpus_names_are_rejected(tmp_path: Path) -> None:
    """Asking for a corpus that is not pinned names the known ones."""
    with pytest.raises(CorpusError, match="unknown corpora \\['nope'\\]"):
        prepare(["nope"], tmp_path)
