"""`repo-reader mirror serve`: the mirror as a long-running process.

It syncs every registered repository on a schedule (`[mirror] sync_interval_seconds`,
which `repo.status` reports as the next sync) and answers `admin.sync` and
`admin.rebuild_index` — subjects no worker serves, in a micro service of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from pathlib import Path
from typing import Final

import structlog

from contracts.admin import (
    EdgeCounts,
    EntityCounts,
    IndexFileError,
    IndexStats,
    RebuildIndexRequest,
    RebuildIndexResponse,
    RepoSyncResult,
    SyncRequest,
    SyncResponse,
)
from contracts.subjects import Subject
from worker.errors import AccessDenied, InternalError
from worker.mirror.sync import Mirror, SyncError
from worker.service.server import (
    Capability,
    Reply,
    RequestContext,
    WorkerService,
    connect_service,
    run_service,
)

log = structlog.get_logger(__name__)

MIRROR_SERVICE_NAME: Final = "repo_reader_mirror"
MIRROR_QUEUE_GROUP: Final = "repo_reader.mirror"
ADMIN_TIMEOUT_SECONDS: Final = 3600.0
"""A sync of a large repository takes minutes; admin requests get an hour."""


class MirrorAdmin:
    """The admin capabilities over one Mirror."""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror

    def capabilities(self) -> list[Capability]:
        """admin.sync and admin.rebuild_index."""
        return [
            Capability(subject=Subject.ADMIN_SYNC, request_type=SyncRequest, handle=self._sync),
            Capability(
                subject=Subject.ADMIN_REBUILD_INDEX,
                request_type=RebuildIndexRequest,
                handle=self._rebuild_index,
            ),
        ]

    def _registered(self, name: str) -> str:
        entry = self.mirror.config.repo(name)
        if entry is None:
            raise AccessDenied(
                f"{name!r} is not a registered repository", repo=name, reason="not-registered"
            )
        return entry.name

    def _sync(self, request: SyncRequest, context: RequestContext) -> Reply:
        names = [self._registered(name) for name in request.repos] if request.repos else []
        try:
            results = self.mirror.sync(names)
        except SyncError as exc:
            raise InternalError(str(exc)) from None
        response = SyncResponse(
            request_id=context.request_id,
            results=tuple(
                RepoSyncResult(
                    repo=r.repo,
                    head=r.head,
                    previous_head=r.previous_head,
                    received_objects=r.received_objects,
                    index_seconds=round(r.index_seconds, 3),
                    seconds=round(r.seconds, 3),
                )
                for r in results
            ),
        )
        return Reply(
            messages=[context.encode(response)], summary={"repos": [r.repo for r in results]}
        )

    def _rebuild_index(self, request: RebuildIndexRequest, context: RequestContext) -> Reply:
        name = self._registered(request.repo)
        try:
            commit, seconds = self.mirror.rebuild_index(name, request.revision)
        except SyncError as exc:
            raise InternalError(str(exc)) from None
        report = self.mirror.index_report(name, commit)
        response = RebuildIndexResponse(
            request_id=context.request_id,
            repo=name,
            commit=commit,
            seconds=round(seconds, 3),
            stats=IndexStats(
                files_indexed=report.files_indexed,
                entities_found=EntityCounts(
                    directories=report.entities["directory"],
                    files=report.entities["file"],
                    classes=report.entities["class"],
                    functions=report.entities["function"],
                ),
                edges_created=EdgeCounts(
                    contain=report.edges["contain"],
                    import_=report.edges["import"],
                    invoke=report.edges["invoke"],
                    inherit=report.edges["inherit"],
                ),
                build_time_ms=round((seconds + report.graph_seconds) * 1000, 1),
            ),
            file_errors=tuple(
                IndexFileError(file_path=path, error=why) for path, why in report.file_errors
            ),
        )
        return Reply(
            messages=[context.encode(response)], summary={"repos": [name], "commit": commit}
        )


async def serve_mirror(
    mirror: Mirror,
    nats_url: str,
    *,
    interval: float | None,
    ready_file: Path | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Answer admin requests and sync every `interval` seconds (None: only on request)."""
    connection = await connect_service(
        nats_url,
        name="repo-reader-mirror",
        reconnect_seconds=mirror.config.server.reconnect_seconds,
    )
    service = WorkerService(
        connection.nc,
        MirrorAdmin(mirror).capabilities(),
        request_timeout=ADMIN_TIMEOUT_SECONDS,
        ready_file=ready_file,
        name=MIRROR_SERVICE_NAME,
        queue_group=MIRROR_QUEUE_GROUP,
        description="The repo-reader mirror: syncs and re-indexes the cache",
    )
    schedule = functools.partial(_scheduled_syncs, mirror, interval) if interval else None
    await run_service(service, stop, closed=connection.closed, beside=schedule)


async def _scheduled_syncs(mirror: Mirror, interval: float, stop: asyncio.Event) -> None:
    """Sync every repository, then again every `interval` seconds, until stopped."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        for entry in mirror.config.repos:
            try:
                await loop.run_in_executor(None, mirror.sync_one, entry)
            except SyncError as exc:
                # One unreachable upstream must not stop the schedule for the others.
                log.error("mirror.scheduled_sync_failed", repo=entry.name, error=str(exc))
            if stop.is_set():
                return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval)
