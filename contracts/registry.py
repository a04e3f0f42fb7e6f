"""Which request and response types travel on which subject."""

from __future__ import annotations

from typing import Final, TypeAlias

import msgspec

from contracts.admin import RebuildIndexRequest, RebuildIndexResponse, SyncRequest, SyncResponse
from contracts.code import (
    CodeListRequest,
    CodeListResponse,
    CodeReadRequest,
    CodeReadResponse,
    CodeSearchRequest,
    CodeSearchResponse,
)
from contracts.docs import DocsRegenerateRequest, DocsRegenerateResponse
from contracts.errors import ErrorReply
from contracts.git import GitChurnRequest, GitChurnResponse, GitHistoryRequest, GitHistoryResponse
from contracts.graph import (
    GraphDiffRequest,
    GraphDiffResponse,
    GraphRetrieveRequest,
    GraphRetrieveResponse,
    GraphSearchRequest,
    GraphSearchResponse,
    GraphTraverseRequest,
    GraphTraverseResponse,
)
from contracts.repo import RepoStatusRequest, RepoStatusResponse
from contracts.research import RepoReaderRequest, RepoReaderResponse
from contracts.subjects import Subject

MESSAGES: Final[dict[Subject, tuple[type[msgspec.Struct], type[msgspec.Struct]]]] = {
    Subject.RESEARCH: (RepoReaderRequest, RepoReaderResponse),
    Subject.CODE_SEARCH: (CodeSearchRequest, CodeSearchResponse),
    Subject.CODE_READ: (CodeReadRequest, CodeReadResponse),
    Subject.CODE_LIST: (CodeListRequest, CodeListResponse),
    Subject.GIT_HISTORY: (GitHistoryRequest, GitHistoryResponse),
    Subject.GIT_CHURN: (GitChurnRequest, GitChurnResponse),
    Subject.REPO_STATUS: (RepoStatusRequest, RepoStatusResponse),
    Subject.GRAPH_SEARCH: (GraphSearchRequest, GraphSearchResponse),
    Subject.GRAPH_TRAVERSE: (GraphTraverseRequest, GraphTraverseResponse),
    Subject.GRAPH_RETRIEVE: (GraphRetrieveRequest, GraphRetrieveResponse),
    Subject.GRAPH_DIFF: (GraphDiffRequest, GraphDiffResponse),
    Subject.DOCS_REGENERATE: (DocsRegenerateRequest, DocsRegenerateResponse),
    Subject.ADMIN_SYNC: (SyncRequest, SyncResponse),
    Subject.ADMIN_REBUILD_INDEX: (RebuildIndexRequest, RebuildIndexResponse),
}
"""Request and response type of every subject that is served (`MIRROR_SUBJECTS` by the mirror)."""

WorkerRequest: TypeAlias = (
    RepoReaderRequest
    | CodeSearchRequest
    | CodeReadRequest
    | CodeListRequest
    | GitHistoryRequest
    | GitChurnRequest
    | RepoStatusRequest
    | GraphSearchRequest
    | GraphTraverseRequest
    | GraphRetrieveRequest
    | GraphDiffRequest
)
"""A request of any subject workers serve (`WORKER_SUBJECTS`), for a handler to `match` on."""

MirrorRequest: TypeAlias = DocsRegenerateRequest | SyncRequest | RebuildIndexRequest
"""A request of any subject the mirror serves (`MIRROR_SUBJECTS`)."""

BATCHED: Final[dict[Subject, str | None]] = {
    Subject.RESEARCH: "artifacts",
    Subject.CODE_SEARCH: "hits",
    Subject.CODE_READ: None,
    Subject.CODE_LIST: "entries",
    Subject.GIT_HISTORY: "commits",
    Subject.GIT_CHURN: "modules",
    Subject.REPO_STATUS: None,
    Subject.GRAPH_SEARCH: "entities",
    Subject.GRAPH_TRAVERSE: "nodes",
    Subject.GRAPH_RETRIEVE: "entities",
    Subject.GRAPH_DIFF: "entities",
    Subject.DOCS_REGENERATE: None,
    Subject.ADMIN_SYNC: None,
    Subject.ADMIN_REBUILD_INDEX: None,
}
"""The list field of each response whose items are spread over the reply's batches (None:
one message); a client joins the batches on it."""


def json_schemas() -> dict[str, object]:
    """One JSON Schema document describing every message, keyed by subject in `x-subjects`."""
    types: list[type[msgspec.Struct]] = [ErrorReply]
    for request, response in MESSAGES.values():
        types += [request, response]
    (refs, components) = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": components,
        "x-subjects": {
            subject.value: {"request": refs[types.index(req)], "response": refs[types.index(resp)]}
            for subject, (req, resp) in MESSAGES.items()
        },
        "x-error-reply": refs[0],
    }
