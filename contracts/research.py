"""The `research` message family (seeds 000/001): a RepoReaderRequest in, response batches out.

A request states intent to research, never a file to fetch. Every optional limit
left out takes the server's conservative default; a value above the server's
ceiling is refused (`LIMIT_EXCEEDED`), never clamped.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from contracts.errors import ResponseEnvelope
from contracts.types import Extension, PositiveInt, RepoId, RepoRef, Revision, Sha, SpdxId


class RepoConstraints(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which repositories are in scope."""

    allowlist: tuple[RepoRef, ...] | None = None
    """Repositories to search; absent means every mirrored repository."""
    denylist: tuple[RepoRef, ...] = ()
    """Repositories removed from the scope."""
    max_repos: PositiveInt | None = None
    """More repositories in scope than this is `REQUEST_TOO_BROAD`."""
    revisions: dict[RepoRef, Revision] = {}
    """Extension: pin a repository to a commit sha, tag or branch (default: its default branch)."""


class FileConstraints(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which files may be excerpted, and how much of them."""

    allowed_extensions: tuple[Extension, ...] | None = None
    max_excerpt_chars: PositiveInt | None = None
    max_excerpts_per_repo: PositiveInt | None = None


class LicenseConstraints(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which licenses the excerpts may carry."""

    allowed_licenses: tuple[SpdxId, ...] | None = None
    """Only sources whose license these ids alone can honour (OR: any choice, AND: all)."""
    require_license: bool = True
    """A repository in scope without any detectable license fails the whole request."""
    compatible_with: SpdxId | None = None
    """Extension: only sources whose license may be reused in a work under this license."""


class ResultLimits(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Bounds on the whole answer."""

    max_total_excerpts: PositiveInt | None = None


class RepoReaderRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A constrained research request: a natural-language query plus its bounds."""

    query: Annotated[str, Meta(min_length=1, description="What is being researched.")]
    repo_constraints: RepoConstraints = RepoConstraints()
    file_constraints: FileConstraints = FileConstraints()
    license_constraints: LicenseConstraints = LicenseConstraints()
    result_limits: ResultLimits = ResultLimits()


class ResearchArtifact(msgspec.Struct, frozen=True, kw_only=True):
    """One bounded, attributable excerpt: the text at `excerpt_span` of `path` at `commit`."""

    excerpt: str
    repo: RepoId
    commit: Sha
    path: str
    license: str
    """An SPDX license expression."""
    excerpt_span: Annotated[str, Meta(pattern=r"^L[0-9]+-L[0-9]+$")]
    score: float
    blob: Sha
    language: str | None = None
    symbol: str | None = None
    """The definition the excerpt belongs to, when one was recognised."""
    truncated: bool = False
    """The excerpt stops before the end of the chunk it was cut from."""
    encoding: str = "utf-8"
    """How the blob's bytes were decoded: `utf-8`, or `latin-1` for text that is not UTF-8."""
    license_source: str
    """`spdx-header`, or the path(s) of the license and metadata files the license was read
    from."""
    license_confidence: float | None = None
    """0..1: how sure the license detection is (1.0 for a declaration: an SPDX tag or package
    metadata); None when no license was found."""
    swhid: str
    """A Software Heritage id with origin, anchor, path and lines qualifiers."""
    signals: Annotated[tuple[str, ...], Meta(max_length=8)] = ()
    """Why the file was chosen, in a fixed order: `terms` (its text or path shares the
    query's terms), `entity` (the excerpt defines a name the query mentions), `path` (the
    query names the file or its module), `graph` (a neighbour of linked code), `history`
    (commits that touched it match the query). Clients ignore words they do not know."""


class ResolvedRepo(msgspec.Struct, frozen=True, kw_only=True):
    """The commit a repository in scope resolved to; pin it to repeat the answer."""

    repo: RepoId
    commit: Sha
    ref: str
    """What was resolved: the revision asked for, or the default branch's ref name."""
    license: str | None = None
    """The repository's root license, when one was detected."""


MAX_OMITTED_REPOS = 100
"""At most this many repositories are listed as left out (the first by name)."""


class OmittedRepo(msgspec.Struct, frozen=True, kw_only=True):
    """A repository in scope that the answer leaves out, and why."""

    repo: RepoId
    code: str
    """Why, as an error code: `LICENSE_UNAVAILABLE` (no license detected, and the request
    requires one)."""


class RepoReaderResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """One message of an answer; a large answer is several, sent in order on the reply subject.

    Batch 0 carries `resolved` and `omitted`; the message with `last` set ends the answer.
    An error answer is a single message with `errors` set and no artifacts.
    """

    artifacts: tuple[ResearchArtifact, ...] = ()
    resolved: tuple[ResolvedRepo, ...] = ()
    omitted: Annotated[
        tuple[OmittedRepo, ...],
        Meta(
            max_length=MAX_OMITTED_REPOS,
            description="Repositories in scope left out of the answer, and why: a request "
            "over every repository skips those without a license it requires.",
        ),
    ] = ()
