"""The `admin.*` message family: asking the mirror (the only cache writer) to sync or re-index.

Only the mirror serves these subjects; workers never do, and NATS permissions let only
operators' credentials publish them.
"""

from __future__ import annotations

import msgspec

from contracts.errors import ResponseEnvelope
from contracts.types import RepoId, Revision


class SyncRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Fetch and index registered repositories now."""

    repos: tuple[RepoId, ...] | None = None
    """Which ones; absent means every registered repository."""


class RepoSyncResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one repository's sync did."""

    repo: str
    head: str
    previous_head: str | None = None
    received_objects: int = 0
    seconds: float = 0.0
    index_seconds: float = 0.0
    """Of `seconds`, the time spent indexing the new head (research and code search)."""


class SyncResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """The result of every repository synced, in request order."""

    results: tuple[RepoSyncResult, ...] = ()


class RebuildIndexRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Build the search indexes of one repository at a revision again."""

    repo: RepoId
    revision: Revision | None = None
    """A sha, tag or branch; absent means the mirrored default branch head."""


class RebuildIndexResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """Which commit was indexed and how long it took."""

    repo: str = ""
    commit: str = ""
    seconds: float = 0.0
