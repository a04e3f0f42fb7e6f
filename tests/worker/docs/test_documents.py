"""What each document says about the shop, and the license report as SPDX tools read it."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pygit2
import pytest
from spdx_tools.spdx.parser.parse_anything import parse_file
from spdx_tools.spdx.validation.document_validator import validate_full_spdx_document

from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gitrepos import MIT_LICENSE, commit
from tests.worker.docs.conftest import REPO, SHOP_FILES
from worker.docs.api_index import render_api_index
from worker.docs.architecture import render_architecture
from worker.docs.churn_report import render_churn_report
from worker.docs.license_report import render_license_report
from worker.docs.repo_map import render_repo_map
from worker.docs.source import DocSource


def source_of(cache: MirroredCache, repo: str = REPO) -> DocSource:
    state = cache.mirror.layout.read_state(repo)
    assert state is not None
    return DocSource(
        cache_dir=cache.root,
        name=repo,
        url=state.url,
        repo=pygit2.Repository(str(cache.mirror.layout.repo_dir(repo))),
        commit=state.head,
        config=cache.config,
    )


def test_the_map_lists_files_with_their_entities(shop: tuple[Path, MirroredCache]) -> None:
    """Directories with counts, then files with top entities' signatures and docstrings."""
    text = render_repo_map(source_of(shop[1]))
    assert text.startswith("<!-- SPDX-License-Identifier: MIT -->\n# Repository map: acme/shop")
    assert "| `shop` | 4 | 1 | 5 |" in text
    assert "- `class Order` (L6) — A customer order." in text
    assert "- `def total(self, discount: float = 0.0) -> float` (L12)" in text


def test_the_map_counts_the_lines_git_counts(shop: tuple[Path, MirroredCache]) -> None:
    """A file ending in a line break has as many lines as line breaks; none is added after."""
    text = render_repo_map(source_of(shop[1]))
    lines = SHOP_FILES["shop/prices.py"].count("\n")
    assert f"- `shop/prices.py` (python, {lines} lines" in text


def test_the_map_shows_a_latin1_path_with_its_entities(
    make_source: SourceFactory, cache: MirroredCache
) -> None:
    """A path that is not UTF-8 is named as its U+FFFD text, its definitions read from it."""
    source, _ = make_source(
        "latin", {"LICENSE": MIT_LICENSE, os.fsdecode(b"caf\xe9.py"): "def brew():\n    pass\n"}
    )
    cache.add("acme/latin", source)
    text = render_repo_map(source_of(cache, "acme/latin"))
    assert "- `caf\ufffd.py` (python, 2 lines)\n  - `def brew()` (L1)" in text


def test_the_api_index_lists_public_entities_only(shop: tuple[Path, MirroredCache]) -> None:
    """Public names with signature and first docstring line; no private names, modules or
    tests."""
    text = render_api_index(source_of(shop[1]))
    assert "- **sum_prices** `def sum_prices(items)` (L5) — Add the prices of items." in text
    assert "**Order.total**" in text
    for hidden in ("_round", "helper", "test_total", "Order.__init__"):
        assert hidden not in text


def test_the_architecture_note_draws_the_import_graph(shop: tuple[Path, MirroredCache]) -> None:
    """Files importing one another, as a Mermaid flowchart and as lists; tests left out."""
    text = render_architecture(source_of(shop[1]))
    assert "```mermaid\nflowchart LR" in text
    ids = dict(re.findall(r'    (m\d+)\["([^"]+)"\]', text))
    by_path = {path: node for node, path in ids.items()}
    assert f"{by_path['shop/orders.py']} -->|1| {by_path['shop/prices.py']}" in text
    assert "tests/test_orders.py" not in text
    assert "- imported by: `shop/__init__.py` (1)" in text


def test_the_churn_report_names_hot_entities(shop: tuple[Path, MirroredCache]) -> None:
    """Commits that change a function's lines count for it, window by window."""
    source_path, cache = shop
    upstream = pygit2.Repository(str(source_path))
    for n in range(2):
        commit(
            upstream,
            {
                "shop/prices.py": (
                    "# SPDX-License-Identifier: Apache-2.0\n"
                    '"""Prices."""\n\n\n'
                    "def sum_prices(items):\n"
                    '    """Add the prices of items."""\n'
                    f"    return sum(item.price for item in items) + {n}\n"
                )
            },
        )
    cache.mirror.sync([REPO])
    text = render_churn_report(source_of(cache))
    section = text.split("## 7d", 1)[1].split("## 1m", 1)[0]
    assert "3 commits" in section
    assert "| `shop/prices.py` | 3 |" in section
    assert "| `sum_prices` | `shop/prices.py` | 3 |" in section


# spdx-tools' tag-value parser (PLY) writes its grammar's debug file the first time it is
# built in a fresh environment and never closes it: the warning is theirs, not ours.
ply_debug_file = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def validated(path: Path) -> object:
    document = parse_file(str(path))
    problems = [m.validation_message for m in validate_full_spdx_document(document)]
    assert problems == []
    return document


@ply_debug_file
def test_the_license_report_is_a_valid_spdx_document(
    shop: tuple[Path, MirroredCache], tmp_path: Path
) -> None:
    """SPDX 2.3 tag-value that the SPDX tools parse and validate: the package's declared
    license, the license file, and the one file whose header differs, with its checksum."""
    files = render_license_report(source_of(shop[1]))
    assert list(files) == ["license-report.spdx"]
    path = tmp_path / "report.spdx"
    path.write_text(files["license-report.spdx"])
    document = validated(path)
    (package,) = document.packages  # type: ignore[attr-defined]
    assert str(package.license_declared) == "MIT"
    listed = {f.name: f for f in document.files}  # type: ignore[attr-defined]
    assert set(listed) == {"./LICENSE", "./shop/prices.py"}
    prices = listed["./shop/prices.py"]
    assert str(prices.license_concluded) == "Apache-2.0"
    data = pygit2.Repository(str(shop[1].mirror.layout.repo_dir(REPO)))
    head = data.revparse_single("HEAD").peel(pygit2.Commit)
    blob = data[head.tree["shop/prices.py"].id]
    assert prices.checksums[0].value == hashlib.sha1(blob.data, usedforsecurity=False).hexdigest()


@pytest.mark.parametrize("max_blob_bytes", [8_000])
@ply_debug_file
def test_a_large_license_report_continues_in_parts(
    make_source: object, cache: MirroredCache, tmp_path: Path, max_blob_bytes: int
) -> None:
    """Past `max_blob_bytes`, file entries continue in part documents, each valid, each named
    with its SHA1 by the first."""
    files = {"LICENSE": (Path(__file__).parents[1] / "licenses/texts/MIT.txt").read_text()}
    for n in range(60):
        files[f"pkg/m{n:03}.py"] = f"# SPDX-License-Identifier: Apache-2.0\nX = {n}\n"
    for n in range(61):
        files[f"pkg/z{n:03}.py"] = f"# SPDX-License-Identifier: BSD-2-Clause\nX = {n}\n"
    source, _ = make_source("big", files)  # type: ignore[operator]
    cache.add(REPO, source)
    cache.set_config(f"[server]\nmax_blob_bytes = {max_blob_bytes}\n")
    rendered = render_license_report(source_of(cache))
    assert len(rendered) > 2
    main = rendered.pop("license-report.spdx")
    for name, text in rendered.items():
        assert len(text.encode()) <= max_blob_bytes
        sha1 = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
        assert f"SHA1: {sha1}" in main
        (tmp_path / name).write_text(text)
        validated(tmp_path / name)
    (tmp_path / "main.spdx").write_text(main)
    validated(tmp_path / "main.spdx")
    entries = main.count("FileName:") + sum(t.count("FileName:") for t in rendered.values())
    assert entries == 61  # the license file and the 60 files that are not the majority's
