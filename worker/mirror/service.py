"""`repo-reader mirror serve`: the mirror as a long-running process.

It syncs every registered repository on a schedule (`[mirror] sync_interval_seconds`),
regenerating the documents `[docs] scheduled` names after each sync, and answers
`docs.regenerate`, `admin.sync` and `admin.rebuild_index` — subjects no worker serves, in a
micro service of its own. `docs.regenerate` is admitted like a worker's capabilities: enabled
and rate-limited per minute as `[capabilities.docs_regenerate]` says, across every mirror. Its
heartbeat in the cache tells workers (and so `repo.status`) that it runs and when it syncs next.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from pathlib import Path
from typing import Final, assert_never

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
from contracts.docs import DocsRegenerateRequest, DocsRegenerateResponse, DocType, DocumentState
from contracts.registry import MirrorRequest
from contracts.subjects import MIRROR_SUBJECTS, Subject
from worker.errors import AccessDenied, CapabilityDisabled, SyncError
from worker.mirror.heartbeat import Heartbeat
from worker.mirror.sync import Mirror
from worker.repos.registry import lookup_repo
from worker.service.admission import RateLimiter
from worker.service.connection import connect_service
from worker.service.server import (
    Answer,
    Capability,
    RequestContext,
    WorkerService,
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
        """docs.regenerate (enabled as the config says), admin.sync and admin.rebuild_index."""
        docs_enabled = self.mirror.config.capabilities.docs_regenerate.enabled
        return [
            Capability(
                subject=subject,
                enabled=docs_enabled if subject == Subject.DOCS_REGENERATE else True,
            )
            for subject in MIRROR_SUBJECTS
        ]

    def answer(self, request: MirrorRequest, context: RequestContext) -> Answer:
        """The answer to a request of any mirror subject, by the request's type."""
        match request:
            case DocsRegenerateRequest():
                return self._regenerate_docs(request, context)
            case SyncRequest():
                return self._sync(request, context)
            case RebuildIndexRequest():
                return self._rebuild_index(request, context)
            case _:
                assert_never(request)

    def _registered(self, name: str) -> str:
        entry = self.mirror.config.repo(name)
        if entry is None:
            raise AccessDenied(
                f"{name!r} is not a registered repository", repo=name, reason="not-registered"
            )
        return entry.name

    def _regenerate_docs(self, request: DocsRegenerateRequest, context: RequestContext) -> Answer:
        config = self.mirror.config
        # Registered and not denied (seed 002's AccessDenied), before anything is read.
        name = lookup_repo(config, request.repo, field="repo").name
        allowed = config.docs.types
        wanted: tuple[DocType, ...] = request.doc_types or allowed
        refused = [d for d in wanted if d not in allowed]
        if refused:
            raise CapabilityDisabled(
                f"doc_types: {', '.join(refused)} not allowed by [docs] types of the server's "
                f"config (allowed: {', '.join(allowed) or 'none'})",
                field="doc_types",
                refused=refused,
                allowed=list(allowed),
            )
        done = self.mirror.regenerate_docs(name, wanted)
        response = DocsRegenerateResponse(
            request_id=context.request_id,
            repo=name,
            commit=done.head,
            success=True,
            docs_regenerated=tuple(done.regenerated),
            reason_skipped=done.reason_skipped,
            docs_commit=done.docs_commit,
            documents=tuple(
                DocumentState(
                    doc_type=d.doc_type,
                    path=d.path,
                    status="regenerated" if d.regenerated else "unchanged",
                    generated_from=d.generated_from,
                    size=d.size,
                )
                for d in done.documents
            ),
        )
        return Answer(response, {"repos": [name], "regenerated": list(done.regenerated)})

    def _sync(self, request: SyncRequest, context: RequestContext) -> Answer:
        names = [self._registered(name) for name in request.repos] if request.repos else []
        results = self.mirror.sync(names)
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
        return Answer(response, {"repos": [r.repo for r in results]})

    def _rebuild_index(self, request: RebuildIndexRequest, context: RequestContext) -> Answer:
        name = self._registered(request.repo)
        commit, seconds = self.mirror.rebuild_index(name, request.revision)
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
        return Answer(response, {"repos": [name], "commit": commit})


async def serve_mirror(
    mirror: Mirror,
    nats_url: str,
    *,
    interval: float | None,
    ready_file: Path | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Answer mirror requests and sync every `interval` seconds (None: only on request)."""
    connection = await connect_service(
        nats_url,
        name="repo-reader-mirror",
        reconnect_seconds=mirror.config.server.reconnect_seconds,
    )
    admission = await RateLimiter.connect(
        connection.nc, mirror.config.capabilities, list(MIRROR_SUBJECTS)
    )
    admin = MirrorAdmin(mirror)
    service = WorkerService(
        connection.nc,
        admin.capabilities(),
        admin.answer,
        request_timeout=ADMIN_TIMEOUT_SECONDS,
        admission=admission,
        ready_file=ready_file,
        name=MIRROR_SERVICE_NAME,
        queue_group=MIRROR_QUEUE_GROUP,
        description="The repo-reader mirror: syncs, re-indexes and documents the cache",
    )
    heartbeat = Heartbeat(
        mirror.layout, interval=interval, scheduled_docs=mirror.config.docs.scheduled
    )
    heartbeat.beat()
    companion = functools.partial(_alongside, mirror, interval, heartbeat)
    try:
        await run_service(service, stop, closed=connection.closed, beside=companion)
    finally:
        heartbeat.remove()


async def _alongside(
    mirror: Mirror, interval: float | None, heartbeat: Heartbeat, stop: asyncio.Event
) -> None:
    """The heartbeat, and the schedule when there is one, until stopped."""
    tasks = [heartbeat.run(stop)]
    if interval:
        tasks.append(_scheduled_syncs(mirror, interval, heartbeat, stop))
    await asyncio.gather(*tasks)


async def _scheduled_syncs(
    mirror: Mirror, interval: float, heartbeat: Heartbeat, stop: asyncio.Event
) -> None:
    """Sync every repository (and regenerate its scheduled documents), then again every
    `interval` seconds, until stopped."""
    loop = asyncio.get_running_loop()
    scheduled = mirror.config.docs.scheduled
    while not stop.is_set():
        heartbeat.syncing()
        for entry in mirror.config.repos:
            try:
                await loop.run_in_executor(None, mirror.sync_one, entry)
                if scheduled:
                    await loop.run_in_executor(None, mirror.regenerate_docs, entry.name, scheduled)
            except SyncError as exc:
                # One unreachable upstream must not stop the schedule for the others.
                log.error("mirror.scheduled_sync_failed", repo=entry.name, error=str(exc))
            except Exception:
                # Nor may a defect met on one repository's documents or cache: uncaught, it
                # ended this task alone, and every repository silently stopped being synced.
                log.exception("mirror.scheduled_sync_failed", repo=entry.name)
            if stop.is_set():
                return
        heartbeat.idle_until(interval)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval)
