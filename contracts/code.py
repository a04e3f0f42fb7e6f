"""The `code.*` message family (seed 004): search, bounded read and directory listing at a revision.

Paths are paths inside a repository's tree at the resolved commit, '/'-separated and
relative to its root; they are checked against the git tree and never joined onto a
disk path. Every piece of code returned carries its license and where that came from.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from contracts.errors import ResponseEnvelope
from contracts.types import Extension, PositiveInt, RepoPath, RepoRef, Revision

LineSpan = Annotated[
    str, Meta(pattern=r"^L[0-9]+-L[0-9]+$", description="Lines as L<start>-L<end>.")
]
PathGlob = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=1000,
        description=(
            "A directory or file inside the tree (`src/app`), or a glob over paths: "
            "`*` and `?` stay within one path segment, `**` spans segments (`src/**/*.py`), "
            "`[...]` is a class and `{a,b}` either alternative (`*.{c,h}`). A glob without "
            "`/` matches file names."
        ),
    ),
]
Language = Annotated[
    str,
    Meta(
        pattern=r"^[A-Za-z0-9_+#-]{1,40}$",
        description="A language name such as `python`, `c` or `typescript` (case-insensitive).",
    ),
]


class CodeSearchRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Find lines matching a literal or a regular expression in one repository at one revision."""

    repo: RepoRef
    query: Annotated[str, Meta(min_length=1, description="The text, or RE2 pattern, to find.")]
    revision: Revision | None = None
    """A commit sha, tag or branch; absent means the mirrored default branch head."""
    regex: bool = False
    """Read `query` as an RE2 regular expression (linear time) instead of a literal."""
    ignore_case: bool = False
    path: PathGlob | None = None
    language: Language | None = None
    extensions: Annotated[tuple[Extension, ...], Meta(max_length=50)] | None = None
    max_results: PositiveInt | None = None
    """How many hits to return (server default 20, ceiling from the server's config)."""
    context_lines: Annotated[int, Meta(ge=3, le=5)] = 3
    """Lines of context around each hit, the matched line included."""
    require_license: bool = True
    """A repository without a detectable license is `LICENSE_UNAVAILABLE` unless this is false."""


class CodeSearchHit(msgspec.Struct, frozen=True, kw_only=True):
    """One matching line: where it is, its text and context, its score and license."""

    path: str
    line_number: int
    column: int
    """1-based character column of the match in the full line."""
    match_length: int
    """Length of the match in characters."""
    matched_line: str
    """The line, or a window of it around the match when the line is longer than the bound."""
    line_offset: int = 0
    """Characters of the line left out before `matched_line` (non-zero only when cut)."""
    line_truncated: bool = False
    context: str
    """Exactly lines `context_span` of the file: a few lines around the hit."""
    context_span: LineSpan | None = None
    """None when even the matched line alone is longer than the context bound."""
    score: float
    blob: str
    language: str | None = None
    encoding: str = "utf-8"
    license: str
    """An SPDX license expression, or `NOASSERTION` when none was required nor found."""
    license_source: str
    """`spdx-header`, the path(s) of the license and metadata files, or `none`."""
    license_confidence: float | None = None
    """0..1: how sure the license detection is (1.0 for a declaration: an SPDX tag or package
    metadata); None when no license was found."""


class CodeSearchResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """One message of a search answer; batch 0 carries everything but the later hits."""

    repo: str = ""
    commit: str = ""
    ref: str = ""
    hits: tuple[CodeSearchHit, ...] = ()
    total_count: int = 0
    """Matching lines found in the files scanned (a lower bound unless `exhaustive`)."""
    candidate_files: int = 0
    """Files the index could not rule out (after path, language and extension filters). Only
    text files up to the server's `max_blob_bytes` are indexed, so only they are searched:
    larger and binary files never match."""
    files_scanned: int = 0
    exhaustive: bool = True
    """Every candidate file was scanned (ranking stops early once no other file can rank
    higher); it says nothing of the files too large or binary to be indexed."""
    truncated: bool = False
    """There are more matching lines than the hits returned."""
    index: str = ""
    """How candidates were chosen: `trigram` (stored index), `on-demand` (built for this
    revision) or `scan` (the query requires no trigram, so every file was scanned)."""


class CodeReadRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Read a bounded line range of one file inside the repository's tree."""

    repo: RepoRef
    path: Annotated[RepoPath, Meta(min_length=1)]
    revision: Revision | None = None
    start_line: PositiveInt | None = None
    """First line to return (default 1)."""
    end_line: PositiveInt | None = None
    """Last line to return, inclusive (default: as many as the server's default allows)."""
    require_license: bool = True


class CodeReadResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """A bounded excerpt of a file, or only its metadata (binary, symlink, submodule, too large)."""

    repo: str = ""
    commit: str = ""
    ref: str = ""
    path: str = ""
    kind: str = "file"
    """`file`, `symlink` or `submodule`."""
    mode: int = 0
    blob: str = ""
    """The blob id (a commit id for a submodule)."""
    size: int = 0
    """Size of the blob in bytes."""
    encoding: str | None = None
    """`utf-8` or `latin-1` for text; None when no content is returned."""
    binary: bool = False
    content: str | None = None
    """Exactly lines `span` of the file, or None (metadata only)."""
    span: LineSpan | None = None
    total_lines: int = 0
    truncated: bool = False
    """The excerpt stops before the requested end (the bound was reached)."""
    partial_line: bool = False
    """The excerpt is the start of one line longer than the bound."""
    next_start_line: int | None = None
    """The first line after the excerpt, where to continue; None once the file's end is reached."""
    too_large: bool = False
    """The blob is larger than the server excerpts; metadata only."""
    language: str | None = None
    license: str = ""
    license_source: str = ""
    license_confidence: float | None = None
    """0..1: how sure the license detection is (1.0 for a declaration: an SPDX tag or package
    metadata); None when no license was found."""
    swhid: str | None = None
    symlink_target: str | None = None
    """The link's target as stored; its content is never read through the link."""
    symlink_resolved: str | None = None
    """The target as a path inside the tree, when it stays inside and exists."""


class CodeListRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """List the entries of one directory inside the repository's tree."""

    repo: RepoRef
    path: RepoPath = ""
    """The directory; empty for the repository root."""
    revision: Revision | None = None
    recursive: bool = False
    max_entries: PositiveInt | None = None


class DirectoryEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of a listing."""

    name: str
    path: str
    type: str
    """`file`, `directory`, `symlink` or `submodule`."""
    size: int = 0
    """Bytes of a file or of a symlink's target text; 0 for directories and submodules."""


class CodeListResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """One message of a listing; entries in path order, depth-first when recursive."""

    repo: str = ""
    commit: str = ""
    ref: str = ""
    path: str = ""
    entries: tuple[DirectoryEntry, ...] = ()
    total: int = 0
    """Entries in this answer (all batches)."""
    truncated: bool = False
    """The directory has more entries than `max_entries`."""
