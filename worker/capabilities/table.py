"""Assembles a worker from its config and cache, and runs it until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pygit2
import structlog

from contracts.research import RepoReaderRequest, RepoReaderResponse
from contracts.subjects import Subject
from worker.capabilities.graph.service import GraphTools
from worker.capabilities.research import ResearchService
from worker.capabilities.tools import AgentTools
from worker.config import Config
from worker.index import IndexStore
from worker.repos.catalog import RepoCatalog
from worker.repos.layout import CacheLayout
from worker.service.admission import RateLimiter
from worker.service.durable import DurableRequests
from worker.service.replies import item_batches
from worker.service.server import (
    Capability,
    Reply,
    RequestContext,
    WorkerService,
    connect_service,
    run_service,
)

log = structlog.get_logger(__name__)

PACK_WINDOW_BYTES = 8 << 20
PACK_MAPPED_LIMIT_BYTES = 64 << 20
"""libgit2 maps pack files in windows (1 GiB each, up to 8 GiB, by default); every page a
read touched stays resident until its window is unmapped. Small windows under a small limit
keep a worker's resident set from growing with the repositories it reads."""


class Worker:
    """The capabilities of one worker process, built over one cache."""

    def __init__(
        self,
        config: Config,
        cache_dir: Path,
        *,
        scratch_dir: Path | None = None,
        config_file: Path | None = None,
    ) -> None:
        """`config_file`, when given, is followed: repositories registered or removed there
        later are served or refused without a restart."""
        self.config = config
        pygit2.settings.mwindow_size = PACK_WINDOW_BYTES
        pygit2.settings.mwindow_mapped_limit = PACK_MAPPED_LIMIT_BYTES
        self.catalog = RepoCatalog(config, CacheLayout(cache_dir), config_file=config_file)
        self.indexes = IndexStore(
            cache_dir,
            max_blob_bytes=config.server.max_blob_bytes,
            lru_size=config.server.index_lru_size,
            scratch_dir=scratch_dir,
        )
        self.research = ResearchService(config, self.catalog, self.indexes)
        self.tools = AgentTools(config, self.catalog, self.indexes)
        self.graph = GraphTools(config, self.catalog, self.indexes, self.tools.licenses)

    def capabilities(self) -> list[Capability]:
        """Every capability this worker serves, with its enabled flag from the config."""
        return [
            Capability(
                subject=Subject.RESEARCH,
                request_type=RepoReaderRequest,
                handle=self._research,
                enabled=self.config.capabilities.research.enabled,
            ),
            *self.tools.capabilities(),
            *self.graph.capabilities(),
        ]

    def _research(self, request: RepoReaderRequest, context: RequestContext) -> Reply:
        answer = self.research.answer(request, deadline=context.deadline)
        response = RepoReaderResponse(
            request_id=context.request_id,
            resolved=answer.resolved,
            artifacts=answer.artifacts,
            omitted=answer.omitted,
        )
        messages = item_batches(
            response, "artifacts", max_payload=context.max_payload, encode=context.encode
        )
        return Reply(
            messages=messages,
            summary={
                "repos": [r.repo for r in answer.resolved],
                "omitted": [o.repo for o in answer.omitted],
                "artifacts": len(answer.artifacts),
            },
        )


async def serve(
    worker: Worker,
    nats_url: str,
    *,
    concurrency: int = 1,
    ready_file: Path | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Connect, serve until `stop` is set (without `stop`: until SIGTERM or SIGINT), then
    drain; raises ConnectionLost if the connection closes for good first."""
    connection = await connect_service(
        nats_url,
        name="repo-reader-worker",
        drain_timeout=max(30, int(worker.config.server.request_timeout_seconds * 2)),
        reconnect_seconds=worker.config.server.reconnect_seconds,
    )
    nc = connection.nc
    capabilities = worker.capabilities()
    service = WorkerService(
        nc,
        capabilities,
        request_timeout=worker.config.server.request_timeout_seconds,
        concurrency=concurrency,
        admission=await RateLimiter.connect(
            nc, worker.config.capabilities, [c.subject for c in capabilities]
        ),
        ready_file=ready_file,
        describe=lambda: {"repos": worker.catalog.servable()},
    )
    durable = DurableRequests(nc, service, concurrency=concurrency)
    await run_service(service, stop, closed=connection.closed, beside=durable.run)
