"""The `code.search` capability: index-preselected files, RE2-verified lines, ranked hits.

Ranking (deterministic; ties broken by path, then line number):

    score = 0.6 * line quality + 0.4 * file prior            (both in [0, 1])
    line quality = 0.5 + 0.3 if the match is a whole word + 0.2 if the line defines something
    file prior   = 0.5 + 0.2 * shallowness + 0.3 if a literal query is in the file name
                   - 0.3 under test, vendor or fixture directories

A file's best possible score is known before it is read: its prior, and whether one of its
definition lines matches (the index keeps the trigrams of definition lines apart, and the
lines themselves: the trigrams say which files may have one, the lines, looked at when the
file comes up, whether it has). Files are verified best possible score first, and
verification stops once no remaining file can reach the worst of the `max_results` hits
kept, nor tie it with a path before its (`exhaustive` is then false). A query that needs
every file verified and cannot finish within the request's time budget is TIMEOUT, with how
far it got in the details.
"""

from __future__ import annotations

import heapq
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pygit2

from contracts.code import CodeSearchHit, CodeSearchRequest
from worker.capabilities.code_search.matcher import (
    CompiledQuery,
    LineMatch,
    compile_query,
    is_whole_word,
    path_glob_pattern,
)
from worker.capabilities.tooling import (
    Attribution,
    LicensedFiles,
    check_query_length,
    pin,
    within_ceiling,
)
from worker.config import Config, ToolLimits
from worker.errors import Timeout
from worker.index import CommitIndex, IndexStore
from worker.index.analysis.trigrams import DEFINITION_LINE
from worker.index.views.queryplan import MATCH_ALL
from worker.index.views.trigram import RowIndex, TrigramView
from worker.languages import LanguageFilter, extensions_pattern, language_of
from worker.licenses import LicenseCache
from worker.repos.catalog import RepoCatalog, ResolvedRepo
from worker.repos.excerpts import decode_text, is_binary

_SOURCE_NAMES: Final = {"stored": "trigram", "on-demand": "on-demand"}
QUALITY_WEIGHT: Final = 0.6
PRIOR_WEIGHT: Final = 0.4
WHOLE_WORD_QUALITY: Final = 0.8
"""The best line quality a file without a matching definition line can reach."""
LINE_QUALITIES: Final = np.array([0.5, 0.5 + 0.2, 0.5 + 0.3, 0.5 + 0.3 + 0.2])
"""A matching line's quality by 2 * (the match is a whole word) + (it is on a definition
line): 0.5, plus 0.3 for a whole word, plus 0.2 on a definition line."""
_Real = float | npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    """The pinned repository, the hits in rank order and how the search went."""

    repo: ResolvedRepo
    hits: tuple[CodeSearchHit, ...]
    total_count: int
    candidate_files: int
    files_scanned: int
    blobs_read: int
    exhaustive: bool
    truncated: bool
    index: str


@dataclass(frozen=True, slots=True)
class Found:
    """A matching line before its text is cut: its score, path row, offsets and file content."""

    score: float
    row: int
    line: LineMatch
    data: bytes = b""
    """The file's content as verified (shared by its hits), so it is read once."""

    def key(self, paths: tuple[str, ...]) -> tuple[float, str, int]:
        """The rank order: score descending, then path, then line number."""
        return (-self.score, paths[self.row], self.line.line_number)


class TopHits:
    """The best `size` hits seen so far, by (score desc, path, line)."""

    def __init__(self, size: int, paths: tuple[str, ...]) -> None:
        self._size = size
        self._paths = paths
        self._items: list[Found] = []
        self._floor: float | None = None

    def worst(self) -> Found | None:
        """The last of the `size` best hits once that many are held, else None."""
        self._trim()
        return self._items[-1] if len(self._items) >= self._size else None

    def add(self, found: Found) -> None:
        if self._floor is not None and found.score < self._floor:
            return
        self._items.append(found)
        if len(self._items) >= 4 * self._size:
            self._trim()

    def best(self) -> list[Found]:
        self._trim()
        return list(self._items)

    def _trim(self) -> None:
        self._items.sort(key=lambda f: f.key(self._paths))
        del self._items[self._size :]
        if len(self._items) >= self._size:
            self._floor = self._items[-1].score


class CodeSearch:
    """Answers code.search requests from the mirrors and their trigram indexes."""

    def __init__(
        self,
        config: Config,
        catalog: RepoCatalog,
        indexes: IndexStore,
        licenses: LicenseCache,
    ) -> None:
        self.config = config
        self.catalog = catalog
        self.indexes = indexes
        self.licenses = licenses
        self._views: weakref.WeakKeyDictionary[CommitIndex, TrigramView] = (
            weakref.WeakKeyDictionary()
        )
        self._views_lock = threading.Lock()

    def view(self, index: CommitIndex) -> TrigramView:
        """The trigram view of an open commit index, made once and kept while it is open."""
        with self._views_lock:
            found = self._views.get(index)
            if found is None:
                found = self._views[index] = TrigramView(index)
            return found

    def search(self, request: CodeSearchRequest, *, deadline: float) -> SearchAnswer:
        """Check, resolve and search; raises a RepoReaderFailure for any refusal."""
        max_results, compiled, wanted = check_search(request, self.config.tools)
        pinned = pin(self.catalog, request.repo, request.revision)
        licensed = LicensedFiles(pinned, self.licenses, required=request.require_license)
        index = self.view(
            self.indexes.open(pinned.name, pinned.repo, pinned.commit, deadline=deadline)
        )
        rows = wanted.select(index.path_column, index.candidates(compiled.plan))
        source = "scan" if compiled.plan == MATCH_ALL else _SOURCE_NAMES[index.source]
        scan = Scan(
            repo=pinned.repo,
            index=index,
            compiled=compiled,
            max_results=max_results,
            max_matches=self.config.tools.search_max_matches,
            deadline=deadline,
            source=source,
        )
        definers = index.candidates(compiled.plan, definitions=True) if len(rows) else rows
        scan.run(rows, definers=definers)
        hits = self._hits(pinned, index, scan.top.best(), licensed, request.context_lines)
        return SearchAnswer(
            repo=pinned,
            hits=hits,
            total_count=scan.total,
            candidate_files=len(rows),
            files_scanned=scan.scanned,
            blobs_read=scan.blobs_read,
            exhaustive=scan.exhaustive,
            truncated=scan.total > len(hits) or not scan.exhaustive,
            index=source,
        )

    def _hits(
        self,
        pinned: ResolvedRepo,
        index: TrigramView,
        found: list[Found],
        licensed: LicensedFiles,
        context_lines: int,
    ) -> tuple[CodeSearchHit, ...]:
        limits = self.config.tools
        hits = []
        files: dict[int, tuple[str, list[str], str, Attribution]] = {}
        for item in found:
            path = index.paths[item.row]
            if item.row not in files:
                text = decode_text(item.data)
                assert text is not None  # binary blobs are never scanned
                blob_id = index.oid(item.row).hex()
                attribution = licensed.of(path, blob_id, item.data)
                files[item.row] = (blob_id, list(text.lines), text.encoding, attribution)
            blob_id, lines, encoding, attribution = files[item.row]
            hits.append(
                _hit(
                    path=path,
                    data=item.data,
                    lines=lines,
                    encoding=encoding,
                    found=item,
                    blob=blob_id,
                    license=attribution.license,
                    license_source=attribution.source,
                    license_confidence=attribution.confidence,
                    context_lines=context_lines,
                    max_line_chars=limits.search_max_line_chars,
                    max_context_chars=limits.search_max_context_chars,
                )
            )
        return tuple(hits)


class Scan:
    """Verifies candidate files best possible score first, keeping the best hits."""

    def __init__(
        self,
        *,
        repo: pygit2.Repository,
        index: TrigramView,
        compiled: CompiledQuery,
        max_results: int,
        max_matches: int,
        deadline: float,
        source: str,
    ) -> None:
        self.repo = repo
        self.index = index
        self.compiled = compiled
        self.max_matches = max_matches
        self.deadline = deadline
        self.source = source
        self.top = TopHits(max_results, index.paths)
        self.total = 0
        self.scanned = 0
        self.blobs_read = 0
        self.exhaustive = True
        self._holders: dict[int, int] = {}
        """Blobs several candidate files hold: how many of those are still to verify."""
        self._kept: dict[int, bytes] = {}

    def run(self, rows: npt.NDArray[np.int64], *, definers: npt.NDArray[np.int64]) -> None:
        """Verify `rows` best possible score first; `definers` may match on a definition line.

        A definer's lines are looked at when it comes up: without a match among them, its
        bound drops to that of a file without one, and it waits its turn again.
        """
        paths = self.index.paths
        self._holders = self.index.shared_blobs(rows)
        prior_array = self.index.priors(rows, self.compiled.needle)
        may_define = np.isin(rows, definers)
        bound_array = hit_score(np.where(may_define, 1.0, WHOLE_WORD_QUALITY), prior_array)
        plain_bounds = hit_score(WHOLE_WORD_QUALITY, prior_array).tolist()
        # Rows are in path order: ties in bound are visited in path order.
        order = np.lexsort((rows, -bound_array)).tolist()
        ordered_rows, bounds, priors = rows.tolist(), bound_array.tolist(), prior_array.tolist()
        unchecked = may_define.tolist()
        # (-bound, row, at) of the definers whose lines did not match, merged into `order`.
        demoted: list[tuple[float, int, int]] = []
        position = 0
        while position < len(order) or demoted:
            at = order[position] if position < len(order) else -1
            if at < 0 or (demoted and demoted[0][:2] < (-bounds[at], ordered_rows[at])):
                _, _, at = heapq.heappop(demoted)
                bound = plain_bounds[at]
            else:
                position += 1
                bound = bounds[at]
            row, prior = ordered_rows[at], priors[at]
            if time.monotonic() > self.deadline:
                raise Timeout(
                    "code.search ran out of its time budget verifying candidate files; "
                    "narrow it with a longer literal, a path, language or extension filter",
                    stage="code.search.scan",
                    index=self.source,
                    candidate_files=len(rows),
                    files_scanned=self.scanned,
                    files_left=len(order) - position + len(demoted) + 1,
                )
            worst = self.top.worst()
            if self.total >= self.max_matches or (
                worst is not None
                and (
                    bound < worst.score or (bound == worst.score and paths[row] > paths[worst.row])
                )
            ):
                self.exhaustive = False
                return
            if unchecked[at]:
                unchecked[at] = False
                if not self.compiled.matches(self.index.definition_text(row)):
                    heapq.heappush(demoted, (-plain_bounds[at], row, at))
                    continue
            self._verify(row, prior)

    def _content(self, row: int) -> bytes:
        """A candidate file's blob, read once however many candidate files hold it (one that
        several hold is kept until the last of them is verified, or the scan ends)."""
        key = self.index.blob_key(row)
        data = self._kept.pop(key, None)
        if data is None:
            # odb.read skips building a Blob object: about twice as fast on packed repositories.
            _, data = self.repo.odb.read(pygit2.Oid(raw=self.index.oid(row)))
            self.blobs_read += 1
        left = self._holders.get(key, 0)
        if left > 1:
            self._holders[key] = left - 1
            self._kept[key] = data
        return data

    def _verify(self, row: int, prior: float) -> None:
        data = self._content(row)
        if is_binary(data):
            return
        self.scanned += 1
        scores = hit_score(LINE_QUALITIES, prior).tolist()
        for line in self.compiled.lines(data):
            self.total += 1
            whole = is_whole_word(data, line.match_start, line.match_end)
            definition = DEFINITION_LINE.match(data, line.line_start, line.line_end) is not None
            self.top.add(Found(score=scores[2 * whole + definition], row=row, line=line, data=data))


def hit_score(quality: _Real, prior: _Real) -> npt.NDArray[np.float64]:
    """A hit's score from its match quality and its file's prior, rounded to 4 places.

    A file's bound is the score of the best quality it could have: both are rounded alike,
    so no hit scores above its file's bound.
    """
    return np.round(QUALITY_WEIGHT * np.asarray(quality) + PRIOR_WEIGHT * np.asarray(prior), 4)


def check_search(
    request: CodeSearchRequest, limits: ToolLimits
) -> tuple[int, CompiledQuery, _Selector]:
    """The hits to return at most, the compiled query and the path selector, or the failure the
    request alone is refused with (a limit above its ceiling, a pattern RE2 refuses, a line
    break in the query, an unknown language, a glob that leaves the tree)."""
    check_query_length(request.query, limits.search_max_query_chars)
    max_results = within_ceiling(
        "max_results",
        request.max_results,
        default=limits.search_default_results,
        ceiling=limits.search_max_results,
    )
    compiled = compile_query(
        request.query,
        regex=request.regex,
        ignore_case=request.ignore_case,
        max_mem=limits.search_regex_max_mem_bytes,
    )
    return max_results, compiled, _path_selector(request)


def _path_selector(request: CodeSearchRequest) -> _Selector:
    patterns = []
    if request.path is not None:
        patterns.append(path_glob_pattern(request.path))
    if request.language is not None:
        patterns.append(LanguageFilter(request.language).pattern)
    if request.extensions is not None:
        patterns.append(extensions_pattern(request.extensions))
    return _Selector(tuple(patterns))


@dataclass(frozen=True, slots=True)
class _Selector:
    """The paths a request's `path`, `language` and `extensions` select: those in which every
    pattern is found."""

    patterns: tuple[str, ...]

    def select(self, paths: pa.ChunkedArray, rows: RowIndex) -> RowIndex:
        """The `rows` whose path is selected, in order."""
        if not self.patterns or not len(rows):
            return rows
        chosen = paths.take(pa.array(rows))
        keep = pc.match_substring_regex(chosen, self.patterns[0])
        for pattern in self.patterns[1:]:
            keep = pc.and_(keep, pc.match_substring_regex(chosen, pattern))
        selected: npt.NDArray[np.bool_] = keep.to_numpy()
        return rows[selected]


def _hit(
    *,
    path: str,
    data: bytes,
    lines: list[str],
    encoding: str,
    found: Found,
    blob: str,
    license: str,
    license_source: str,
    license_confidence: float | None,
    context_lines: int,
    max_line_chars: int,
    max_context_chars: int,
) -> CodeSearchHit:
    match = found.line
    line = lines[match.line_number - 1]
    column = len(data[match.line_start : match.match_start].decode(encoding, "replace"))
    length = len(data[match.match_start : match.match_end].decode(encoding, "replace"))
    offset, shown = line_window(line, column, length, max_line_chars)
    context = context_window(lines, match.line_number, context_lines, max_context_chars)
    return CodeSearchHit(
        path=path,
        line_number=match.line_number,
        column=column + 1,
        match_length=length,
        matched_line=shown,
        line_offset=offset,
        line_truncated=len(shown) < len(line),
        context=context[0],
        context_span=context[1],
        score=found.score,
        blob=blob,
        language=language_of(path),
        encoding=encoding,
        license=license,
        license_source=license_source,
        license_confidence=license_confidence,
    )


def line_window(line: str, column: int, length: int, limit: int) -> tuple[int, str]:
    """(offset, text): the line, or `limit` characters of it around the match."""
    if len(line) <= limit:
        return 0, line
    start = max(0, min(column - max(0, (limit - length) // 2), len(line) - limit))
    return start, line[start : start + limit]


def line_count(lines: list[str]) -> int:
    """Lines of a text split on '\\n', not counting the empty one after a final line break."""
    return len(lines) - 1 if len(lines) > 1 and lines[-1] == "" else len(lines)


def context_window(lines: list[str], number: int, size: int, limit: int) -> tuple[str, str | None]:
    """Exactly lines a..b around line `number`, at most `size` of them and `limit` chars."""
    total = max(line_count(lines), number)
    before = (size - 1) // 2
    first = max(1, number - before)
    last = min(total, first + size - 1)
    first = max(1, last - size + 1)

    def length(a: int, b: int) -> int:
        return sum(len(x) for x in lines[a - 1 : b]) + (b - a)

    while length(first, last) > limit and (first < number or last > number):
        if number - first >= last - number and first < number:
            first += 1
        else:
            last -= 1
    if length(first, last) > limit:
        return "", None
    return "\n".join(lines[first - 1 : last]), f"L{first}-L{last}"
