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


class EntityCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Entities of the commit's graph by type."""

    directories: int = 0
    files: int = 0
    classes: int = 0
    functions: int = 0


class EdgeCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Edges of the commit's graph by relation."""

    contain: int = 0
    import_: int = msgspec.field(default=0, name="import")
    invoke: int = 0
    inherit: int = 0


class IndexStats(msgspec.Struct, frozen=True, kw_only=True):
    """What a build indexed (seed 003's `rebuild_index` stats)."""

    files_indexed: int = 0
    entities_found: EntityCounts = EntityCounts()
    edges_created: EdgeCounts = EdgeCounts()
    build_time_ms: float = 0.0


class IndexFileError(msgspec.Struct, frozen=True, kw_only=True):
    """A file of the commit the build could not index, and why."""

    file_path: str
    error: str
    line: int | None = None


class RebuildIndexResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """Which commit was indexed, how long it took, and what the build found."""

    repo: str = ""
    commit: str = ""
    seconds: float = 0.0
    stats: IndexStats | None = None
    file_errors: tuple[IndexFileError, ...] = ()
    """Files not indexed (text larger than the server indexes); at most 100."""
