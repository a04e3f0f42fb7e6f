"""Assembles a worker from its config and cache, and runs it until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import nats
import structlog

from contracts.research import RepoReaderRequest
from contracts.subjects import Subject
from worker.agenttools import AgentTools
from worker.batching import research_batches
from worker.cache import CacheLayout
from worker.catalog import RepoCatalog
from worker.config import Config
from worker.ratelimit import RateLimiter
from worker.research import ResearchService
from worker.search import IndexStore
from worker.service import Capability, Reply, RequestContext, WorkerService

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class NatsCredentials:
    """User and password for the NATS connection, from the environment or a file."""

    user: str | None
    password: str | None

    @classmethod
    def from_environment(cls) -> NatsCredentials:
        """`REPO_READER_NATS_USER` with `REPO_READER_NATS_PASSWORD` or `..._PASSWORD_FILE`."""
        password = os.environ.get("REPO_READER_NATS_PASSWORD")
        password_file = os.environ.get("REPO_READER_NATS_PASSWORD_FILE")
        if password is None and password_file:
            password = Path(password_file).read_text().strip()
        return cls(user=os.environ.get("REPO_READER_NATS_USER"), password=password)


class Worker:
    """The capabilities of one worker process, built over one cache."""

    def __init__(self, config: Config, cache_dir: Path, *, scratch_dir: Path | None = None) -> None:
        self.config = config
        self.catalog = RepoCatalog(config, CacheLayout(cache_dir))
        self.indexes = IndexStore(
            cache_dir,
            max_blob_bytes=config.server.max_blob_bytes,
            lru_size=config.server.index_lru_size,
            scratch_dir=scratch_dir,
        )
        self.research = ResearchService(config, self.catalog, self.indexes)
        self.tools = AgentTools(config, self.catalog)

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
        ]

    def _research(self, request: RepoReaderRequest, context: RequestContext) -> Reply:
        answer = self.research.answer(request, deadline=context.deadline)
        messages = research_batches(
            context.request_id,
            answer.resolved,
            answer.artifacts,
            max_payload=context.max_payload,
            encode=context.encode,
        )
        return Reply(
            messages=messages,
            summary={
                "repos": [r.repo for r in answer.resolved],
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
    """Connect, serve until `stop` is set (or SIGTERM/SIGINT arrives), then drain."""
    credentials = NatsCredentials.from_environment()
    nc = await nats.connect(
        nats_url,
        user=credentials.user,
        password=credentials.password,
        name="repo-reader-worker",
        max_reconnect_attempts=-1,
        drain_timeout=max(30, int(worker.config.server.request_timeout_seconds * 2)),
    )
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
    )
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await service.start()
        await stop.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await service.drain()
