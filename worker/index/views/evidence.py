"""What a query lends to files beyond their terms: names, mentions, imports and history.

A chunk defining a name the query mentions rises (entity links); a file whose path or module
the query names rises (mentions); the modules the best files import rise, most those their
best code calls (a report's imports); a definition the query names lends its name to the
modules it calls into (of any query); files past commits matching the query changed rise
(history). Each is a bonus added to scores `worker.index.views.text` computed.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.index.analysis.distinct import distinct
from worker.index.views.commit_chunks import CommitChunks
from worker.index.views.linking import CommitLinks
from worker.index.views.ranking import RankingParams
from worker.index.views.report import ReportQuery

_PYTHON_SUFFIXES: Final = (".py", ".pyi", ".pyx")
"""The files whose imports `CommitLinks.import_rows` resolves."""
_MAX_REMEMBERED_FILES: Final = 4096
"""Files whose imports and calls are kept read (then all are forgotten)."""

F64 = npt.NDArray[np.float64]
Import = tuple[str, str | None, str | None]
"""An import: (module, name, alias)."""
Call = tuple[int, str]
"""A call: (line, the callee's first name)."""


class ReportEvidence:
    """The bonuses of one commit's files and chunks for a query's evidence.

    Thread-safe: what is built on first use (the commit's links) is built under a lock, and
    the remembered references are only ever replaced whole per file.
    """

    def __init__(self, chunks: CommitChunks, params: RankingParams) -> None:
        self._at = chunks
        self.params = params
        self._links: CommitLinks | None = None
        self._links_lock = threading.Lock()
        self._references: dict[int, tuple[list[Import], list[Call]]] = {}

    def links(self) -> CommitLinks:
        """Where this commit defines names and which files its paths name (built once)."""
        with self._links_lock:
            if self._links is None:
                self._links = CommitLinks(self._at.paths.paths)
            return self._links

    def entity_bonus(self, report: ReportQuery, chunk_score: F64, top: float) -> None:
        """Add to the chunks that define a name the query mentions (once per name)."""
        params = self.params
        if not report.identifiers or params.entity_weight == 0:
            return
        for name in report.identifiers:
            chunks = self._at.defining_chunks(name)
            if not len(chunks):
                continue
            files = len(distinct(self._at.chunk_gblob[chunks]))
            if files > params.max_defining_files:
                continue
            # The geometric mean of the chunk's own score and the best one: a definition the
            # report names rises with the evidence it has, without overtaking on the name alone.
            own = chunk_score[chunks]
            chunk_score[chunks] += params.entity_weight * np.sqrt(own * top) / np.sqrt(files)

    def mention_bonus(self, report: ReportQuery, top: float) -> F64:
        """What each file gains for being named by the query's paths or modules."""
        bonus = np.zeros(self._at.paths.n_paths, dtype=np.float64)
        if not report.paths and not report.modules:
            return bonus
        links = self.links()
        if self.params.path_mention_weight:
            for mention in report.paths:
                for row in links.file_rows(mention):
                    bonus[row] = max(bonus[row], self.params.path_mention_weight * top)
        if self.params.module_mention_weight:
            for dotted in report.modules:
                for row in links.module_rows(dotted):
                    bonus[row] = max(bonus[row], self.params.module_mention_weight * top)
        return bonus

    def import_bonus(
        self, report: ReportQuery, file_score: F64, chunk_score: F64, lexical: F64
    ) -> F64:
        """What each file gains for being imported by one of the best files.

        Of a report, an import supports a file (`import_weight` and the support shares); of
        any query, a best file whose best chunk is a definition the query names lends its
        name-link gain to the files that chunk calls into (`delegate_weight`): a wrapper's
        name is what users know, its behaviour is in what it delegates to. The imports and
        calls are read from the best files' stored references (no graph is built); files
        defining an exception the report shows raised gain nothing: where it is defined is
        not the fault, however many files import it.
        """
        params = self.params
        bonus = np.zeros(self._at.paths.n_paths, dtype=np.float64)
        weights = (params.import_weight, params.import_support_weight, params.call_support_weight)
        supports = report.reads_as_report and any(weights)
        if not supports and not (params.delegate_weight and report.identifiers):
            return bonus
        sources = np.flatnonzero(file_score > 0)
        sources = sources[np.lexsort((sources, -file_score[sources]))][: params.import_sources]
        if not len(sources):
            return bonus
        raised = set(report.raised)
        named = set(report.identifiers) if params.delegate_weight else set()
        excluded: set[int] = set()
        for name in report.raised:
            defining = self._at.chunk_gblob[self._at.defining_chunks(name)]
            excluded.update(np.flatnonzero(np.isin(self._at.path_gblob, defining)).tolist())
        for source in sources.tolist():
            importer_score = float(file_score[source])
            chunks, _ = self._at.file_chunks(source, chunk_score)
            best = chunks[0] if chunks else None
            named_gain = params.delegate_weight * self._name_link_gain(
                source, best, chunk_score, lexical, named
            )
            if not supports and not named_gain:
                continue
            for row, called in self._imports(source, best, raised):
                if row == source or row in excluded:
                    continue
                gain = named_gain if called else 0.0
                if supports:
                    own = float(file_score[row])
                    mean = float(np.sqrt(own * importer_score))
                    below = max(0.0, importer_score * (1 - 1e-6) - own)
                    support = params.call_support_weight if called else params.import_support_weight
                    gain = max(gain, params.import_weight * mean, min(support * mean, below))
                bonus[row] = max(bonus[row], gain)
        return bonus

    def history_bonus(self, history: Mapping[str, float] | None, top: float) -> F64:
        """What each file gains from past commits matching the query."""
        bonus = np.zeros(self._at.paths.n_paths, dtype=np.float64)
        if not history or not self.params.history_weight:
            return bonus
        best = max(history.values())
        rows = self.links().rows
        for path, score in history.items():
            row = rows.get(path)
            if row is not None:
                bonus[row] = self.params.history_weight * top * score / best
        return bonus

    def _name_link_gain(
        self, row: int, best: int | None, chunk_score: F64, lexical: F64, named: set[str]
    ) -> float:
        """What a file's best chunk (`best`, its segment's chunk id) gained for its name,
        when it is the definition of a name the query mentions (`edit` for `Editor.edit`;
        not for a definition merely holding the word, such as `get_help_extra` for `extra`)."""
        if best is None or not named:
            return 0.0
        seg_index = int(self._at.paths.segment[row])
        chunk = int(self._at.chunk_off[seg_index]) + best
        gain = float(chunk_score[chunk] - lexical[chunk])
        if gain <= 0:
            return 0.0
        symbol = self._at.segments[seg_index].symbol(best)
        return gain if symbol is not None and symbol.rsplit(".", 1)[-1] in named else 0.0

    def _imports(self, row: int, best: int | None, skip_names: set[str]) -> list[tuple[int, bool]]:
        """The files a file imports (Python imports resolved to this commit's paths), each
        with whether the file's best chunk (`best`) calls a name the import binds."""
        importer = self._at.paths.path(row)
        if not importer.endswith(_PYTHON_SUFFIXES):
            return []
        imports, calls = self._python_references(row)
        if not imports:
            return []
        links = self.links()
        called: set[str] = set()
        if best is not None:
            seg = self._at.segments[int(self._at.paths.segment[row])]
            first, last = int(seg.chunk_start_line[best]), int(seg.chunk_end_line[best])
            called = {head for line, head in calls if first <= line <= last}
        found: list[tuple[int, bool]] = []
        for target, name, alias in imports:
            if name in skip_names:
                continue
            bound = alias or name or target.split(".", 1)[0]
            found.extend((r, bound in called) for r in links.import_rows(importer, target, name))
        return found

    def _python_references(self, row: int) -> tuple[list[Import], list[Call]]:
        """A file's imports and calls, as stored with its segment; remembered, as the best
        files of one query after another are much the same."""
        found = self._references.get(row)
        if found is not None:
            return found
        seg = self._at.segments[int(self._at.paths.segment[row])]
        refs = seg.references(int(self._at.paths.blob[row]))
        relation = pc.cast(refs.column("relation"), pa.string())
        imports = refs.filter(pc.equal(relation, "import"))
        calls = refs.filter(pc.equal(relation, "invoke"))
        found = (
            [
                (target, name, alias)
                for target, name, alias in zip(
                    imports.column("target").to_pylist(),
                    imports.column("name").to_pylist(),
                    imports.column("alias").to_pylist(),
                    strict=True,
                )
                if target
            ],
            [
                (line, target.split(".", 1)[0])
                for line, target in zip(
                    calls.column("line").to_pylist(),
                    calls.column("target").to_pylist(),
                    strict=True,
                )
                if target
            ],
        )
        if len(self._references) >= _MAX_REMEMBERED_FILES:
            self._references.clear()
        self._references[row] = found
        return found
