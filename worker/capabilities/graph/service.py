"""The graph capabilities: graph.search, graph.traverse, graph.retrieve and graph.diff."""

from __future__ import annotations

from contracts.graph import (
    GraphDiffRequest,
    GraphRetrieveRequest,
    GraphSearchRequest,
    GraphTraverseRequest,
)
from contracts.subjects import Subject
from worker.capabilities.graph.diff import GraphDiff
from worker.capabilities.graph.graphs import GraphStore
from worker.capabilities.graph.queries import GraphQueries
from worker.capabilities.tooling import batched_reply, served
from worker.config import Config
from worker.index import IndexStore
from worker.licenses import LicenseCache
from worker.repos.catalog import RepoCatalog
from worker.service.server import Capability, Reply, RequestContext


class GraphTools:
    """Serves the entity graph of the catalog's repositories."""

    def __init__(
        self, config: Config, catalog: RepoCatalog, indexes: IndexStore, licenses: LicenseCache
    ) -> None:
        self.config = config
        self.graphs = GraphStore(indexes, licenses, size=config.tools.graph_lru_size)
        self.queries = GraphQueries(config, catalog, self.graphs)
        self.differ = GraphDiff(catalog, self.graphs)

    def capabilities(self) -> list[Capability]:
        """The four graph capabilities, each enabled or not as the config says."""
        return served(
            self.config,
            [
                (Subject.GRAPH_SEARCH, self._search),
                (Subject.GRAPH_TRAVERSE, self._traverse),
                (Subject.GRAPH_RETRIEVE, self._retrieve),
                (Subject.GRAPH_DIFF, self._diff),
            ],
        )

    def _search(self, request: GraphSearchRequest, context: RequestContext) -> Reply:
        response = self.queries.search(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return batched_reply(response, context, repo=response.repo, entities=len(response.entities))

    def _traverse(self, request: GraphTraverseRequest, context: RequestContext) -> Reply:
        response = self.queries.traverse(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return batched_reply(
            response,
            context,
            repo=response.repo,
            nodes=len(response.nodes),
            edges=len(response.edges),
        )

    def _retrieve(self, request: GraphRetrieveRequest, context: RequestContext) -> Reply:
        response = self.queries.retrieve(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return batched_reply(response, context, repo=response.repo, entities=len(response.entities))

    def _diff(self, request: GraphDiffRequest, context: RequestContext) -> Reply:
        response = self.differ.diff(
            request, request_id=context.request_id, deadline=context.deadline
        )
        return batched_reply(
            response, context, repo=response.repo, entities=response.entity_changes
        )
