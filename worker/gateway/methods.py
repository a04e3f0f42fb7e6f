"""The JSON-RPC methods of the gateway: which subject each calls, and the result it returns.

Seed 003's four methods keep their parameter names (each also takes `repo` and `revision`:
the service answers only for registered repositories at pinned commits) and their result
shapes; so do seed 002's `trigger_doc_regeneration` and `get_repo_status` (`repo_path` names
a registered repository). `research` and the agent tools take their NATS request's fields
as parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from contracts.admin import RebuildIndexResponse
from contracts.docs import DocsRegenerateResponse
from contracts.registry import BATCHED, MESSAGES
from contracts.repo import RepoStatusResponse
from contracts.subjects import Subject
from worker.service.replies import answer_fields


def _traverse_result(response: msgspec.Struct) -> dict[str, Any]:
    fields = answer_fields(response)
    return {
        "subgraph": {"nodes": fields.pop("nodes"), "edges": fields.pop("edges")},
        **fields,
    }


def _repo_path(params: dict[str, Any]) -> dict[str, Any]:
    """Seed 002's `repo_path` as the request's `repo`: a registered repository, never a path
    on disk (the validation that follows refuses anything else)."""
    params = dict(params)
    if "repo_path" in params and "repo" not in params:
        params["repo"] = params.pop("repo_path")
    return params


def _regeneration_result(response: msgspec.Struct) -> dict[str, Any]:
    """Seed 002's answer first, then where the documents are."""
    assert isinstance(response, DocsRegenerateResponse)
    fields = answer_fields(response)
    return {
        "success": fields.pop("success"),
        "docs_regenerated": fields.pop("docs_regenerated"),
        **({"reason_skipped": response.reason_skipped} if response.reason_skipped else {}),
        **{k: v for k, v in fields.items() if k != "reason_skipped"},
    }


def _seed_status(response: msgspec.Struct) -> dict[str, Any]:
    """Seed 002's get_repo_status shape; `next_commit_in_seconds` is null with no schedule."""
    assert isinstance(response, RepoStatusResponse)
    return {
        "is_watching": response.is_watching,
        "uncommitted_files": response.docs_out_of_date,
        "next_commit_in_seconds": response.next_regeneration_in_seconds,
        "next_sync_in_seconds": response.next_sync_in_seconds,
        "repo": response.repo,
        "head": response.head,
        "docs_commit": response.docs_commit,
        "docs_out_of_date_types": list(response.docs_out_of_date_types),
    }


def _rebuild_params(params: dict[str, Any]) -> dict[str, Any]:
    """Seed 003's rebuild_index parameters onto `admin.rebuild_index`'s request.

    `repo_path` names a registered repository (the mirror owns every path on disk);
    languages and an output path are not the caller's to choose, and are refused.
    """
    params = _repo_path(params)
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
    result: Callable[[msgspec.Struct], dict[str, Any]] = answer_fields
    params: Callable[[dict[str, Any]], dict[str, Any]] = dict

    @property
    def request_type(self) -> type[msgspec.Struct]:
        return MESSAGES[self.subject][0]

    @property
    def response_type(self) -> type[msgspec.Struct]:
        return MESSAGES[self.subject][1]

    @property
    def items(self) -> str | None:
        return BATCHED[self.subject]


METHODS: Final[dict[str, Method]] = {
    "search_entities": Method(Subject.GRAPH_SEARCH),
    "traverse_graph": Method(Subject.GRAPH_TRAVERSE, result=_traverse_result),
    "retrieve_entity": Method(Subject.GRAPH_RETRIEVE),
    "diff_graph": Method(Subject.GRAPH_DIFF),
    "rebuild_index": Method(
        Subject.ADMIN_REBUILD_INDEX, result=_rebuild_result, params=_rebuild_params
    ),
    "research": Method(Subject.RESEARCH),
    "code_search": Method(Subject.CODE_SEARCH),
    "code_read": Method(Subject.CODE_READ),
    "code_list": Method(Subject.CODE_LIST),
    "git_history": Method(Subject.GIT_HISTORY),
    "git_churn": Method(Subject.GIT_CHURN),
    "repo_status": Method(Subject.REPO_STATUS),
    "docs_regenerate": Method(Subject.DOCS_REGENERATE),
    "trigger_doc_regeneration": Method(
        Subject.DOCS_REGENERATE, result=_regeneration_result, params=_repo_path
    ),
    "get_repo_status": Method(Subject.REPO_STATUS, result=_seed_status, params=_repo_path),
}
