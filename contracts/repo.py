"""The `repo.*` message family (seed 002): the state of a repository's mirror."""

from __future__ import annotations

import datetime as dt

import msgspec

from contracts.docs import DocTypes
from contracts.errors import ResponseEnvelope
from contracts.types import RepoRef


class RepoStatusRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Ask for the mirror state of one registered repository (seed 002's get_repo_status)."""

    repo: RepoRef
    doc_types: DocTypes | None = None
    """The documents whose freshness to report; absent means every type the config allows."""


class RepoStatusResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """What the last sync published and when the next one is due."""

    repo: str = ""
    default_ref: str = ""
    head: str = ""
    """The default branch's commit at the last sync."""
    synced_at: dt.datetime | None = None
    sync_interval_seconds: int = 0
    is_watching: bool = False
    """A mirror service with a schedule is running for this cache (its heartbeat is fresh)."""
    next_sync_in_seconds: int | None = None
    """Seconds until its next scheduled sync, 0 while one runs; absent when none is watching."""
    next_regeneration_in_seconds: int | None = None
    """Seconds until the engine next regenerates documents on its own (after a scheduled
    sync, for the types `[docs] scheduled` names); absent when it never will."""
    docs_out_of_date: int = 0
    """Of the requested documents, how many do not match the head (missing, or generated from
    inputs that changed since): seed 002's `uncommitted_files`."""
    docs_out_of_date_types: tuple[str, ...] = ()
    docs_commit: str | None = None
    """The commit of `refs/repo-reader/docs`, when the engine ever wrote one."""
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
