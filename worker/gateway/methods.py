"""The JSON-RPC methods of the gateway: which subject each calls, and the result it returns.

Seed 003's four methods keep their parameter names (each also takes `repo` and `revision`:
the service answers only for registered repositories at pinned commits) and their result
shapes; `research` and the agent tools take their NATS request's fields as parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from contracts.admin import RebuildIndexRequest, RebuildIndexResponse
from contracts.code import (
    CodeListRequest,
    CodeListResponse,
    CodeReadRequest,
    CodeReadResponse,
    CodeSearchRequest,
    CodeSearchResponse,
)
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

_ENVELOPE: Final = ("batch", "last", "errors")


def _plain(response: msgspec.Struct) -> dict[str, Any]:
    """A response's fields, without the batching envelope."""
    fields: dict[str, Any] = msgspec.to_builtins(response)
    for name in _ENVELOPE:
        fields.pop(name, None)
    return fields


def _traverse_result(response: msgspec.Struct) -> dict[str, Any]:
    fields = _plain(response)
    return {
        "subgraph": {"nodes": fields.pop("nodes"), "edges": fields.pop("edges")},
        **fields,
    }


def _rebuild_params(params: dict[str, Any]) -> dict[str, Any]:
    """Seed 003's rebuild_index parameters onto `admin.rebuild_index`'s request.

    `repo_path` names a registered repository (the mirror owns every path on disk);
    languages and an output path are not the caller's to choose, and are refused.
    """
    params = dict(params)
    if "repo_path" in params and "repo" not in params:
        params["repo"] = params.pop("repo_path")
    for refused in ("output_path", "languages"):
        if params.get(refused) is not None:
            raise msgspec.ValidationError(
                f"`{refused}` cannot be chosen: the mirror indexes every language into its "
                f"own cache - at `$.{refused}`"
            )
        params.pop(refused, None)
    params.pop("incremental", None)  # every build is incremental: new blobs only
    return params


def _rebuild_result(response: msgspec.Struct) -> dict[str, Any]:
    assert isinstance(response, RebuildIndexResponse)
    return {
        "success": True,
        "stats": msgspec.to_builtins(response.stats) if response.stats else None,
        "errors": msgspec.to_builtins(response.file_errors),
        "repo": response.repo,
        "commit": response.commit,
    }


@dataclass(frozen=True, slots=True)
class Method:
    """One JSON-RPC method: its subject, types, batched field and result shape."""

    subject: Subject
    request_type: type[msgspec.Struct]
    response_type: type[msgspec.Struct]
    items: str | None
    result: Callable[[msgspec.Struct], dict[str, Any]] = _plain
    params: Callable[[dict[str, Any]], dict[str, Any]] = dict


METHODS: Final[dict[str, Method]] = {
    "search_entities": Method(
        Subject.GRAPH_SEARCH, GraphSearchRequest, GraphSearchResponse, "entities"
    ),
    "traverse_graph": Method(
        Subject.GRAPH_TRAVERSE,
        GraphTraverseRequest,
        GraphTraverseResponse,
        "nodes",
        result=_traverse_result,
    ),
    "retrieve_entity": Method(
        Subject.GRAPH_RETRIEVE, GraphRetrieveRequest, GraphRetrieveResponse, "entities"
    ),
    "diff_graph": Method(Subject.GRAPH_DIFF, GraphDiffRequest, GraphDiffResponse, "entities"),
    "rebuild_index": Method(
        Subject.ADMIN_REBUILD_INDEX,
        RebuildIndexRequest,
        RebuildIndexResponse,
        None,
        result=_rebuild_result,
        params=_rebuild_params,
    ),
    "research": Method(Subject.RESEARCH, RepoReaderRequest, RepoReaderResponse, "artifacts"),
    "code_search": Method(Subject.CODE_SEARCH, CodeSearchRequest, CodeSearchResponse, "hits"),
    "code_read": Method(Subject.CODE_READ, CodeReadRequest, CodeReadResponse, None),
    "code_list": Method(Subject.CODE_LIST, CodeListRequest, CodeListResponse, "entries"),
    "git_history": Method(Subject.GIT_HISTORY, GitHistoryRequest, GitHistoryResponse, "commits"),
    "git_churn": Method(Subject.GIT_CHURN, GitChurnRequest, GitChurnResponse, "modules"),
    "repo_status": Method(Subject.REPO_STATUS, RepoStatusRequest, RepoStatusResponse, None),
}
