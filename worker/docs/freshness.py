"""How the docs ref stands against a head: which documents it lacks or holds from old inputs.

Reads only; workers answer `repo.status` with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pygit2

from contracts.docs import DocType
from worker.config import Config
from worker.docs.kinds import fingerprints
from worker.docs.manifest import DocsState, read_docs


def out_of_date(state: DocsState | None, current: dict[DocType, str]) -> list[DocType]:
    """The documents of `current` (type -> fingerprint at the head) that the docs ref lacks or
    holds from other inputs."""
    records = state.manifest.documents if state is not None else {}
    return [
        doc_type
        for doc_type, inputs in current.items()
        if doc_type not in records or records[doc_type].inputs != inputs
    ]


@dataclass(frozen=True, slots=True)
class Freshness:
    """How the docs ref stands against a head, for `repo.status`."""

    docs_commit: str | None
    stale: list[DocType]


def freshness(
    repo: pygit2.Repository, head: str, config: Config, doc_types: Sequence[DocType]
) -> Freshness:
    """Which of `doc_types` the docs ref lacks or holds from inputs that changed by `head`."""
    docs = read_docs(repo)
    current = fingerprints(repo, head, config, tuple(dict.fromkeys(doc_types)))
    return Freshness(
        docs_commit=docs.commit if docs is not None else None, stale=out_of_date(docs, current)
    )
