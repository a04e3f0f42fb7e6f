"""The `repo.*` message family (seed 002): the state of a repository's mirror."""

from __future__ import annotations

import datetime as dt

import msgspec

from contracts.errors import ResponseEnvelope
from contracts.types import RepoRef


class RepoStatusRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Ask for the mirror state of one registered repository."""

    repo: RepoRef


class RepoStatusResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """What the last sync published and when the next one is due."""

    repo: str = ""
    default_ref: str = ""
    head: str = ""
    """The default branch's commit at the last sync."""
    synced_at: dt.datetime | None = None
    sync_interval_seconds: int = 0
    next_sync_in_seconds: int = 0
    """Seconds until the next scheduled sync; 0 when it is due or overdue."""
    indexed: bool = False
    """The head has a stored research index."""
    indexed_commit: str | None = None
    code_search_indexed: bool = False
    """The head has a stored index, so code.search on it needs no on-demand build."""
    license: str | None = None
    """The SPDX expression of the root license at the head, when one was detected."""
    license_source: str | None = None
    license_confidence: float | None = None
    """0..1: how sure the detection of the root license is (1.0 for a declaration: an SPDX
    tag or package metadata); None when no license was found."""
    additional_licenses: tuple[str, ...] = ()
    """Licenses of bundled code the root license files also carry (reported, not applied)."""
