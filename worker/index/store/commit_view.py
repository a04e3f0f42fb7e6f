"""The per-commit part of an index: which paths exist, which blob each is, and a path index.

    <commit dir>/manifest.json   format_version, repo_id, commit, segments (ids, in order),
                                 components {name: file}
    paths.arrow          path, oid, segment (index into segments), blob (row in that segment),
                         len_path, len_name
    path_terms.arrow     term (sorted), start, count  -> a slice of path_postings
    path_postings.arrow  path (row in paths.arrow), tf_path, tf_name  (one slice per term)

Only paths whose blob is indexed (text, not oversized) are listed. The path index is small
(a few terms per path), so it is rebuilt per commit; everything heavy lives in the segments.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from worker.index.analysis.postings import Postings
from worker.index.analysis.postings import postings as term_postings
from worker.index.analysis.vocabulary import TermRows
from worker.index.store.segment import (
    FORMAT_VERSION,
    TermDictionary,
    UnknownFormat,
    atomic_publish,
    column,
    one_array,
    read_table,
    set_aside,
    write_table,
)

COMPONENTS: Final = ("paths", "path_terms", "path_postings")
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class CommitTables:
    """The Arrow tables of one commit's view."""

    paths: pa.Table
    path_terms: pa.Table
    path_postings: pa.Table


def _name_stem(name: str) -> str:
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem else name


@dataclass(frozen=True, slots=True)
class PathTerms:
    """The path index of some (path, oid) entries: terms (binary, ascending), each path's
    count of term occurrences per field (whole path, file name), postings grouped by term."""

    entries: list[tuple[str, bytes]]
    """What the index was worked out from: `build_commit_tables` uses it for these only."""
    paths: pa.Array
    """The entries' paths as the paths table holds them (string)."""
    oids: pa.Array
    """The entries' blob ids as the paths table holds them (binary(20))."""
    terms: pa.Array
    len_path: I64
    len_name: I64
    postings: Postings

    def kept(self, keep: Mask) -> PathTerms:
        """The path index of the entries `keep` selects: the same as that worked out from them
        alone (their rows renumbered in order, terms no kept path has dropped)."""
        if keep.all():
            return self
        old = self.postings
        row_keep = keep[old.chunk]
        term = np.repeat(np.arange(len(old.count)), old.count)[row_keep]
        count = np.bincount(term, minlength=len(old.count))
        live = count > 0
        new = Postings(int(np.count_nonzero(live)))
        new.count = count[live].astype(np.int64)
        np.cumsum(new.count[:-1], out=new.start[1:])
        new.chunk = (np.cumsum(keep, dtype=np.int32) - 1)[old.chunk[row_keep]]
        new.tf_body = old.tf_body[row_keep]
        new.tf_sym = old.tf_sym[row_keep]
        mask = pa.array(keep)
        return PathTerms(
            entries=list(itertools.compress(self.entries, keep.tolist())),
            paths=self.paths.filter(mask),
            oids=self.oids.filter(mask),
            terms=self.terms.filter(pa.array(live)),
            len_path=self.len_path[keep],
            len_name=self.len_name[keep],
            postings=new,
        )


def path_terms(entries: Sequence[tuple[str, bytes]]) -> PathTerms:
    """The path index of the entries' paths.

    A path's terms are those of the whole path (its directories' and its name's), its name's
    those of the file name without extension; both tokenised in bulk like blob text.
    """
    paths = [path for path, _ in entries]
    rows = TermRows(2)
    for field, texts in enumerate((paths, [_name_stem(p.rpartition("/")[2]) for p in paths])):
        data, starts = _joined(texts)
        rows.add(field, data, starts, 0)
    terms = rows.analyse(len(paths))
    postings = term_postings(
        [rows.expanded(0, None), rows.expanded(1, None)], len(terms), len(paths)
    )
    return PathTerms(
        entries=list(entries),
        paths=pa.array(paths, pa.string()),
        oids=pa.array([oid for _, oid in entries], pa.binary(20)),
        terms=terms,
        len_path=rows.lengths[0],
        len_name=rows.lengths[1],
        postings=postings,
    )


def located_terms(
    entries: Sequence[tuple[str, bytes]], located: Mask, ahead: PathTerms | None
) -> PathTerms:
    """The path index of the entries `located` selects: cut from `ahead` when it was worked
    out for these same entries, else worked out here."""
    if ahead is not None and ahead.entries == list(entries):
        return ahead.kept(located)
    return path_terms(list(itertools.compress(entries, located.tolist())))


def build_commit_tables(
    entries: Sequence[tuple[str, bytes]],
    locations: dict[bytes, tuple[int, int]],
    *,
    ahead: PathTerms | None = None,
) -> CommitTables:
    """The commit's view from its (path, oid) entries and where each indexed oid lives.

    `ahead`: the path index of these same entries, worked out ahead (a build does while its
    workers analyse blobs); only the located ones are kept. Without it, worked out here.
    """
    places = [locations.get(oid) for _, oid in entries]
    located = np.fromiter((p is not None for p in places), dtype=bool, count=len(places))
    found = located_terms(entries, located, ahead)
    segment_blob = np.fromiter(
        itertools.chain.from_iterable(p for p in places if p is not None),
        dtype=np.int32,
        count=2 * len(found.paths),
    ).reshape(-1, 2)
    postings = found.postings
    return CommitTables(
        paths=pa.table(
            {
                "path": found.paths,
                "oid": found.oids,
                "segment": segment_blob[:, 0],
                "blob": segment_blob[:, 1],
                "len_path": found.len_path.astype(np.int32),
                "len_name": found.len_name.astype(np.int32),
            }
        ),
        path_terms=pa.table(
            {
                "term": found.terms.cast(pa.string()),
                "start": postings.start,
                "count": postings.count.astype(np.int32),
            }
        ),
        path_postings=pa.table(
            {
                "path": postings.chunk,
                "tf_path": np.minimum(postings.tf_body, 255).astype(np.uint8),
                "tf_name": postings.tf_sym,
            }
        ),
    )


def _joined(texts: list[str]) -> tuple[bytes, npt.NDArray[np.int64]]:
    """The texts as one buffer (a newline after each) and where each starts."""
    encoded = [t.encode() for t in texts]
    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)) + 1
    starts = np.zeros(len(encoded), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return b"\n".join(encoded) + b"\n", starts


def write_commit(
    commits_dir: Path,
    repo_id: str,
    commit: str,
    segment_ids: list[str],
    tables: CommitTables,
    *,
    fill: Callable[[Path], None] | None = None,
) -> Path:
    """Persist a commit's view and manifest atomically under `commits_dir/<commit>`.

    `fill` is given the staged directory, before its rename publishes it, to write more of
    the commit into it (the mirror's entity graph), so readers see all of it or none.
    """
    commits_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{commit}.", dir=commits_dir))
    try:
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
        if fill is not None:
            fill(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _published(tmp, commits_dir / commit)


def republish_commit(commit_dir: Path, fill: Callable[[Path], None]) -> Path:
    """Publish a stored commit's view again, with what `fill` writes into the staged copy.

    The copy links the view's own files (nothing is copied, and nothing writes to them);
    anything else the directory held (a derived view) is for `fill` to write afresh.
    Readers that mapped the stored files keep reading them unchanged.
    """
    tmp = Path(tempfile.mkdtemp(prefix=f".{commit_dir.name}.", dir=commit_dir.parent))
    try:
        for name in ("manifest.json", *(f"{c}.arrow" for c in COMPONENTS)):
            os.link(commit_dir / name, tmp / name)
        fill(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _published(tmp, commit_dir)


def _published(tmp: Path, final: Path) -> Path:
    """Rename a staged commit directory into place, replacing one published before."""
    if not final.exists():
        atomic_publish(tmp, final)
    elif exchange_directories(tmp, final):
        shutil.rmtree(tmp, ignore_errors=True)  # the old directory, now under the staged name
    else:
        # No exchange here: move the old one out, then the new one in. A reader between
        # the two renames finds no index and builds one on demand.
        old = set_aside(final)
        atomic_publish(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    return final


_AT_FDCWD: Final = -100
_RENAME_EXCHANGE: Final = 2
_NO_EXCHANGE: Final = frozenset({errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP})


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    """libc's `renameat2`, or None where there is none (another libc, another system)."""
    try:
        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    return function


def exchange_directories(a: Path, b: Path) -> bool:
    """Swap the names of two directories in one step, so that a reader of either name always
    finds one of them; False, with nothing changed, where the system or filesystem cannot.

    Linux's `renameat2` with RENAME_EXCHANGE, which Python's `os` does not offer.
    """
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    error = ctypes.get_errno()
    if error in _NO_EXCHANGE:
        return False
    raise OSError(error, os.strerror(error), str(a), None, str(b))


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
        oid_array = one_array(tables.paths.column("oid"))
        self.oids = (
            np.frombuffer(oid_array.buffers()[1], dtype=np.uint8)[
                oid_array.offset * 20 : (oid_array.offset + self.n_paths) * 20
            ].reshape(self.n_paths, 20)
            if self.n_paths
            else np.zeros((0, 20), dtype=np.uint8)
        )
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
    "PathTerms",
    "UnknownFormat",
    "build_commit_tables",
    "located_terms",
    "path_terms",
    "read_commit_tables",
    "read_manifest",
    "write_commit",
]
