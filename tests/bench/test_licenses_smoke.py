"""bench.licenses runs on cases built here (no network, no ScanCode) and its manifest is whole."""

from __future__ import annotations

import json

from bench.licenses import MANIFEST, Case, _transform, disagreements, measure, table, verdict
from tests.worker.licenses.conftest import license_text

CATEGORIES = {
    "single LICENSE",
    "LICENSE.md/.rst/.txt, COPYING, LICENCE",
    "changed copyright or project name",
    "composite (project + bundled)",
    "dual licensing (OR)",
    "COPYING + COPYING.LESSER",
    "license with exception",
    "SPDX header in a file",
    "package metadata only",
    "garbage or partial (none)",
}


def _local_cases() -> list[Case]:
    mit, apache = license_text("MIT").encode(), license_text("Apache-2.0").encode()
    pyproject = b'[project]\nname = "x"\nlicense = "MIT OR Apache-2.0"\n'
    return [
        Case(id="mit", category="single", files={"LICENSE": mit}, expected="MIT", provenance="t"),
        Case(
            id="dual",
            category="dual",
            files={"LICENSE-MIT": mit, "LICENSE-APACHE": apache, "pyproject.toml": pyproject},
            expected="Apache-2.0 OR MIT",
            provenance="t",
        ),
        Case(
            id="cut",
            category="none",
            files={"LICENSE": _transform(apache, {"kind": "truncate"}, seed="cut")},
            expected=None,
            provenance="t",
        ),
        Case(
            id="header",
            category="header",
            files={"a.py": b"# SPDX-License-Identifier: GPL-2.0-or-later\n"},
            expected="GPL-2.0-or-later",
            provenance="t",
            target="a.py",
        ),
    ]


def test_the_bench_measures_local_cases_and_repo_reader_is_right() -> None:
    """One row per category and a total; repo-reader answers every local case correctly."""
    cases = _local_cases()
    results = measure(cases, scancode=None)
    assert set(results) == {"repo-reader", "askalono"}
    assert all(verdict(c.expected, results["repo-reader"][c.id].answer) == "correct" for c in cases)
    rendered = table(cases, results).splitlines()
    assert [line.split()[0] for line in rendered[2:6]] == ["single", "dual", "none", "header"]
    assert any("dual" in line for line in disagreements(cases, results))


def test_verdicts_compare_expressions_not_spellings() -> None:
    """OR operands in any order match; a GNU grant is not compared; another license is wrong."""
    assert verdict("MIT OR Apache-2.0", "Apache-2.0 OR MIT") == "correct"
    assert verdict("GPL-3.0-or-later", "GPL-3.0-only") == "correct"
    assert verdict("MIT", "Apache-2.0 AND MIT") == "wrong"
    assert verdict("MIT", None) == "none"
    assert verdict(None, "MIT") == "wrong"


def test_transforms_are_deterministic() -> None:
    """The same case rewrites its text the same way every time."""
    text = license_text("MIT").encode()
    assert _transform(text, {"kind": "shuffle"}, seed="a") == _transform(
        text, {"kind": "shuffle"}, seed="a"
    )
    renamed = _transform(text, {"kind": "rename", "project": "Permission"}, seed="a").decode()
    assert "Copyright (c) 2031 The Example Maintainers" in renamed
    assert "Examplar is hereby granted" in renamed


def test_the_manifest_has_200_cases_with_provenance_in_every_category() -> None:
    """At least 200 cases, each with an expectation's provenance and a pinned sdist."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    cases = manifest["cases"]
    assert len(cases) >= 200
    assert {case["category"] for case in cases} == CATEGORIES
    for case in cases:
        assert case["provenance"]
        assert len(manifest["sdists"][case["sdist"]]["sha256"]) == 64
