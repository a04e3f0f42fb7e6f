"""The `docs.*` message family (seed 002): asking the engine to regenerate documentation.

An agent may only ask. The engine (the mirror, the only writer) decides under its own
policy whether anything changed that the requested documents depend on, and if so writes
them as one commit on a ref of its own, `refs/repo-reader/docs`, never on an upstream
branch. Every read tool serves them with that ref as its revision.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec
from msgspec import Meta

from contracts.errors import ResponseEnvelope
from contracts.types import RepoRef

DOCS_REF: Final = "refs/repo-reader/docs"
"""The ref the engine commits generated documentation on; a revision every read tool takes."""

DocType = Literal["repo_map", "api_index", "license_report", "churn_report", "architecture"]
DOC_TYPES: Final[tuple[DocType, ...]] = (
    "repo_map",
    "api_index",
    "license_report",
    "churn_report",
    "architecture",
)
"""Every document the engine can generate, in the order it lists them."""
DOC_PATHS: Final[dict[DocType, str]] = {
    "repo_map": "repo-map.md",
    "api_index": "api-index.md",
    "license_report": "license-report.spdx",
    "churn_report": "churn-report.md",
    "architecture": "architecture.md",
}
"""Where each document is in the tree of `DOCS_REF` (a license report too large for one read
continues in `license-report.part-N.spdx` files beside it)."""

DocTypes = Annotated[tuple[DocType, ...], Meta(min_length=1, max_length=len(DOC_TYPES))]


class DocsRegenerateRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Ask the engine to bring documents of a registered repository up to date with its head."""

    repo: RepoRef
    """Seed 002's `repo_path`: a registered repository, never a path on disk."""
    doc_types: DocTypes | None = None
    """Which documents; absent means every type the server's config allows."""


DocumentStatus = Annotated[str, Meta(examples=["regenerated", "unchanged"])]
"""Read as text, so that an answer from a newer server with a status this client does not
know decodes."""


class DocumentState(msgspec.Struct, frozen=True, kw_only=True):
    """One requested document as it stands on the docs ref after the request."""

    doc_type: str
    path: str
    """Its path in the tree of the docs ref (read it with code.read at `DOCS_REF`)."""
    status: DocumentStatus
    """`regenerated` by this request, or `unchanged`: nothing it depends on changed."""
    generated_from: str
    """The repository commit it was generated from."""
    size: int = 0
    """Bytes."""


class DocsRegenerateResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """Seed 002's answer (`success`, `docs_regenerated`, `reason_skipped`) and where the
    documents are."""

    repo: str = ""
    commit: str = ""
    """The mirrored head the documents were checked against."""
    success: bool = False
    """The requested documents are up to date with `commit` on the docs ref."""
    docs_regenerated: tuple[str, ...] = ()
    reason_skipped: str | None = None
    """Why some or all requested documents were not written again (absent when all were)."""
    docs_ref: str = DOCS_REF
    docs_commit: str | None = None
    """The docs ref's commit after the request."""
    documents: tuple[DocumentState, ...] = ()
