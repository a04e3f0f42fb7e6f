"""The documents the engine generates: where each goes, what it is made from, what makes it.

Each document depends on one scope of the head, and its inputs' fingerprint is taken over
that scope only, so a change elsewhere leaves it alone:

- `tree`: the whole tree (its root tree id): the map lists every file, and any file may
  carry an SPDX header the license report reads.
- `sources`: the path and blob id of every file in a language the entity graph parses:
  the API index and the import graph read nothing else.
- `history`: the head commit itself, as the churn windows end at its committer time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

import pygit2

from contracts.docs import DOC_PATHS, DocType
from worker.config import Config
from worker.docs.api_index import render_api_index
from worker.docs.architecture import render_architecture
from worker.docs.churn_report import render_churn_report
from worker.docs.license_report import render_license_report
from worker.docs.repo_map import render_repo_map
from worker.docs.source import DocSource, tree_files
from worker.index.analysis.grammars import grammar_of

GENERATOR_VERSION: Final = 1
"""Part of every fingerprint: a generator that writes differently regenerates everything."""

Scope = Literal["tree", "sources", "history"]


@dataclass(frozen=True, slots=True)
class DocKind:
    """One document type."""

    doc_type: DocType
    path: str
    """Its main file in the docs tree (a license report may add part files beside it)."""
    scope: Scope
    render: Callable[[DocSource], dict[str, str]]
    settings: Callable[[Config], str]
    """The settings its output depends on, part of its fingerprint."""


def _one(path: str, render: Callable[[DocSource], str]) -> Callable[[DocSource], dict[str, str]]:
    return lambda source: {path: render(source)}


def _bounds(config: Config) -> str:
    return f"chars={config.docs.max_document_chars};blob={config.server.max_blob_bytes}"


KINDS: Final[dict[DocType, DocKind]] = {
    "repo_map": DocKind(
        "repo_map",
        DOC_PATHS["repo_map"],
        "tree",
        _one(DOC_PATHS["repo_map"], render_repo_map),
        _bounds,
    ),
    "api_index": DocKind(
        "api_index",
        DOC_PATHS["api_index"],
        "sources",
        _one(DOC_PATHS["api_index"], render_api_index),
        _bounds,
    ),
    "license_report": DocKind(
        "license_report",
        DOC_PATHS["license_report"],
        "tree",
        render_license_report,
        lambda config: f"blob={config.server.max_blob_bytes}",
    ),
    "churn_report": DocKind(
        "churn_report",
        DOC_PATHS["churn_report"],
        "history",
        _one(DOC_PATHS["churn_report"], render_churn_report),
        lambda config: (
            f"{_bounds(config)};windows={','.join(config.docs.churn_windows)};"
            f"hot={config.docs.churn_hot_files};commits={config.tools.churn_max_commits}"
        ),
    ),
    "architecture": DocKind(
        "architecture",
        DOC_PATHS["architecture"],
        "sources",
        _one(DOC_PATHS["architecture"], render_architecture),
        lambda config: f"{_bounds(config)};modules={config.docs.architecture_max_modules}",
    ),
}


def scope_key(repo: pygit2.Repository, commit: str, scope: Scope) -> str:
    """What a scope of `commit` is, as one string: equal exactly when the scope is unchanged."""
    match scope:
        case "history":
            return commit
        case "tree":
            return str(repo[commit].peel(pygit2.Tree).id)
        case "sources":
            digest = hashlib.sha256()
            for entry in tree_files(repo, commit):
                if grammar_of(entry.path) is not None:
                    digest.update(f"{entry.path}\0{entry.blob}\n".encode())
            return digest.hexdigest()


def fingerprints(
    repo: pygit2.Repository, commit: str, config: Config, doc_types: tuple[DocType, ...]
) -> dict[DocType, str]:
    """The inputs' fingerprint of each document type at `commit`."""
    keys: dict[Scope, str] = {}
    found: dict[DocType, str] = {}
    for doc_type in doc_types:
        kind = KINDS[doc_type]
        if kind.scope not in keys:
            keys[kind.scope] = scope_key(repo, commit, kind.scope)
        text = f"{doc_type}\n{GENERATOR_VERSION}\n{kind.settings(config)}\n{keys[kind.scope]}"
        found[doc_type] = hashlib.sha256(text.encode()).hexdigest()
    return found
