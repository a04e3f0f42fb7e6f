"""The service's own request checks, subject by subject, as the mock Repo Reader runs them.

Every function here is the one the capability's handler runs (see `worker.capabilities`), so
the mock refuses what a worker refuses, with the same code, message and details. Importing
this module loads what those checks need (RE2, the query tokenizer, the SPDX parser); the
mock imports it at its first request, so that `import worker.testing` stays light.
"""

from __future__ import annotations

from typing import Any

from contracts.subjects import Subject
from worker.capabilities.code_files import check_list, check_read
from worker.capabilities.code_search.search import check_search
from worker.capabilities.graph.queries import check_traverse
from worker.capabilities.history import check_churn, check_history
from worker.capabilities.research import line_weight
from worker.capabilities.research_policy import (
    ResearchChecks,
    check_research,
    license_admits,
    licenses_not_allowed,
    omit_unlicensed,
    research_scope,
)
from worker.capabilities.tooling import check_root_license
from worker.config import ToolLimits

__all__ = [
    "ResearchChecks",
    "check_research",
    "check_root_license",
    "check_tool",
    "license_admits",
    "licenses_not_allowed",
    "line_weight",
    "omit_unlicensed",
    "research_scope",
]


def check_tool(subject: Subject, request: Any, limits: ToolLimits) -> int | None:
    """Run the request-only checks of tool `subject`; the most items its answer's list may
    hold (None: the answer is one item, or as many as asked for)."""
    match subject:
        case Subject.CODE_SEARCH:
            return check_search(request, limits)[0]
        case Subject.CODE_READ:
            check_read(request, limits)
            return None
        case Subject.CODE_LIST:
            return check_list(request, limits)[1]
        case Subject.GIT_HISTORY:
            return check_history(request, limits)[1]
        case Subject.GIT_CHURN:
            return check_churn(request, limits)[1]
        case Subject.GRAPH_SEARCH:
            return int(request.limit)  # bounded by the request type itself
        case Subject.GRAPH_TRAVERSE:
            return check_traverse(request, limits)
        case Subject.GRAPH_DIFF:
            return int(request.max_changes)  # bounded by the request type itself
        case _:
            return None  # repo.status, graph.retrieve: nothing but the request type to check
