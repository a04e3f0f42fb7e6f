"""The `repo.status` capability: what the mirror last published for one repository.

Besides the last sync, it answers seed 002's `get_repo_status`: whether a mirror service
with a schedule watches the cache (its heartbeat, see `worker.mirror.heartbeat`), when it
syncs (and regenerates scheduled documents) next, and how many of the requested documents
on `refs/repo-reader/docs` do not match the head. Nothing here writes.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from contracts.docs import DOCS_REF, DocType
from contracts.repo import RepoStatusRequest, RepoStatusResponse
from worker.config import Config
from worker.docs import Freshness, freshness
from worker.repos.catalog import RepoCatalog
from worker.repos.layout import MirrorHeartbeat

FRESHNESS_CACHE: Final = 64


class RepoStatus:
    """Answers repo.status from the published mirror states."""

    def __init__(
        self,
        config: Config,
        catalog: RepoCatalog,
        *,
        stored_index: Callable[[str, str], bool],
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.config = config
        self.catalog = catalog
        self._stored_index = stored_index
        self._now = now
        self._fresh: OrderedDict[tuple[str, str, str | None, tuple[str, ...]], Freshness] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def status(self, request: RepoStatusRequest, *, request_id: str) -> RepoStatusResponse:
        """The mirror state of the repository `request.repo` names."""
        config = self.catalog.config
        name = self.catalog.lookup(request.repo, field="repo").name
        state = self.catalog.state(name)
        doc_types = request.doc_types or config.docs.types
        docs = self._freshness(name, state.head, doc_types)
        now = self._now()
        heartbeat = self.catalog.layout.read_heartbeat()
        watching = (
            heartbeat is not None
            and heartbeat.alive(now)
            and heartbeat.interval_seconds is not None
        )
        next_sync = _next_sync(heartbeat, now) if watching else None
        scheduled = heartbeat is not None and any(d in heartbeat.scheduled_docs for d in doc_types)
        return RepoStatusResponse(
            request_id=request_id,
            repo=name,
            default_ref=state.default_ref,
            head=state.head,
            synced_at=state.synced_at,
            sync_interval_seconds=config.mirror.sync_interval_seconds,
            is_watching=watching,
            next_sync_in_seconds=next_sync,
            next_regeneration_in_seconds=next_sync if scheduled else None,
            docs_out_of_date=len(docs.stale),
            docs_out_of_date_types=tuple(docs.stale),
            docs_commit=docs.docs_commit,
            indexed=state.indexed_commit == state.head,
            indexed_commit=state.indexed_commit,
            code_search_indexed=self._stored_index(name, state.head),
            license=state.license,
            license_source=state.license_source,
            license_confidence=state.license_confidence,
            additional_licenses=state.additional_licenses,
        )

    def _freshness(self, name: str, head: str, doc_types: tuple[DocType, ...]) -> Freshness:
        """The documents' freshness, remembered per head and docs commit (fingerprinting a
        large tree takes a moment; reading where the docs ref points does not)."""
        repo = self.catalog.open(name)
        ref = repo.references.get(DOCS_REF)
        key = (name, head, str(ref.target) if ref is not None else None, tuple(doc_types))
        with self._lock:
            found = self._fresh.get(key)
            if found is not None:
                self._fresh.move_to_end(key)
                return found
        found = freshness(repo, head, self.catalog.config, doc_types)
        with self._lock:
            self._fresh[key] = found
            while len(self._fresh) > FRESHNESS_CACHE:
                self._fresh.popitem(last=False)
        return found


def _next_sync(heartbeat: MirrorHeartbeat | None, now: dt.datetime) -> int:
    """Seconds until the watching service's next round of syncs; 0 while one runs."""
    if heartbeat is None or heartbeat.next_sync_at is None:
        return 0
    return max(0, int((heartbeat.next_sync_at - now).total_seconds()))
