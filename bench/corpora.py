"""Prepare benchmark corpora: pinned registry archives turned into reproducible git repositories.

Every corpus comes from a package registry only (PyPI sdists, Debian's ``linux-source``), is
checked against a pinned sha256, and is committed with a fixed author, committer and date, so
the commit ids are the same on every machine; they are pinned too, and a build that does not
reproduce them fails. Repositories are bare, laid out like the mirror's cache:
``<work>/repos/<owner>/<name>.git`` with ``refs/heads/main`` at the release snapshot and, for
corpora with edits, ``refs/heads/edited`` one commit later (for incremental indexing).

    python -m bench.corpora [--work DIR] [django flask requests click linux ...]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import shutil
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pygit2

from bench.corpus_sources import CorpusError, fetch_archive, open_source_tarball
from bench.corpus_specs import CORPORA, CorpusSpec, FileEdit

DEFAULT_WORK = Path(__file__).resolve().parent / ".corpora"
BASE_REF = "refs/heads/main"
EDITED_REF = "refs/heads/edited"
STATS_FILE = "bench-corpus.json"

# 2024-01-01T00:00:00Z; the edited commit is one day later.
BASE_TIME = 1_704_067_200
EDITED_TIME = BASE_TIME + 86_400
SIGNATURE_NAME = "repo-reader bench"
SIGNATURE_EMAIL = "bench@repo-reader.invalid"


@dataclass(frozen=True)
class PreparedCorpus:
    """A corpus ready on disk: where it is, its commits and how big it is."""

    name: str
    version: str
    path: Path
    base_commit: str
    edited_commit: str | None
    files: int
    source_bytes: int
    prepare_seconds: float
    reused: bool


def _say(message: str) -> None:
    print(message, flush=True)


def _strip_top(name: str, top: str | None) -> tuple[str, str]:
    head, _, rest = name.removeprefix("./").partition("/")
    if top is not None and head != top:
        raise CorpusError(f"archive member {name!r} is outside the top directory {top!r}")
    return head, rest


def index_tarball(repo: pygit2.Repository, tree: tarfile.TarFile) -> tuple[pygit2.Index, int]:
    """Write every file of a streamed tarball as a blob; return the index and total bytes.

    The single top directory is stripped. Symlinks become link blobs, hard links reuse their
    target's blob, directories and special files are skipped (git cannot hold them).
    """
    index = pygit2.Index()
    blob_of: dict[str, tuple[pygit2.Oid, pygit2.enums.FileMode]] = {}
    top: str | None = None
    total = 0
    for member in tree:
        top, path = _strip_top(member.name, top)
        if not path or member.isdir():
            continue
        mode: pygit2.enums.FileMode
        if member.isfile():
            stream = tree.extractfile(member)
            data = stream.read() if stream is not None else b""
            mode = (
                pygit2.enums.FileMode.BLOB_EXECUTABLE
                if member.mode & 0o111
                else pygit2.enums.FileMode.BLOB
            )
            oid = repo.create_blob(data)
            total += len(data)
        elif member.issym():
            oid, mode = repo.create_blob(member.linkname.encode()), pygit2.enums.FileMode.LINK
        elif member.islnk():
            _, target = _strip_top(member.linkname, top)
            if target not in blob_of:
                raise CorpusError(f"hard link {member.name!r} to an unseen file {target!r}")
            oid, mode = blob_of[target]
        else:
            continue
        blob_of[path] = (oid, mode)
        index.add(pygit2.IndexEntry(path, oid, mode))
    return index, total


def _signature(when: int) -> pygit2.Signature:
    return pygit2.Signature(SIGNATURE_NAME, SIGNATURE_EMAIL, when, 0)


def _commit(
    repo: pygit2.Repository,
    index: pygit2.Index,
    *,
    ref: str,
    message: str,
    when: int,
    parents: list[pygit2.Oid],
) -> pygit2.Oid:
    tree = index.write_tree(repo)
    author = _signature(when)
    return repo.create_commit(ref, author, author, message, tree, parents)


def apply_edits(repo: pygit2.Repository, index: pygit2.Index, edits: Sequence[FileEdit]) -> None:
    """Apply deterministic file edits (append, delete, add) to an index."""
    for edit in edits:
        present = edit.path in index
        if edit.action == "add":
            if present:
                raise CorpusError(f"edit adds {edit.path}, which already exists")
            oid = repo.create_blob(edit.text.encode())
            index.add(pygit2.IndexEntry(edit.path, oid, pygit2.enums.FileMode.BLOB))
            continue
        if not present:
            raise CorpusError(f"edit {edit.action}s {edit.path}, which does not exist")
        if edit.action == "delete":
            index.remove(edit.path)
        else:
            entry = index[edit.path]
            blob = repo[entry.id]
            assert isinstance(blob, pygit2.Blob)
            oid = repo.create_blob(blob.data + edit.text.encode())
            index.add(pygit2.IndexEntry(edit.path, oid, entry.mode))


def _ref_target(repo: pygit2.Repository, ref: str) -> str | None:
    try:
        return str(repo.references[ref].target)
    except KeyError:
        return None


def _objects_complete(repo: pygit2.Repository, commit_id: str) -> bool:
    """Return whether a commit, its trees and every blob they name are in the object store."""
    commit = repo.get(commit_id)
    if not isinstance(commit, pygit2.Commit):
        return False
    pending = [commit.tree_id]
    while pending:
        tree = repo.get(pending.pop())
        if not isinstance(tree, pygit2.Tree):
            return False
        for entry in tree:
            if entry.type_str == "tree":
                pending.append(entry.id)
            elif entry.id not in repo.odb:
                return False
    return True


def _reuse(spec: CorpusSpec, path: Path) -> PreparedCorpus | None:
    """Return the prepared corpus if the repository on disk matches the spec's pins."""
    stats_path = path / STATS_FILE
    if not stats_path.is_file():
        return None
    try:
        repo = pygit2.Repository(str(path))
        stats = json.loads(stats_path.read_text())
    except (pygit2.GitError, ValueError):
        return None
    base = _ref_target(repo, BASE_REF)
    edited = _ref_target(repo, EDITED_REF)
    if base is None or base != stats.get("base_commit"):
        return None
    if spec.base_commit and base != spec.base_commit:
        return None
    if spec.edits and (edited is None or (spec.edited_commit and edited != spec.edited_commit)):
        return None
    if not all(_objects_complete(repo, commit) for commit in filter(None, (base, edited))):
        return None
    return PreparedCorpus(
        name=spec.name,
        version=spec.source.version,
        path=path,
        base_commit=base,
        edited_commit=edited if spec.edits else None,
        files=int(stats["files"]),
        source_bytes=int(stats["source_bytes"]),
        prepare_seconds=float(stats["prepare_seconds"]),
        reused=True,
    )


def _check_pin(spec: CorpusSpec, what: str, pinned: str, actual: str) -> None:
    if not pinned:
        _say(f"  {spec.name}: {what} commit is not pinned; built {actual}")
    elif pinned != actual:
        raise CorpusError(
            f"{spec.name}: {what} commit {actual} does not reproduce the pinned {pinned}"
        )


def repo_path(spec: CorpusSpec, work: Path) -> Path:
    """Return where a corpus's bare repository lives under a work dir."""
    return work / "repos" / spec.owner / f"{spec.name}.git"


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on a file, so concurrent runs build a corpus only once."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build(spec: CorpusSpec, archive: Path, building: Path) -> dict[str, object]:
    """Build a corpus's repository in `building`; return its stats (commits, files, bytes)."""
    repo = pygit2.init_repository(str(building), bare=True, initial_head="main")
    with open_source_tarball(spec.source, archive) as tree:
        index, source_bytes = index_tarball(repo, tree)
    files = len(index)
    message = (
        f"Import {spec.name} {spec.source.version}\n\n"
        f"From {spec.source.filename} (sha256 {spec.source.sha256}).\n"
    )
    base = _commit(repo, index, ref=BASE_REF, message=message, when=BASE_TIME, parents=[])
    _check_pin(spec, "base", spec.base_commit, str(base))
    edited: pygit2.Oid | None = None
    if spec.edits:
        apply_edits(repo, index, spec.edits)
        message = f"Edit {len(spec.edits)} files of {spec.name} for incremental indexing\n"
        edited = _commit(
            repo, index, ref=EDITED_REF, message=message, when=EDITED_TIME, parents=[base]
        )
        _check_pin(spec, "edited", spec.edited_commit, str(edited))
    return {
        "base_commit": str(base),
        "edited_commit": str(edited) if edited else None,
        "files": files,
        "source_bytes": source_bytes,
    }


def prepare_corpus(spec: CorpusSpec, work: Path) -> PreparedCorpus:
    """Build (or reuse, if already built and verified) one corpus's git repository."""
    path = repo_path(spec, work)
    with _exclusive(work / "locks" / f"{spec.owner}-{spec.name}.lock"):
        reused = _reuse(spec, path)
        if reused is not None:
            _say(f"{spec.name}: already prepared and verified at {path}")
            return reused
        _say(f"{spec.name}: preparing {spec.source.filename}")
        started = time.monotonic()
        archive = fetch_archive(spec.source, work / "downloads")
        _say(f"  {archive.name}: sha256 verified ({archive.stat().st_size / 1e6:.1f} MB)")
        path.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f"{path.name}.building-", dir=path.parent))
        try:
            stats = _build(spec, archive, building)
            seconds = time.monotonic() - started
            stats["prepare_seconds"] = round(seconds, 1)
            (building / STATS_FILE).write_text(json.dumps(stats, indent=2) + "\n")
            shutil.rmtree(path, ignore_errors=True)
            building.replace(path)
        finally:
            shutil.rmtree(building, ignore_errors=True)
        prepared = _reuse(spec, path)
    if prepared is None:
        raise CorpusError(f"{spec.name}: the repository built at {path} does not verify")
    _say(
        f"  {spec.name}: {prepared.files} files, {prepared.source_bytes / 1e6:.1f} MB, "
        f"took {seconds:.1f} s"
    )
    return replace(prepared, prepare_seconds=seconds, reused=False)


def prepare(names: Sequence[str], work: Path = DEFAULT_WORK) -> dict[str, PreparedCorpus]:
    """Prepare the named corpora (all when empty), in the order given."""
    unknown = sorted(set(names) - set(CORPORA))
    if unknown:
        raise CorpusError(f"unknown corpora {unknown}; known: {sorted(CORPORA)}")
    return {name: prepare_corpus(CORPORA[name], work) for name in (names or list(CORPORA))}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: prepare corpora and print their paths and commit ids."""
    parser = argparse.ArgumentParser(prog="python -m bench.corpora", description=__doc__)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="work directory")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"of {sorted(CORPORA)}")
    args = parser.parse_args(argv)
    try:
        prepared = prepare(args.names, args.work.resolve())
    except CorpusError as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    print()
    print(f"{'corpus':<10} {'version':<10} {'files':>7} {'MB':>8} {'prep s':>7}  commits / path")
    for corpus in prepared.values():
        print(
            f"{corpus.name:<10} {corpus.version:<10} {corpus.files:>7} "
            f"{corpus.source_bytes / 1e6:>8.1f} {corpus.prepare_seconds:>7.1f}  "
            f"main={corpus.base_commit}"
            + (f" edited={corpus.edited_commit}" if corpus.edited_commit else "")
        )
        print(f"{'':<46}{corpus.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
