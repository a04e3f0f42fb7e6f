"""The `repo.status` capability: what the mirror last published for one repository."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from contracts.repo import RepoStatusRequest, RepoStatusResponse
from worker.config import Config
from worker.repos.catalog import RepoCatalog


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

    def status(self, request: RepoStatusRequest, *, request_id: str) -> RepoStatusResponse:
        """The mirror state of the repository `request.repo` names."""
        name = self.catalog.lookup(request.repo, field="repo").name
        state = self.catalog.state(name)
        interval = self.config.mirror.sync_interval_seconds
        due = state.synced_at + dt.timedelta(seconds=interval)
        return RepoStatusResponse(
            request_id=request_id,
            repo=name,
            default_ref=state.default_ref,
            head=state.head,
            synced_at=state.synced_at,
            sync_interval_seconds=interval,
            next_sync_in_seconds=max(0, int((due - self._now()).total_seconds())),
            indexed=state.indexed_commit == state.head,
            indexed_commit=state.indexed_commit,
            code_search_indexed=self._stored_index(name, state.head),
            license=state.license,
            license_source=state.license_source,
            license_confidence=state.license_confidence,
            additional_licenses=state.additional_licenses,
        )
