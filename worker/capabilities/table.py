"""The worker's capabilities: each subject it serves and the handler that answers it.

The server decodes a request with its subject's type; `Worker.answer` dispatches on that
type to a handler, which turns it into its subject's response Struct with the facts worth
logging; the server encodes (and batches) the answer after.
`serve` assembles a worker from its config and cache and runs it until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import assert_never

import pygit2
import structlog

from contracts.code import CodeListRequest, CodeReadRequest, CodeSearchRequest, CodeSearchResponse
from contracts.git import GitChurnRequest, GitHistoryRequest
from contracts.graph import (
    GraphDiffRequest,
    GraphRetrieveRequest,
    GraphSearchRequest,
    GraphTraverseRequest,
)
from contracts.registry import WorkerRequest
from contracts.repo import RepoStatusRequest
from contracts.research import RepoReaderRequest, RepoReaderResponse
from contracts.subjects import WORKER_SUBJECTS
from worker.capabilities.code_files import CodeFiles
from worker.capabilities.code_search.search import CodeSearch
from worker.capabilities.graph.diff import GraphDiff
from worker.capabilities.graph.graphs import GraphStore
from worker.capabilities.graph.queries import GraphQueries
from worker.capabilities.history import GitHistory
from worker.capabilities.research import ResearchService
from worker.capabilities.status import RepoStatus
from worker.config import Config
from worker.index import IndexStore
from worker.licenses import LicenseCache
from worker.repos.catalog import RepoCatalog
from worker.repos.layout import CacheLayout
from worker.service.admission import RateLimiter
from worker.service.connection import connect_service
from worker.service.durable import DurableRequests
from worker.service.server import (
    Answer,
    Capability,
    RequestContext,
    WorkerService,
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
        licenses = LicenseCache()
        self.research = ResearchService(config, self.catalog, self.indexes)
        self.code_search = CodeSearch(config, self.catalog, self.indexes, licenses)
        self.files = CodeFiles(config, self.catalog, licenses)
        self.history = GitHistory(config, self.catalog)
        self.status = RepoStatus(config, self.catalog, stored_index=self.indexes.stored)
        graphs = GraphStore(self.indexes, licenses)
        self.graph_queries = GraphQueries(config, self.catalog, graphs)
        self.graph_diff = GraphDiff(self.catalog, graphs)

    def capabilities(self) -> list[Capability]:
        """Every subject a worker serves, enabled as the config says."""
        return [
            Capability(
                subject=subject,
                enabled=self.config.capabilities.get(subject.capability).enabled,
            )
            for subject in WORKER_SUBJECTS
        ]

    def answer(self, request: WorkerRequest, context: RequestContext) -> Answer:
        """The answer to a request of any worker subject, by the request's type."""
        match request:
            case RepoReaderRequest():
                return self._research(request, context)
            case CodeSearchRequest():
                return self._code_search(request, context)
            case CodeReadRequest():
                return self._code_read(request, context)
            case CodeListRequest():
                return self._code_list(request, context)
            case GitHistoryRequest():
                return self._git_history(request, context)
            case GitChurnRequest():
                return self._git_churn(request, context)
            case RepoStatusRequest():
                return self._repo_status(request, context)
            case GraphSearchRequest():
                return self._graph_search(request, context)
            case GraphTraverseRequest():
                return self._graph_traverse(request, context)
            case GraphRetrieveRequest():
                return self._graph_retrieve(request, context)
            case GraphDiffRequest():
                return self._graph_diff(request, context)
            case _:
                assert_never(request)

    def _research(self, request: RepoReaderRequest, context: RequestContext) -> Answer:
        answer = self.research.answer(request, deadline=context.deadline)
        response = RepoReaderResponse(
            request_id=context.request_id,
            resolved=answer.resolved,
            artifacts=answer.artifacts,
            omitted=answer.omitted,
        )
        return Answer(
            response,
            {
                "repos": [r.repo for r in answer.resolved],
                "omitted": [o.repo for o in answer.omitted],
                "artifacts": len(answer.artifacts),
            },
        )

    def _code_search(self, request: CodeSearchRequest, context: RequestContext) -> Answer:
        answer = self.code_search.search(request, deadline=context.deadline)
        response = CodeSearchResponse(
            request_id=context.request_id,
            repo=answer.repo.name,
            commit=answer.repo.commit,
            ref=answer.repo.ref,
            hits=answer.hits,
            total_count=answer.total_count,
            candidate_files=answer.candidate_files,
            files_scanned=answer.files_scanned,
            exhaustive=answer.exhaustive,
            truncated=answer.truncated,
            index=answer.index,
        )
        return Answer(
            response,
            {
                "repo": answer.repo.name,
                "hits": len(answer.hits),
                "candidates": answer.candidate_files,
                "scanned": answer.files_scanned,
                "blobs_read": answer.blobs_read,
                "index": answer.index,
            },
        )

    def _code_read(self, request: CodeReadRequest, context: RequestContext) -> Answer:
        response = self.files.read(request, request_id=context.request_id)
        return Answer(
            response, {"repo": response.repo, "span": response.span, "kind": response.kind}
        )

    def _code_list(self, request: CodeListRequest, context: RequestContext) -> Answer:
        response = self.files.list(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return Answer(response, {"repo": response.repo, "entries": response.total})

    def _git_history(self, request: GitHistoryRequest, context: RequestContext) -> Answer:
        response = self.history.history(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return Answer(response, {"repo": response.repo, "commits": len(response.commits)})

    def _git_churn(self, request: GitChurnRequest, context: RequestContext) -> Answer:
        response = self.history.churn(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return Answer(response, {"repo": response.repo, "examined": response.commits_examined})

    def _repo_status(self, request: RepoStatusRequest, context: RequestContext) -> Answer:
        response = self.status.status(request, request_id=context.request_id)
        return Answer(response, {"repo": response.repo})

    def _graph_search(self, request: GraphSearchRequest, context: RequestContext) -> Answer:
        response = self.graph_queries.search(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return Answer(response, {"repo": response.repo, "entities": len(response.entities)})

    def _graph_traverse(self, request: GraphTraverseRequest, context: RequestContext) -> Answer:
        response = self.graph_queries.traverse(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return Answer(
            response,
            {"repo": response.repo, "nodes": len(response.nodes), "edges": len(response.edges)},
        )

    def _graph_retrieve(self, request: GraphRetrieveRequest, context: RequestContext) -> Answer:
        response = self.graph_queries.retrieve(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return Answer(response, {"repo": response.repo, "entities": len(response.entities)})

    def _graph_diff(self, request: GraphDiffRequest, context: RequestContext) -> Answer:
        response = self.graph_diff.diff(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return Answer(response, {"repo": response.repo, "entities": response.entity_changes})


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
        worker.answer,
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
