"""The agent tools as capabilities: code.search/read/list, git.history/churn, repo.status."""

from __future__ import annotations

from contracts.code import CodeListRequest, CodeReadRequest, CodeSearchRequest, CodeSearchResponse
from contracts.git import GitChurnRequest, GitHistoryRequest
from contracts.repo import RepoStatusRequest
from contracts.subjects import Subject
from worker.capabilities.code_files import CodeFiles
from worker.capabilities.code_search.search import CodeSearch
from worker.capabilities.history import GitHistory
from worker.capabilities.status import RepoStatus
from worker.capabilities.tooling import batched_reply, served
from worker.config import Config
from worker.index import IndexStore
from worker.licenses import LicenseCache
from worker.repos.catalog import RepoCatalog
from worker.service.server import Capability, Reply, RequestContext


class AgentTools:
    """Builds the tool services over one catalog and serves them as capabilities."""

    def __init__(self, config: Config, catalog: RepoCatalog, indexes: IndexStore) -> None:
        self.config = config
        licenses = LicenseCache()
        self.licenses = licenses
        self.indexes = indexes
        self.search = CodeSearch(config, catalog, indexes, licenses)
        self.files = CodeFiles(config, catalog, licenses)
        self.history = GitHistory(config, catalog)
        self.status = RepoStatus(config, catalog, stored_index=indexes.stored)

    def capabilities(self) -> list[Capability]:
        """The six tool capabilities, each enabled or not as the config says."""
        return served(
            self.config,
            [
                (Subject.CODE_SEARCH, self._search),
                (Subject.CODE_READ, self._read),
                (Subject.CODE_LIST, self._list),
                (Subject.GIT_HISTORY, self._history),
                (Subject.GIT_CHURN, self._churn),
                (Subject.REPO_STATUS, self._status),
            ],
        )

    def _search(self, request: CodeSearchRequest, context: RequestContext) -> Reply:
        answer = self.search.search(request, deadline=context.deadline)
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
        return batched_reply(
            response,
            context,
            repo=answer.repo.name,
            hits=len(answer.hits),
            candidates=answer.candidate_files,
            scanned=answer.files_scanned,
            index=answer.index,
        )

    def _read(self, request: CodeReadRequest, context: RequestContext) -> Reply:
        response = self.files.read(request, request_id=context.request_id)
        return Reply(
            messages=[context.encode(response)],
            summary={"repo": response.repo, "span": response.span, "kind": response.kind},
        )

    def _list(self, request: CodeListRequest, context: RequestContext) -> Reply:
        response = self.files.list(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return batched_reply(response, context, repo=response.repo, entries=response.total)

    def _history(self, request: GitHistoryRequest, context: RequestContext) -> Reply:
        response = self.history.history(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return batched_reply(response, context, repo=response.repo, commits=len(response.commits))

    def _churn(self, request: GitChurnRequest, context: RequestContext) -> Reply:
        response = self.history.churn(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return batched_reply(
            response, context, repo=response.repo, examined=response.commits_examined
        )

    def _status(self, request: RepoStatusRequest, context: RequestContext) -> Reply:
        response = self.status.status(request, request_id=context.request_id)
        return Reply(messages=[context.encode(response)], summary={"repo": response.repo})
