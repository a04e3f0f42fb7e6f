"""The index: one analysis per blob (`analysis`), stored once in segments with a view per
commit (`store`), and the views queries read (`views`: text ranking, trigram search)."""

from worker.index.analysis.tokens import informative_terms, text_terms
from worker.index.store.build import build_commit_index
from worker.index.store.build_workers import start_build_workers, wait_for_build_workers
from worker.index.store.index_store import IndexStore
from worker.index.views.ranking import SearchHit
from worker.index.views.text import CommitIndex

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
