"""The documentation engine: decides whether documents need writing, writes them, or says why not.

Memory-based diffing: each document's manifest entry holds its inputs' fingerprint (see
`worker.docs.kinds`). A requested document whose fingerprint at the head equals the recorded
one is not generated at all; the others are generated, and only if some document's bytes
differ is a commit written. The engine runs inside the mirror, under the repository's sync
lock, so a sync and a regeneration never interleave.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pygit2
import structlog

from contracts.docs import DocType
from worker.config import Config
from worker.docs.freshness import out_of_date
from worker.docs.kinds import KINDS, fingerprints
from worker.docs.manifest import DocsManifest, DocsState, DocumentRecord, read_docs
from worker.docs.source import BLOB_MODES, DocSource
from worker.docs.writer import write_docs
from worker.licenses.identify import is_license_file_name
from worker.repos.layout import CacheLayout, MirrorState

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    """One requested document after a regeneration."""

    doc_type: DocType
    path: str
    regenerated: bool
    generated_from: str
    size: int
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Regeneration:
    """What one regeneration did."""

    repo: str
    head: str
    docs_commit: str | None
    documents: list[DocumentOutcome]
    reason_skipped: str | None
    seconds: float
    generated: list[DocType] = field(default_factory=list)
    """Documents generated because their inputs changed (some may have come out the same)."""

    @property
    def regenerated(self) -> list[DocType]:
        """Documents whose files this regeneration wrote anew."""
        return [d.doc_type for d in self.documents if d.regenerated]


class DocsEngine:
    """Regenerates documents of mirrored repositories into their docs ref."""

    def __init__(self, layout: CacheLayout, config: Config) -> None:
        self.layout = layout
        self.config = config

    def regenerate(self, state: MirrorState, doc_types: Sequence[DocType]) -> Regeneration:
        """Bring `doc_types` of the repository `state` describes up to date with its head.

        The caller holds the repository's sync lock.
        """
        started = time.monotonic()
        repo = pygit2.Repository(str(self.layout.repo_dir(state.repo)))
        head = state.head
        wanted = tuple(dict.fromkeys(doc_types))
        current = fingerprints(repo, head, self.config, wanted)
        docs = read_docs(repo)
        stale = out_of_date(docs, current)
        records = dict(docs.manifest.documents) if docs is not None else {}
        if not stale:
            return Regeneration(
                repo=state.repo,
                head=head,
                docs_commit=docs.commit if docs is not None else None,
                documents=[self._kept(repo, docs, records, d) for d in wanted],
                reason_skipped=(
                    "nothing the requested documents depend on changed since they were last "
                    f"generated; they are up to date with {head}"
                ),
                seconds=time.monotonic() - started,
            )
        source = DocSource(
            cache_dir=self.layout.root,
            name=state.repo,
            url=state.url,
            repo=repo,
            commit=head,
            config=self.config,
        )
        files = _current_files(repo, docs)
        outcomes: dict[DocType, DocumentOutcome] = {}
        for doc_type in stale:
            began = time.monotonic()
            rendered = {p: text.encode() for p, text in KINDS[doc_type].render(source).items()}
            old = records.get(doc_type)
            for path in old.paths if old is not None else ():
                files.pop(path, None)
            files.update(rendered)
            differs = (
                old is None
                or set(old.paths) != set(rendered)
                or any(_blob_of(docs, p) != str(pygit2.hash(d)) for p, d in rendered.items())
            )
            records[doc_type] = DocumentRecord(
                paths=tuple(sorted(rendered, key=lambda p: (p != KINDS[doc_type].path, p))),
                generated_from=head,
                inputs=current[doc_type],
            )
            outcomes[doc_type] = DocumentOutcome(
                doc_type=doc_type,
                path=KINDS[doc_type].path,
                regenerated=differs,
                generated_from=head,
                size=sum(len(d) for d in rendered.values()),
                seconds=time.monotonic() - began,
            )
            log.info(
                "docs.generated",
                repo=state.repo,
                doc_type=doc_type,
                bytes=outcomes[doc_type].size,
                changed=differs,
                seconds=round(outcomes[doc_type].seconds, 3),
            )
        documents = {path for record in records.values() for path in record.paths}
        _carry_root_licenses(source, files, documents)
        manifest = DocsManifest(repo=state.repo, head=head, documents=records)
        written = [d for d in stale if outcomes[d].regenerated]
        summary = (
            f"docs: {', '.join(written)} at {head[:12]}"
            if written
            else f"docs: inputs of {', '.join(stale)} recorded at {head[:12]}"
        )
        commit = write_docs(
            repo,
            files=files,
            manifest=manifest,
            summary=summary,
            when=source.commit_time,
            previous=docs.commit if docs is not None else None,
            keep=self.config.docs.history,
        )
        reason = None
        unchanged = [d for d in wanted if d not in written]
        if unchanged:
            fresh = [d for d in unchanged if d not in stale]
            same = [d for d in unchanged if d in stale]
            parts = []
            if fresh:
                parts.append(
                    f"{', '.join(fresh)}: nothing they depend on changed since they were last "
                    "generated"
                )
            if same:
                parts.append(
                    f"{', '.join(same)}: their inputs changed but they came out the same "
                    "(the new inputs are recorded)"
                )
            reason = "; ".join(parts)
        return Regeneration(
            repo=state.repo,
            head=head,
            docs_commit=commit,
            documents=[
                outcomes[d] if d in outcomes else self._kept(repo, docs, records, d) for d in wanted
            ],
            reason_skipped=reason,
            seconds=time.monotonic() - started,
            generated=list(stale),
        )

    @staticmethod
    def _kept(
        repo: pygit2.Repository,
        docs: DocsState | None,
        records: dict[str, DocumentRecord],
        doc_type: DocType,
    ) -> DocumentOutcome:
        record = records[doc_type]
        size = 0
        for path in record.paths:
            blob = _blob_of(docs, path)
            if blob is not None:
                size += int(repo.odb.read_header(blob)[1])
        return DocumentOutcome(
            doc_type=doc_type,
            path=KINDS[doc_type].path,
            regenerated=False,
            generated_from=record.generated_from,
            size=size,
        )


def _blob_of(docs: DocsState | None, path: str) -> str | None:
    if docs is None:
        return None
    try:
        return str(docs.tree[path].id)
    except KeyError:
        return None


def _carry_root_licenses(source: DocSource, files: dict[str, bytes], documents: set[str]) -> None:
    """Put the head's root license files at the root of the docs tree (the same blobs).

    The documents quote the repository's code, so they are under its license, and the read
    tools resolve licenses in the docs tree as in any other: the root license, and for a file
    without an SPDX header the license files nearest above it.
    """
    for path in [p for p in files if "/" not in p and p not in documents]:
        if is_license_file_name(path):
            del files[path]
    for entry in source.tree:
        name = entry.name or ""
        licensed = name not in documents and is_license_file_name(name)
        if licensed and entry.filemode in BLOB_MODES:
            files[name] = source.data(str(entry.id))


def _current_files(repo: pygit2.Repository, docs: DocsState | None) -> dict[str, bytes]:
    """Every file of the docs ref's tree, by path (empty when there is none)."""
    if docs is None:
        return {}
    index = pygit2.Index()
    index.read_tree(docs.tree)
    found = {}
    for entry in index:
        blob = repo[entry.id]
        assert isinstance(blob, pygit2.Blob)
        found[entry.path] = blob.data
    return found
