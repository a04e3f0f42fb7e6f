"""The quality benchmark's baseline: plain BM25 (bm25s) over the whole text of each file."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
import pygit2

MAX_FILE_BYTES = 1 << 20


def iter_text_files(
    repo: pygit2.Repository, commit: str, max_bytes: int = MAX_FILE_BYTES
) -> Iterator[tuple[str, bytes]]:
    """Yield (path, content) of every text file of a commit under a size limit, in tree order.

    Symlinks, submodules, binary blobs (libgit2's heuristic) and blobs of ``max_bytes`` or more
    are skipped.
    """
    for path, _, data in iter_text_blobs(repo, commit, max_bytes):
        yield path, data


def iter_text_blobs(
    repo: pygit2.Repository, commit: str, max_bytes: int = MAX_FILE_BYTES
) -> Iterator[tuple[str, str, bytes]]:
    """`iter_text_files` with each file's blob id: (path, blob id, content)."""
    root = repo.revparse_single(commit).peel(pygit2.Tree)
    stack: list[tuple[str, pygit2.Tree]] = [("", root)]
    while stack:
        prefix, tree = stack.pop()
        subtrees: list[tuple[str, pygit2.Tree]] = []
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                subtree = repo[entry.id]
                assert isinstance(subtree, pygit2.Tree)
                subtrees.append((f"{path}/", subtree))
            elif entry.type_str == "blob" and entry.filemode != pygit2.enums.FileMode.LINK:
                blob = repo[entry.id]
                assert isinstance(blob, pygit2.Blob)
                if blob.size < max_bytes and not blob.is_binary:
                    yield path, str(entry.id), blob.data
        stack.extend(reversed(subtrees))


@dataclass
class _Index:
    paths: list[str]
    retriever: bm25s.BM25


class BM25Baseline:
    """Rank a commit's files for a query with BM25 over their whole text.

    bm25s's default tokenizer and English stop words; one index per (repository, commit), built
    on first use or by `prepare`. Files that share no term with the query are not returned.
    """

    name = "bm25-baseline"

    def __init__(self, depth: int = 100) -> None:
        self.depth = depth
        self._indexes: dict[tuple[Path, str], _Index] = {}

    def prepare(self, repo_path: Path, commit: str) -> float:
        """Index a commit's text files if not done yet; return the seconds it took."""
        key = (repo_path, commit)
        if key in self._indexes:
            return 0.0
        started = time.perf_counter()
        repo = pygit2.Repository(str(repo_path))
        paths: list[str] = []
        texts: list[str] = []
        for path, data in iter_text_files(repo, commit):
            paths.append(path)
            texts.append(data.decode("utf-8", "replace"))
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
        self._indexes[key] = _Index(paths=paths, retriever=retriever)
        return time.perf_counter() - started

    def __call__(self, repo_path: Path, commit: str, query: str) -> list[str]:
        """Return the paths of the best-matching files, best first."""
        self.prepare(repo_path, commit)
        index = self._indexes[(repo_path, commit)]
        tokens = bm25s.tokenize([query], show_progress=False)
        k = min(self.depth, len(index.paths))
        if k == 0:
            return []
        documents, scores = index.retriever.retrieve(tokens, k=k, show_progress=False)
        ranked: list[str] = []
        for doc, doc_score in zip(
            np.asarray(documents)[0].tolist(), np.asarray(scores)[0].tolist(), strict=True
        ):
            if doc_score > 0:
                ranked.append(index.paths[int(doc)])
        return ranked
