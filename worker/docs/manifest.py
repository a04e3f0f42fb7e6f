"""`refs/repo-reader/docs` as readers see it: its commit, and the manifest in its message.

Each commit the engine writes (`worker.docs.writer`, the only writer) holds every current
document, its manifest in the commit message: for each document, its files, the repository
commit it was generated from and its inputs' fingerprint. Reading needs nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import msgspec
import pygit2

from contracts.docs import DOCS_REF

MANIFEST_FORMAT: Final = 1


class DocumentRecord(msgspec.Struct, frozen=True, kw_only=True):
    """What the manifest says about one document."""

    paths: tuple[str, ...]
    generated_from: str
    inputs: str


class DocsManifest(msgspec.Struct, frozen=True, kw_only=True):
    """Every document on the docs ref, and the head it was last checked against."""

    format: int = MANIFEST_FORMAT
    repo: str
    head: str
    documents: dict[str, DocumentRecord] = {}


@dataclass(frozen=True, slots=True)
class DocsState:
    """The docs ref's commit and its manifest."""

    commit: str
    manifest: DocsManifest
    tree: pygit2.Tree


_manifest_decoder = msgspec.json.Decoder(DocsManifest)


def read_docs(repo: pygit2.Repository) -> DocsState | None:
    """The docs ref's state; None when the engine never wrote it (or wrote no manifest this
    version reads, which counts as every document missing)."""
    try:
        ref = repo.references.get(DOCS_REF)
    except (ValueError, pygit2.InvalidSpecError):
        return None
    if ref is None:
        return None
    commit = repo[ref.target].peel(pygit2.Commit)
    _, _, body = commit.message.partition("\n\n")
    try:
        manifest = _manifest_decoder.decode(body.strip().encode())
    except msgspec.DecodeError:
        return None
    if manifest.format != MANIFEST_FORMAT:
        return None
    return DocsState(commit=str(commit.id), manifest=manifest, tree=commit.tree)
