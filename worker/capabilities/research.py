"""The `research` capability: a RepoReaderRequest in, resolved commits and bounded artifacts out.

Every policy and license decision is taken before the answer is assembled, so a failing
request raises exactly one failure and yields no artifacts (seed 001: no partial results).
One pass: the scope is resolved once, the query analysed once for every repository, each
blob read once and each file's license resolved once.

The decisions that need no repository content are in `research_policy`, which the mock
Repo Reader (`worker.testing`) takes with the same code.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import pygit2

from contracts.research import OmittedRepo, RepoReaderRequest, ResearchArtifact, ResolvedRepo
from contracts.types import NO_LICENSE
from worker.capabilities.research_policy import (
    ResearchLimits,
    check_research,
    license_admits,
    licenses_not_allowed,
    omit_unlicensed,
    research_limits,
    research_scope,
)
from worker.config import Config
from worker.errors import InternalError, Timeout
from worker.index import IndexStore, SearchHit, text_terms
from worker.index.store.build import repo_index_dir
from worker.index.views.history import HistoryStore
from worker.index.views.ranking import AnalysedQuery
from worker.licenses import LicenseCache, LicenseInfo, LicensePolicy, LicenseResolver
from worker.repos.catalog import RepoCatalog
from worker.repos.catalog import ResolvedRepo as PinnedRepo
from worker.repos.excerpts import Excerpt, cut_excerpt, decode_text, merge_spans
from worker.repos.swhid import content_swhid, origin_url
from worker.repos.tree_paths import stored_path


@dataclass(frozen=True, slots=True)
class ResearchAnswer:
    """What a research request resolved to and found, in answer order."""

    resolved: tuple[ResolvedRepo, ...]
    artifacts: tuple[ResearchArtifact, ...]
    omitted: tuple[OmittedRepo, ...] = ()


@dataclass(frozen=True, slots=True)
class _Candidate:
    repo: PinnedRepo
    hit: SearchHit
    license: LicenseInfo | None
    data: bytes
    """The file's content, read once for its license and its excerpt."""


class _RepoReads:
    """What one request reads of one pinned repository: each blob once, each license once."""

    def __init__(self, repo: PinnedRepo, cache: LicenseCache) -> None:
        self.repo = repo
        self.tree = _tree(repo.repo, repo.commit)
        self.resolver = LicenseResolver(repo.repo, cache=cache, identified=repo.licenses)
        self._licenses: dict[str, LicenseInfo | None] = {}
        self._data: dict[str, bytes] = {}

    def root_license(self) -> LicenseInfo | None:
        """The license the repository's root declares."""
        return self.resolver.for_root(self.tree)

    def license(self, path: str, blob_id: str) -> LicenseInfo | None:
        """The license of the file at `path` (blob `blob_id`), reading the file if need be."""
        if path not in self._licenses:
            data = self._data[path] = _blob(self.repo.repo, blob_id)
            self._licenses[path] = self.resolver.for_file(self.tree, path, blob_id, data)
        return self._licenses[path]

    def data(self, path: str) -> bytes:
        """The content of a file whose license was asked and that was not forgotten."""
        return self._data[path]

    def forget(self, path: str) -> None:
        """Drop the content of a file that will not be excerpted (its license is kept)."""
        self._data.pop(path, None)


@dataclass(slots=True)
class _Plan:
    """The decisions taken for one request before any source is read."""

    limits: ResearchLimits
    policy: LicensePolicy
    require_license: bool
    query: AnalysedQuery
    deadline: float
    refused_licenses: set[str]

    def check_deadline(self) -> None:
        if time.monotonic() > self.deadline:
            raise Timeout("the request ran out of its time budget", stage="research")


class ResearchService:
    """Answers research requests from the mirrored repositories and their indexes."""

    def __init__(self, config: Config, catalog: RepoCatalog, indexes: IndexStore) -> None:
        self.config = config
        self.catalog = catalog
        self.indexes = indexes
        self.license_cache = LicenseCache()
        self.histories = HistoryStore()

    def _history(self, repo: PinnedRepo, plan: _Plan) -> dict[str, float]:
        """The files the pinned commit's past commits matching the query changed."""
        history = self.histories.get(repo_index_dir(self.indexes.cache_dir, repo.name))
        if history is None:
            return {}
        return history.file_scores(repo.commit, plan.query.weights)

    def answer(self, request: RepoReaderRequest, *, deadline: float) -> ResearchAnswer:
        """Resolve, check and search; raises a RepoReaderFailure for any refusal."""
        plan = self._plan(request, deadline)
        repos = [
            self.catalog.resolve(s.name, s.revision, state=s.state)
            for s in research_scope(self.catalog, request, plan.limits)
        ]
        reads = {r.name: _RepoReads(r, self.license_cache) for r in repos}
        roots = {name: r.root_license() for name, r in reads.items()}
        omitted = omit_unlicensed(roots, required=plan.require_license)
        left_out = {o.repo for o in omitted}
        repos = [r for r in repos if r.name not in left_out]
        plan.check_deadline()

        extensions = request.file_constraints.allowed_extensions
        wanted = frozenset(e.lower() for e in extensions) if extensions is not None else None
        candidates: list[_Candidate] = []
        for repo in repos:
            index = self.indexes.open(repo.name, repo.repo, repo.commit, deadline=deadline)
            ranked = index.ranked(plan.query, extensions=wanted, history=self._history(repo, plan))
            candidates += self._candidates(reads[repo.name], ranked, plan)
        chosen = sorted(
            candidates, key=lambda c: (-c.hit.score, c.repo.name, c.hit.path, c.hit.start_line)
        )[: plan.limits.max_total_excerpts]
        if not chosen and plan.refused_licenses:
            raise licenses_not_allowed(plan.refused_licenses)
        resolved = tuple(
            ResolvedRepo(
                repo=r.name,
                commit=r.commit,
                ref=r.ref,
                license=info.spdx if (info := roots[r.name]) else None,
            )
            for r in repos
        )
        return ResearchAnswer(
            resolved=resolved, artifacts=self._artifacts(chosen, plan), omitted=omitted
        )

    def _plan(self, request: RepoReaderRequest, deadline: float) -> _Plan:
        checked = check_research(request, self.config)
        return _Plan(
            limits=checked.limits,
            policy=checked.policy,
            require_license=request.license_constraints.require_license,
            query=checked.query,
            deadline=deadline,
            refused_licenses=set(),
        )

    def limits(self, request: RepoReaderRequest) -> ResearchLimits:
        """The limits in force, or LimitExceeded naming the first one above its ceiling."""
        return research_limits(request, self.config)

    def _candidates(
        self, reads: _RepoReads, ranked: Iterator[SearchHit], plan: _Plan
    ) -> list[_Candidate]:
        """The repository's best hits that pass the license policy, at most its share."""
        wanted = min(plan.limits.max_excerpts_per_repo, plan.limits.max_total_excerpts)
        found: list[_Candidate] = []
        for hit in ranked:
            plan.check_deadline()
            info = reads.license(hit.path, hit.blob)
            if not license_admits(
                info.spdx if info else None,
                plan.policy,
                require_license=plan.require_license,
                refused=plan.refused_licenses,
            ):
                reads.forget(hit.path)
                continue
            found.append(
                _Candidate(
                    repo=reads.repo,
                    hit=hit,
                    license=info,
                    data=reads.data(hit.path),
                )
            )
            if len(found) >= wanted:
                break
        return found

    def _artifacts(self, chosen: Sequence[_Candidate], plan: _Plan) -> tuple[ResearchArtifact, ...]:
        """Excerpts of the chosen hits, overlapping spans of one file merged, best first."""
        by_file: dict[tuple[str, str], list[_Candidate]] = defaultdict(list)
        for candidate in chosen:
            by_file[(candidate.repo.name, candidate.hit.path)].append(candidate)
        weight = line_weight(plan.query.weights)
        scored: list[tuple[float, ResearchArtifact]] = []
        for candidates in by_file.values():
            plan.check_deadline()
            first = candidates[0]
            text = decode_text(first.data)
            if text is None:
                continue
            for start, end in merge_spans((c.hit.start_line, c.hit.end_line) for c in candidates):
                best = max(
                    (c for c in candidates if start <= c.hit.start_line <= end),
                    key=lambda c: c.hit.score,
                )
                excerpt = cut_excerpt(text.lines, start, end, plan.limits.max_excerpt_chars, weight)
                if excerpt is not None:
                    scored.append((best.hit.score, _artifact(best, excerpt, text.encoding)))
        scored.sort(key=lambda pair: (-pair[0], pair[1].repo, pair[1].path, pair[1].excerpt_span))
        return tuple(artifact for _, artifact in scored)


def _artifact(candidate: _Candidate, excerpt: Excerpt, encoding: str) -> ResearchArtifact:
    repo, hit, info = candidate.repo, candidate.hit, candidate.license
    return ResearchArtifact(
        excerpt=excerpt.text,
        repo=repo.name,
        commit=repo.commit,
        path=hit.path,
        license=info.spdx if info else NO_LICENSE,
        license_source=info.source if info else "none",
        license_confidence=info.confidence if info else None,
        excerpt_span=f"L{excerpt.start}-L{excerpt.end}",
        score=round(candidate.hit.score, 6),
        blob=hit.blob,
        language=hit.language,
        symbol=hit.symbol,
        truncated=excerpt.truncated,
        encoding=encoding,
        signals=hit.signals.labels(),
        swhid=content_swhid(
            blob=hit.blob,
            origin=origin_url(repo.state.url),
            commit=repo.commit,
            path=stored_path(repo.repo, repo.commit, hit.path),
            start_line=excerpt.start,
            end_line=excerpt.end,
        ),
    )


def _blob(repo: pygit2.Repository, blob_id: str) -> bytes:
    kind, data = repo.odb.read(blob_id)
    if kind != pygit2.enums.ObjectType.BLOB:
        raise InternalError("the index names an object that is not a blob", blob=blob_id)
    return bytes(data)


def _tree(repo: pygit2.Repository, commit: str) -> pygit2.Tree:
    return repo[commit].peel(pygit2.Commit).tree


def line_weight(terms: Iterable[str]) -> Callable[[str], float]:
    """How much a line weighs when an excerpt is cut: how many of `terms` it holds."""
    wanted = frozenset(terms)

    def weigh(line: str) -> float:
        return float(sum(1 for token in text_terms(line) if token in wanted))

    return weigh
