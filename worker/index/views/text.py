"""Rank a commit's chunks for a query: BM25F over chunk fields, path fields, file aggregation.

A chunk scores BM25F over its body and its symbol name; a file scores its best chunk plus a
damped share of its other chunks plus a BM25F score of its path and file name; hits come out
file by file (best file first), a file's later chunks discounted so results stay diverse.
A bug report's title terms weigh more, and evidence beyond terms adds to the scores (names,
mentions, imports, history: `worker.index.views.evidence`). Statistics (N, df, average
lengths) count only the commit's live chunks.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import PurePosixPath

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from worker.index.store.commit_view import CommitTables
from worker.index.store.segment import Segment
from worker.index.views.commit_chunks import CommitChunks
from worker.index.views.evidence import ReportEvidence
from worker.index.views.priors import config_paths, research_path_priors
from worker.index.views.ranking import (
    DEFAULT_PARAMS,
    AnalysedQuery,
    RankingParams,
    SearchHit,
    Signals,
    analyse_query,
)
from worker.languages import language_of

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


def _idf(n_docs: int, df: int | npt.NDArray[np.int64]) -> float:
    return float(np.log1p((n_docs - df + 0.5) / (df + 0.5)))


class CommitIndex:
    """The index of one commit: its segments, the live part of each, and its path index.

    Immutable after construction, so concurrent readers need no lock.
    """

    def __init__(
        self,
        commit: str,
        segments: Sequence[Segment],
        view: CommitTables,
        params: RankingParams = DEFAULT_PARAMS,
        *,
        source: str = "stored",
    ) -> None:
        self.commit = commit
        self.source = source
        """`stored` when mapped from the cache, `on-demand` when built by this worker."""
        self.params = params
        at = CommitChunks.of(segments, view)
        self._at = at
        self._evidence = ReportEvidence(at, params)
        self.n_paths = at.paths.n_paths
        live = at.live_chunks
        self.n_chunks = int(live.sum())
        len_body = np.concatenate([s.len_body for s in segments] or [np.zeros(0, np.int32)])
        len_sym = np.concatenate([s.len_sym for s in segments] or [np.zeros(0, np.int32)])
        avg_body = float(len_body[live].mean()) if self.n_chunks else 1.0
        avg_sym = float(len_sym[live].mean()) if self.n_chunks else 1.0
        b = params.b
        self._norm_body = (params.w_body / (1 - b + b * len_body / max(avg_body, 1e-9))).astype(
            np.float32
        )
        self._norm_sym = (params.w_symbol / (1 - b + b * len_sym / max(avg_sym, 1e-9))).astype(
            np.float32
        )
        avg_path = float(self._at.paths.len_path.mean()) if self.n_paths else 1.0
        avg_name = float(self._at.paths.len_name.mean()) if self.n_paths else 1.0
        self._norm_path = (
            params.w_path / (1 - b + b * self._at.paths.len_path / max(avg_path, 1e-9))
        ).astype(np.float32)
        self._norm_name = (
            params.w_name / (1 - b + b * self._at.paths.len_name / max(avg_name, 1e-9))
        ).astype(np.float32)
        self._prior = self._path_priors(params)
        self._config: npt.NDArray[np.bool_] | None = None
        self._config_lock = threading.Lock()
        self._ext_masks: dict[frozenset[str], npt.NDArray[np.bool_]] = {}

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The segments the commit's blobs are in."""
        return self._at.segments

    @property
    def path_column(self) -> pa.ChunkedArray:
        """The indexed paths, in path order (row i is path i)."""
        return self._at.paths.paths

    @property
    def path_oids(self) -> npt.NDArray[np.uint8]:
        """Shape (paths, 20): each path's raw blob id."""
        return self._at.paths.oids

    @property
    def path_segment(self) -> npt.NDArray[np.int32]:
        """Each path's segment (an index into `segments`)."""
        return self._at.paths.segment

    @property
    def path_blob(self) -> npt.NDArray[np.int32]:
        """Each path's blob row in its segment."""
        return self._at.paths.blob

    def _path_priors(self, params: RankingParams) -> F64:
        if params.test_prior == params.doc_prior == params.vendored_prior == 1.0:
            return np.ones(self.n_paths, dtype=np.float64)
        return research_path_priors(
            self._at.paths.paths,
            test=params.test_prior,
            vendored=params.vendored_prior,
            doc=params.doc_prior,
        )

    def _extension_mask(self, extensions: frozenset[str]) -> npt.NDArray[np.bool_]:
        mask = self._ext_masks.get(extensions)
        if mask is None:
            wanted = {e.lower() for e in extensions}
            mask = np.fromiter(
                (
                    PurePosixPath(p).suffix.lower() in wanted
                    for p in self._at.paths.paths.to_pylist()
                ),
                dtype=bool,
                count=self.n_paths,
            )
            self._ext_masks[extensions] = mask
        return mask

    def _selected_terms(
        self, weights: Mapping[str, float]
    ) -> tuple[list[tuple[str, float, list[tuple[int, int, int]]]], float]:
        """The query terms worth scoring, (term, query weight, [(segment, start, count)]), and
        the query's ceiling here: what a chunk matching every term would roughly score, a term
        this commit lacks counted at the weight of the rarest. Scores divided by it compare
        across repositories (one holding only the query's common words ranks lower)."""
        found = []
        ceiling = 0.0
        for term, qw in weights.items():
            slices = []
            df = 0
            for i, seg in enumerate(self._at.segments):
                hit = seg.lookup(term)
                if hit is not None:
                    slices.append((i, hit[0], hit[1]))
                    df += self._at.live_postings(i, hit[0], hit[1])
            rank = qw * _idf(max(self.n_chunks, df, 1), df)
            ceiling += rank
            if df or self._at.paths.lookup(term) is not None:
                found.append((rank, term, qw, slices))
        found.sort(key=lambda f: (-f[0], f[1]))
        selected = [(term, qw, slices) for _, term, qw, slices in found[: self.params.max_terms]]
        return selected, ceiling or 1.0

    def _chunk_scores(self, selected: list[tuple[str, float, list[tuple[int, int, int]]]]) -> F64:
        k1 = self.params.k1
        ids: list[npt.NDArray[np.int64]] = []
        contribs: list[F32] = []
        for _, qw, slices in selected:
            gathered = []
            df = 0
            for seg_index, start, count in slices:
                seg = self._at.segments[seg_index]
                chunk = seg.post_chunk[start : start + count]
                tfb = seg.post_tf_body[start : start + count]
                tfs = seg.post_tf_sym[start : start + count]
                if not self._at.all_live[seg_index]:
                    keep = self._at.live[seg_index][chunk]
                    chunk, tfb, tfs = chunk[keep], tfb[keep], tfs[keep]
                gchunk = chunk.astype(np.int64) + self._at.chunk_off[seg_index]
                gathered.append((gchunk, tfb, tfs))
                df += len(chunk)
            if not df:
                continue
            weight = np.float32(qw * _idf(self.n_chunks, df))
            for gchunk, tfb, tfs in gathered:
                tf = tfb * self._norm_body[gchunk] + tfs * self._norm_sym[gchunk]
                ids.append(gchunk)
                contribs.append(weight * tf / (k1 + tf))
        if not ids:
            return np.zeros(0, dtype=np.float64)
        scores: F64 = np.bincount(
            np.concatenate(ids),
            weights=np.concatenate(contribs),
            minlength=len(self._at.chunk_gblob),
        ).astype(np.float64, copy=False)
        return scores

    def _path_scores(self, selected: list[tuple[str, float, list[tuple[int, int, int]]]]) -> F64:
        k1 = self.params.k1
        paths = self._at.paths
        score = np.zeros(self.n_paths, dtype=np.float64)
        for term, qw, _ in selected:
            found = paths.lookup(term)
            if found is None:
                continue
            start, count = found
            rows = paths.post_path[start : start + count]
            tf = (
                paths.post_tf_path[start : start + count] * self._norm_path[rows]
                + paths.post_tf_name[start : start + count] * self._norm_name[rows]
            )
            score[rows] += qw * _idf(self.n_paths, count) * tf / (k1 + tf)
        return score

    def ranked(
        self,
        query: str | AnalysedQuery,
        *,
        extensions: frozenset[str] | None = None,
        history: Mapping[str, float] | None = None,
    ) -> Iterator[SearchHit]:
        """Chunks in descending relevance (deterministic tie order), diverse across files.

        `query` is the text, or its `analyse_query` when the caller analysed it once for the
        indexes of several repositories; `history` the files past commits matching it
        changed, with their scores (`worker.index.views.history`). Lazy: the caller can
        filter (licenses, per-repo caps) and stop early.
        """
        analysed = query if isinstance(query, AnalysedQuery) else analyse_query(query, self.params)
        selected, ceiling = self._selected_terms(analysed.weights)
        if not self.n_paths:
            return iter(())
        n_chunks = len(self._at.chunk_gblob)
        lexical = self._chunk_scores(selected) if selected else np.zeros(0, dtype=np.float64)
        if not len(lexical):
            lexical = np.zeros(n_chunks, dtype=np.float64)
        chunk_score = lexical.copy()
        top = float(lexical.max()) if n_chunks else 0.0
        self._evidence.entity_bonus(analysed.report, chunk_score, top or 1.0)
        n_gblobs = int(self._at.blob_off[-1])
        best: F64 = np.zeros(n_gblobs, dtype=np.float64)
        total: F64 = np.zeros(n_gblobs, dtype=np.float64)
        nz = np.flatnonzero(chunk_score)
        if len(nz):
            gblob = self._at.chunk_gblob[nz]
            np.maximum.at(best, gblob, chunk_score[nz])
            total = np.bincount(gblob, weights=chunk_score[nz], minlength=n_gblobs).astype(
                np.float64, copy=False
            )
        blob_score = best + self.params.rest_weight * (total - best)
        path_score = self.params.path_weight * self._path_scores(selected)
        file_score = blob_score[self._at.path_gblob] + path_score
        lexical_files = file_score > 0
        scale = float(file_score.max()) or top or 1.0
        mention = self._evidence.mention_bonus(analysed.report, scale)
        past = self._evidence.history_bonus(history, scale)
        file_score += mention + past
        file_score *= self._prior
        imported = self._evidence.import_bonus(analysed.report, file_score, chunk_score, lexical)
        file_score += imported
        linked = chunk_score > lexical
        file_score /= ceiling
        chunk_score /= ceiling
        if analysed.report.reads_as_report and self.params.config_prior != 1.0:
            file_score[self._config_mask()] *= self.params.config_prior
        if extensions is not None:
            file_score[~self._extension_mask(extensions)] = 0.0
        candidates = np.flatnonzero(file_score > 0)
        order = candidates[np.lexsort((candidates, -file_score[candidates]))]
        signals = np.where(lexical_files, int(Signals.TERMS), 0)
        signals |= np.where(mention > 0, int(Signals.PATH), 0)
        signals |= np.where(imported > 0, int(Signals.GRAPH), 0)
        signals |= np.where(past > 0, int(Signals.HISTORY), 0)
        return self._emit(order, file_score, chunk_score, signals, linked)

    def _config_mask(self) -> npt.NDArray[np.bool_]:
        with self._config_lock:
            if self._config is None:
                self._config = config_paths(self._at.paths.paths)
            return self._config

    def _hit(self, path_row: int, chunk: int, score: float, signals: int) -> SearchHit:
        seg = self._at.segments[int(self._at.paths.segment[path_row])]
        blob = int(self._at.paths.blob[path_row])
        path = self._at.paths.path(path_row)
        return SearchHit(
            path=path,
            blob=seg.oid(blob),
            start_line=int(seg.chunk_start_line[chunk]),
            end_line=int(seg.chunk_end_line[chunk]),
            score=score,
            symbol=seg.symbol(chunk),
            language=language_of(path),
            signals=Signals(signals),
        )

    def _emit(
        self,
        order: npt.NDArray[np.int64],
        file_score: F64,
        chunk_score: F64,
        signals: npt.NDArray[np.int64],
        linked: npt.NDArray[np.bool_],
    ) -> Iterator[SearchHit]:
        decay = self.params.diversity_decay
        # Heap of (-score, file rank, k): a file's k-th chunk scores file * decay**k * relative.
        heap: list[tuple[float, int, int]] = []
        per_file: dict[int, tuple[list[int], list[float]]] = {}
        next_file = 0
        n_files = len(order)
        while True:
            if next_file < n_files and (not heap or -heap[0][0] <= file_score[order[next_file]]):
                rank = next_file
                next_file += 1
                row = int(order[rank])
                chunks, scores = self._at.file_chunks(row, chunk_score)
                if not chunks:
                    continue
                per_file[rank] = (chunks, scores)
                heapq.heappush(heap, (-float(file_score[row]), rank, 0))
                continue
            if not heap:
                return
            neg, rank, k = heapq.heappop(heap)
            row = int(order[rank])
            chunks, scores = per_file[rank]
            chunk = chunks[k]
            base = self._at.chunk_off[int(self._at.paths.segment[row])]
            fired = int(signals[row]) | (int(Signals.ENTITY) if linked[base + chunk] else 0)
            yield self._hit(row, chunk, -neg, fired)
            if k + 1 < len(chunks):
                base = float(file_score[row])
                relative = scores[k + 1] / scores[0] if scores[0] > 0 else 0.0
                heapq.heappush(heap, (-(base * decay ** (k + 1) * relative), rank, k + 1))
            else:
                del per_file[rank]
