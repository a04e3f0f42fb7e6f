"""Tests of the per-subject check table the mock runs: every tool, the service's own checks."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.registry import MESSAGES
from contracts.subjects import WORKER_SUBJECTS, Subject
from worker.config import ToolLimits
from worker.errors import InvalidRequest, LimitExceeded
from worker.testing.checks import check_tool

LIMITS = ToolLimits()


def request(subject: Subject, **fields: Any) -> Any:
    return msgspec.convert({"repo": "acme/x", **fields}, MESSAGES[subject][0])


@pytest.mark.parametrize(
    ("subject", "fields", "cap"),
    [
        (Subject.CODE_SEARCH, {"query": "x"}, LIMITS.search_default_results),
        (Subject.CODE_SEARCH, {"query": "x", "max_results": 7}, 7),
        (Subject.CODE_READ, {"path": "a.py"}, None),
        (Subject.CODE_LIST, {}, LIMITS.list_default_entries),
        (Subject.GIT_HISTORY, {"limit": 4}, 4),
        (Subject.GIT_CHURN, {}, LIMITS.churn_default_modules),
        (Subject.REPO_STATUS, {}, None),
        (Subject.GRAPH_SEARCH, {"query": "x", "limit": 3}, 3),
        (Subject.GRAPH_TRAVERSE, {"start_entities": ["a"]}, LIMITS.graph_default_nodes),
        (Subject.GRAPH_RETRIEVE, {"entity_ids": ["a"]}, None),
        (Subject.GRAPH_DIFF, {"base": "a", "head": "b", "max_changes": 9}, 9),
    ],
)
def test_each_tool_gives_its_answers_cap(
    subject: Subject, fields: dict[str, Any], cap: int | None
) -> None:
    """A valid request passes and gives how many items its answer's list may hold."""
    assert check_tool(subject, request(subject, **fields), LIMITS) == cap


def test_every_tool_subject_is_covered() -> None:
    """The table knows every subject a worker serves but research (checked on its own)."""
    covered = {Subject.CODE_SEARCH, Subject.CODE_READ, Subject.CODE_LIST, Subject.GIT_HISTORY,
               Subject.GIT_CHURN, Subject.REPO_STATUS, Subject.GRAPH_SEARCH,
               Subject.GRAPH_TRAVERSE, Subject.GRAPH_RETRIEVE, Subject.GRAPH_DIFF}  # fmt: skip
    assert covered == set(WORKER_SUBJECTS) - {Subject.RESEARCH}


@pytest.mark.parametrize(
    ("subject", "fields", "exception"),
    [
        (Subject.CODE_SEARCH, {"query": "(a)\\1", "regex": True}, InvalidRequest),
        (Subject.CODE_READ, {"path": "../a"}, InvalidRequest),
        (Subject.CODE_READ, {"path": "a", "start_line": 1, "end_line": 5000}, LimitExceeded),
        (Subject.CODE_LIST, {"max_entries": 10_000}, LimitExceeded),
        (Subject.GIT_CHURN, {"time_window": "5y"}, LimitExceeded),
        (Subject.GRAPH_TRAVERSE, {"start_entities": ["a"], "max_nodes": 5000}, LimitExceeded),
    ],
)
def test_the_services_checks_refuse(
    subject: Subject, fields: dict[str, Any], exception: type[Exception]
) -> None:
    """A request the capability refuses is refused here with the same exception."""
    with pytest.raises(exception):
        check_tool(subject, request(subject, **fields), LIMITS)
