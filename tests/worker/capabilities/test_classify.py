"""Tests of commit classification: conventional types first, then the documented heuristics."""

from __future__ import annotations

import pytest

from worker.capabilities.classify import Classification, classify


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("feat(api)!: drop v1 endpoints", Classification("feature", "conventional", "api", True)),
        ("fix: handle empty input", Classification("fix", "conventional")),
        ("docs: explain limits", Classification("docs", "conventional")),
        ("chore(deps): bump x", Classification("chore", "conventional", "deps")),
        ("ci: cache pip", Classification("ci", "conventional")),
        ("perf: avoid a copy", Classification("perf", "conventional")),
        ("refactor: split module\n\nBREAKING CHANGE: renamed", Classification(
            "refactor", "conventional", None, True)),
    ],
)  # fmt: skip
def test_conventional_commit_types_win(message: str, expected: Classification) -> None:
    """A Conventional Commits prefix decides, with its scope and breaking flag."""
    assert classify(message, 1, ["src/a.py"]) == expected


def test_merges_are_merges() -> None:
    """A commit with two parents is a merge whatever its message says."""
    assert classify("fix: something", 2, ["a.py"]).kind == "merge"


@pytest.mark.parametrize(
    ("message", "files", "kind"),
    [
        ('Revert "Add cache"', ["a.py"], "revert"),
        ("Tidy things\n\nThis reverts commit abc.", ["a.py"], "revert"),
        ("Update", ["docs/guide.md", "README.rst"], "docs"),
        ("Update", ["tests/test_a.py", "pkg/b_test.go"], "test"),
        ("Update", [".github/workflows/ci.yml"], "ci"),
        ("Update", ["pyproject.toml", "requirements.txt"], "build"),
        ("Write run-msbuild.bat to bindir", ["CMakeLists.txt"], "build"),
        ("Update", ["src/CMakeLists.txt", "requirements-dev.txt", "requirements.in"], "build"),
        ("Update", ["docs/CMakeLists.txt", "NOTES.txt"], "docs"),
        ("Fix crash when the list is empty", ["a.py", "docs/x.md"], "fix"),
        ("Add a missing check to fix a leak", ["a.py"], "fix"),
        ("Rename the parser module", ["a.py"], "refactor"),
        ("Add streaming support", ["a.py"], "feature"),
        ("Bump version to 1.2", ["a.py"], "chore"),
        ("wip: misc", ["a.py"], "other"),
        ("Update", [], "other"),
    ],
)
def test_heuristics_apply_in_documented_order(message: str, files: list[str], kind: str) -> None:
    """Without a known type: revert, then touched files, then words of the summary."""
    result = classify(message, 1, files)
    assert (result.kind, result.source) == (kind, "heuristic")
