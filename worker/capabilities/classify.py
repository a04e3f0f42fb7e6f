"""Commit classification: a Conventional Commits type when the message has one, else heuristics.

The first rule that applies wins:

1. `merge`      the commit has more than one parent.
2. conventional the summary starts with `type(scope)!: …`; the type is mapped
                (`feat` -> `feature`, `docs`/`doc` -> `docs`, `tests` -> `test`, …); an
                unknown type falls through to the rules below.
3. `revert`     the summary starts with "Revert" or the body says "This reverts commit".
4. by files     every file touched is documentation -> `docs`; a test -> `test`;
                CI configuration -> `ci`; build or dependency configuration -> `build`.
5. by words in the summary, in this order: fix words (fix, bug, crash, leak, regression,
   …) -> `fix`; refactor words (refactor, rename, clean up, simplify, move, …) ->
   `refactor`; doc words -> `docs`; test words -> `test`; feature words (add, implement,
   introduce, support, new, enable, allow) -> `feature`; chore words (bump, upgrade,
   release, version) -> `chore`.
6. `other`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

CONVENTIONAL: Final = re.compile(
    r"^(?P<type>[A-Za-z]+)(?:\((?P<scope>[^()\r\n]{0,100})\))?(?P<breaking>!)?:[ \t]*\S"
)
_TYPES: Final = {
    "feat": "feature", "feature": "feature",
    "fix": "fix", "bugfix": "fix", "hotfix": "fix",
    "docs": "docs", "doc": "docs",
    "refactor": "refactor", "perf": "perf", "style": "style",
    "test": "test", "tests": "test",
    "build": "build", "deps": "build", "ci": "ci",
    "chore": "chore", "revert": "revert",
}  # fmt: skip
_WORD_RULES: Final = (
    ("fix", re.compile(
        r"\b(fix(es|ed|ing)?|bugs?|crash(es|ed)?|leaks?|regressions?|oops|panics?|fault|"
        r"broken|incorrect|wrong|deadlock|race|overflow|null pointer|segfault)\b", re.I)),
    ("refactor", re.compile(
        r"\b(refactor\w*|renam(e|es|ed|ing)|restructur\w*|clean\s?ups?|cleans?\s+up|"
        r"simplif\w*|reorgani[sz]\w*|mov(e|es|ed|ing)|extract\w*|split\w*|tidy)\b", re.I)),
    ("docs", re.compile(r"\b(docs?|documentation|readme|comments?|typos?|docstrings?)\b", re.I)),
    ("test", re.compile(r"\b(tests?|testing|coverage|selftests?|kunit)\b", re.I)),
    ("feature", re.compile(
        r"\b(add(s|ed|ing)?|implement\w*|introduc\w*|support\w*|new|enabl(e|es|ed|ing)|"
        r"allow\w*)\b", re.I)),
    ("chore", re.compile(r"\b(bump\w*|upgrad\w*|releases?|version|changelog)\b", re.I)),
)  # fmt: skip
_DOC_DIRS: Final = frozenset({"doc", "docs", "documentation"})
_DOC_EXTENSIONS: Final = (".md", ".rst", ".txt", ".adoc", ".markdown")
_DOC_NAMES: Final = re.compile(r"^(readme|changelog|changes|news|authors|contributing)\b", re.I)
_TEST_DIRS: Final = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs"})
_TEST_NAMES: Final = re.compile(
    r"(^test_.*\.py$|_test\.(py|go|c|cc|cpp|rs)$|\.(test|spec)\.[jt]sx?$|Test\.java$)"
)
_CI_PATHS: Final = re.compile(
    r"^(\.github/workflows/|\.circleci/|\.ci/|\.gitlab-ci\.yml$|\.travis\.yml$|"
    r"azure-pipelines\.yml$|Jenkinsfile$|\.buildkite/|appveyor\.yml$)"
)
_BUILD_NAMES: Final = frozenset(
    {"makefile", "cmakelists.txt", "setup.py", "setup.cfg", "pyproject.toml", "package.json",
     "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "cargo.toml", "cargo.lock", "go.mod",
     "go.sum", "pom.xml", "build.gradle", "build.gradle.kts", "dockerfile", "containerfile",
     "meson.build", "configure.ac", "kbuild", "requirements.txt", "poetry.lock", "uv.lock",
     "gemfile", "gemfile.lock", "tox.ini", "noxfile.py"}
)  # fmt: skip


_REQUIREMENTS: Final = re.compile(r"^requirements[-_.\w]*\.(txt|in)$")
"""pip's requirement files as projects name them: requirements-dev.txt, requirements.in."""


@dataclass(frozen=True, slots=True)
class Classification:
    """What kind of change a commit is, and which rule said so."""

    kind: str
    source: str
    """`merge`, `conventional` or `heuristic`."""
    scope: str | None = None
    breaking: bool = False


def classify(message: str, parents: int, files: Sequence[str]) -> Classification:
    """The classification of a commit from its message, parent count and touched paths."""
    if parents > 1:
        return Classification("merge", "merge")
    summary = message.split("\n", 1)[0].strip()
    conventional = CONVENTIONAL.match(summary)
    if conventional is not None:
        kind = _TYPES.get(conventional.group("type").lower())
        if kind is not None:
            breaking = bool(conventional.group("breaking")) or "BREAKING CHANGE" in message
            return Classification(kind, "conventional", conventional.group("scope"), breaking)
    if summary.lower().startswith("revert") or "This reverts commit" in message:
        return Classification("revert", "heuristic")
    by_files = _by_files(files)
    if by_files is not None:
        return Classification(by_files, "heuristic")
    for kind, words in _WORD_RULES:
        if words.search(summary):
            return Classification(kind, "heuristic")
    return Classification("other", "heuristic")


def _by_files(files: Sequence[str]) -> str | None:
    if not files:
        return None
    for kind, rule in (("docs", _is_doc), ("test", _is_test), ("ci", _is_ci), ("build", _is_build)):
        if all(rule(path) for path in files):
            return kind
    return None


def _is_doc(path: str) -> bool:
    segments = path.split("/")
    name = segments[-1]
    return bool(_DOC_DIRS.intersection(s.lower() for s in segments[:-1])) or (
        # CMakeLists.txt and requirements.txt end like notes but configure the build.
        (name.lower().endswith(_DOC_EXTENSIONS) or bool(_DOC_NAMES.match(name)))
        and not _is_build(path)
    )


def _is_test(path: str) -> bool:
    segments = path.split("/")
    return bool(_TEST_DIRS.intersection(s.lower() for s in segments[:-1])) or bool(
        _TEST_NAMES.search(segments[-1])
    )


def _is_ci(path: str) -> bool:
    return bool(_CI_PATHS.match(path))


def _is_build(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return (
        name in _BUILD_NAMES
        or name.endswith((".cmake", ".mk", ".gradle"))
        or bool(_REQUIREMENTS.match(name))
    )
