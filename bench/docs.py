"""Docs engine benchmark: each document for Flask and Linux (size, time), and the engine's
skip/regenerate answers across two syncs.

    python -m bench.docs [--corpus flask] [--corpus linux] [--work DIR]

Each corpus (from `bench.corpora`) is mirrored from an upstream of its own whose `main` starts
at the release snapshot (its objects borrowed from the corpus, not copied). Sync 1 mirrors and
indexes it; every document is generated (timed one by one); the same request is sent again (the
engine should skip). Then upstream `main` moves one commit on — the corpus's pinned edits where
it has them (Linux: five C files), else a README change — and sync 2 is followed by the same
request: only documents whose inputs changed are generated again. A cache left by an earlier
run is reused (its index is), its docs ref dropped first so every document is generated anew.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pygit2

from bench.corpora import DEFAULT_WORK, PreparedCorpus, prepare
from bench.tables import render
from contracts.docs import DOC_TYPES, DOCS_REF
from worker.docs.engine import Regeneration
from worker.mirror.sync import Mirror

README_EDIT = "\nThis line was added by bench.docs, one commit after the release.\n"


def upstream(corpus: PreparedCorpus, where: Path) -> pygit2.Repository:
    """A bare repository whose objects are the corpus's and whose main is its release."""
    if where.exists():
        shutil.rmtree(where)
    repo = pygit2.init_repository(str(where), bare=True, initial_head="main")
    (where / "objects" / "info" / "alternates").write_text(
        str((corpus.path / "objects").resolve()) + "\n"
    )
    repo = pygit2.Repository(str(where))
    repo.references.create("refs/heads/main", pygit2.Oid(hex=corpus.base_commit))
    return repo


def next_commit(corpus: PreparedCorpus, repo: pygit2.Repository) -> str:
    """Move upstream main one commit on: the corpus's edited commit, else a README change."""
    if corpus.edited_commit:
        target = corpus.edited_commit
    else:
        base = repo[corpus.base_commit].peel(pygit2.Commit)
        name = next(e.name for e in base.tree if (e.name or "").lower().startswith("readme"))
        data = repo[base.tree[name].id].peel(pygit2.Blob).data + README_EDIT.encode()
        builder = repo.TreeBuilder(base.tree)
        builder.insert(name, repo.create_blob(data), pygit2.enums.FileMode.BLOB)
        when = pygit2.Signature("repo-reader bench", "bench@repo-reader.invalid", 1_704_153_600, 0)
        target = str(
            repo.create_commit(None, when, when, "bench.docs edit", builder.write(), [base.id])
        )
    repo.references["refs/heads/main"].set_target(pygit2.Oid(hex=target))
    return target


def mirror_of(corpus: PreparedCorpus, name: str, cache: Path, source: Path) -> Mirror:
    """The mirror of `source` in `cache` (reused when it exists), its docs ref dropped."""
    cache.mkdir(parents=True, exist_ok=True)
    config = cache / "repo-reader.toml"
    if not config.exists():
        config.write_text("[mirror]\nindex_workers = 2\n")
        Mirror(cache, config).add(name, str(source))
    mirror = Mirror(cache, config)
    repo_dir = mirror.layout.repo_dir(name)
    if repo_dir.is_dir():
        docs = pygit2.Repository(str(repo_dir)).references.get(DOCS_REF)
        if docs is not None:
            docs.delete()
    return mirror


def answer(done: Regeneration) -> str:
    """The engine's answer, short."""
    written = ", ".join(done.regenerated) or "nothing"
    skipped = f"; skipped: {done.reason_skipped}" if done.reason_skipped else ""
    return f"regenerated {written}{skipped}"


def corpus_rows(corpus: PreparedCorpus, work: Path) -> list[tuple[str, ...]]:
    """The table rows of one corpus."""
    name = f"bench/{corpus.name}"
    home = work / "docs" / corpus.name
    source = home / "upstream.git"
    repo = upstream(corpus, source)
    mirror = mirror_of(corpus, name, home / "cache", source)
    print(f"[{corpus.name}] sync 1 (mirror and index {corpus.base_commit[:12]})", flush=True)
    started = time.monotonic()
    (first_sync,) = mirror.sync([name])
    sync_seconds = time.monotonic() - started
    print(f"[{corpus.name}] every document", flush=True)
    first = mirror.regenerate_docs(name, DOC_TYPES)
    rows: list[tuple[str, ...]] = [
        (
            corpus.name,
            "sync 1",
            f"{first_sync.head[:12]}",
            f"{sync_seconds:.1f} s",
            "mirror and index (reused when cached)",
        )
    ]
    for document in first.documents:
        rows.append(
            (
                corpus.name,
                document.doc_type,
                f"{document.size / 1024:.1f} KiB",
                f"{document.seconds:.2f} s",
                document.path,
            )
        )
    again = mirror.regenerate_docs(name, DOC_TYPES)
    rows.append(
        (corpus.name, "same head, asked again", "", f"{again.seconds:.2f} s", answer(again))
    )
    moved = next_commit(corpus, repo)
    print(f"[{corpus.name}] sync 2 (upstream moved to {moved[:12]})", flush=True)
    started = time.monotonic()
    (second_sync,) = mirror.sync([name])
    rows.append(
        (
            corpus.name,
            "sync 2",
            f"{second_sync.head[:12]}",
            f"{time.monotonic() - started:.1f} s",
            "fetch and index the new blobs",
        )
    )
    second = mirror.regenerate_docs(name, DOC_TYPES)
    rows.append((corpus.name, "after sync 2", "", f"{second.seconds:.2f} s", answer(second)))
    third = mirror.regenerate_docs(name, DOC_TYPES)
    rows.append((corpus.name, "asked again", "", f"{third.seconds:.2f} s", answer(third)))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.docs", description=__doc__)
    parser.add_argument("--corpus", action="append", choices=("flask", "linux", "django"))
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    args = parser.parse_args(argv)
    work = args.work.resolve()
    names = args.corpus or ["flask", "linux"]
    corpora = prepare(names, work)
    rows: list[tuple[str, ...]] = [("corpus", "document or step", "size / head", "time", "what")]
    for name in names:
        rows += corpus_rows(corpora[name], work)
    print()
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
