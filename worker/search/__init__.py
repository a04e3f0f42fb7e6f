"""Search engine of repo-reader: per-commit indexes of definition-level chunks, BM25F ranking."""

from worker.search.build import build_commit_index
from worker.search.build_workers import start_build_workers, wait_for_build_workers
from worker.search.ranking import CommitIndex, SearchHit
from worker.search.store import IndexStore
from worker.search.tokens import informative_terms, text_terms

__all__ = [
    "CommitIndex",
    "IndexStore",
    "SearchHit",
    "build_commit_index",
    "informative_terms",
    "start_build_workers",
    "text_terms",
    "wait_for_build_workers",
]
