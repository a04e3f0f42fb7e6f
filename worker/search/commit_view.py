"""The per-commit part of an index: which paths exist, which blob each is, and a path index.

    <commit dir>/manifest.json   format_version, repo_id, commit, segments (ids, in order),
                                 components {name: file}
    paths.arrow          path, oid, segment (index into segments), blob (row in that segment),
                         len_path, len_name
    path_terms.arrow     term (sorted), start, count  -> a slice of path_postings
    path_postings.arrow  path (row in paths.arrow), tf_path, tf_name

Only paths whose blob is indexed (text, not oversized) are listed. The path index is small
(a few terms per path), so it is rebuilt per commit; everything heavy lives in the segments.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import pyarrow as pa

from worker.search.segment import (
    FORMAT_VERSION,
    TermDictionary,
    UnknownFormat,
    atomic_publish,
    column,
    read_table,
    write_table,
)
from worker.search.tokens import text_terms

COMPONENTS: Final = ("paths", "path_terms", "path_postings")


@dataclass(frozen=True, slots=True)
class CommitTables:
    """The Arrow tables of one commit's view."""

    paths: pa.Table
    path_terms: pa.Table
    path_postings: pa.Table


def _name_stem(name: str) -> str:
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem else name


def build_commit_tables(
    entries: Sequence[tuple[str, bytes]],
    locations: dict[bytes, tuple[int, int]],
) -> CommitTables:
    """The commit's view from its (path, oid) entries and where each indexed oid lives."""
    paths: list[str] = []
    oids: list[bytes] = []
    seg: list[int] = []
    blob: list[int] = []
    for path, oid in entries:
        where = locations.get(oid)
        if where is None:
            continue
        paths.append(path)
        oids.append(oid)
        seg.append(where[0])
        blob.append(where[1])
    # Directories repeat across thousands of paths: analyse each once, ids not strings after.
    term_ids: dict[str, int] = {}
    dir_cache: dict[str, list[int]] = {}
    rows: list[int] = []
    terms: list[int] = []
    fields: list[int] = []
    len_path = np.zeros(len(paths), dtype=np.int32)
    len_name = np.zeros(len(paths), dtype=np.int32)

    def ids(text: str) -> list[int]:
        return [term_ids.setdefault(t, len(term_ids)) for t in text_terms(text)]

    for i, path in enumerate(paths):
        directory, _, name = path.rpartition("/")
        dir_ids = dir_cache.get(directory)
        if dir_ids is None:
            dir_ids = dir_cache[directory] = ids(directory)
        path_ids = dir_ids + ids(name)
        name_ids = ids(_name_stem(name))
        len_path[i] = len(path_ids)
        len_name[i] = len(name_ids)
        rows.extend([i] * (len(path_ids) + len(name_ids)))
        terms.extend(path_ids)
        terms.extend(name_ids)
        fields.extend([0] * len(path_ids))
        fields.extend([1] * len(name_ids))
    vocab = sorted(term_ids, key=str.encode)
    rank = np.empty(len(vocab), dtype=np.int64)
    rank[[term_ids[t] for t in vocab]] = np.arange(len(vocab), dtype=np.int64)
    key = (rank[np.asarray(terms, dtype=np.int64)] << 32) | np.asarray(rows, dtype=np.int64)
    field = np.asarray(fields, dtype=np.int64)
    unique, inverse = np.unique(key, return_inverse=True)
    tf_path = np.bincount(inverse, weights=field == 0, minlength=len(unique))
    tf_name = np.bincount(inverse, weights=field == 1, minlength=len(unique))
    term_of = unique >> 32
    sizes = np.bincount(term_of, minlength=len(vocab)).astype(np.int32)
    starts = np.zeros(len(vocab), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    sorted_terms = vocab
    post_path = (unique & 0xFFFFFFFF).astype(np.int32)
    post_tf_path = np.minimum(tf_path, 255).astype(np.uint8)
    post_tf_name = np.minimum(tf_name, 255).astype(np.uint8)
    return CommitTables(
        paths=pa.table(
            {
                "path": pa.array(paths, pa.string()),
                "oid": pa.array(oids, pa.binary(20)),
                "segment": pa.array(seg, pa.int32()),
                "blob": pa.array(blob, pa.int32()),
                "len_path": len_path,
                "len_name": len_name,
            }
        ),
        path_terms=pa.table(
            {
                "term": pa.array(sorted_terms, pa.string()),
                "start": starts,
                "count": sizes,
            }
        ),
        path_postings=pa.table(
            {
                "path": post_path,
                "tf_path": post_tf_path,
                "tf_name": post_tf_name,
            }
        ),
    )


def write_commit(
    commits_dir: Path, repo_id: str, commit: str, segment_ids: list[str], tables: CommitTables
) -> Path:
    """Persist a commit's view and manifest atomically under `commits_dir/<commit>`."""
    commits_dir.mkdir(parents=True, exist_ok=True)
    final = commits_dir / commit
    tmp = Path(tempfile.mkdtemp(prefix=f".{commit}.", dir=commits_dir))
    for name in COMPONENTS:
        write_table(tmp / f"{name}.arrow", getattr(tables, name))
    manifest = {
        "format_version": FORMAT_VERSION,
        "repo_id": repo_id,
        "commit": commit,
        "segments": segment_ids,
        "components": {name: f"{name}.arrow" for name in COMPONENTS},
        "n_paths": tables.paths.num_rows,
    }
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
    if final.exists():
        # A rebuild (new segments after a merge) replaces the old view: swap, then drop it.
        old = Path(tempfile.mkdtemp(prefix=f".{commit}.old.", dir=commits_dir))
        final.rename(old / "view")
        atomic_publish(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        atomic_publish(tmp, final)
    return final


def read_manifest(commit_dir: Path) -> dict[str, Any]:
    """A commit's manifest; raises UnknownFormat for another format version."""
    manifest: dict[str, Any] = json.loads((commit_dir / "manifest.json").read_text())
    if manifest.get("format_version") != FORMAT_VERSION:
        raise UnknownFormat(
            f"commit index {commit_dir.name} has format {manifest.get('format_version')}"
        )
    return manifest


def read_commit_tables(commit_dir: Path, manifest: dict[str, Any]) -> CommitTables:
    """Memory-map a stored commit view."""
    files: dict[str, str] = manifest["components"]
    return CommitTables(**{name: read_table(commit_dir / files[name]) for name in COMPONENTS})


class PathIndex:
    """Term lookup over the commit's path index (a `Segment`-like view of its tables)."""

    def __init__(self, tables: CommitTables) -> None:
        self.paths = tables.paths.column("path")
        self.n_paths = tables.paths.num_rows
        self.segment = column(tables.paths, "segment")
        self.blob = column(tables.paths, "blob")
        self.len_path = column(tables.paths, "len_path")
        self.len_name = column(tables.paths, "len_name")
        self.post_path = column(tables.path_postings, "path")
        self.post_tf_path = column(tables.path_postings, "tf_path")
        self.post_tf_name = column(tables.path_postings, "tf_name")
        self.lookup = TermDictionary(tables.path_terms)

    def path(self, row: int) -> str:
        """The path at a row of the paths table."""
        return self.paths[row].as_py()  # type: ignore[no-any-return]


__all__ = [
    "COMPONENTS",
    "CommitTables",
    "PathIndex",
    "UnknownFormat",
    "build_commit_tables",
    "read_commit_tables",
    "read_manifest",
    "write_commit",
]
