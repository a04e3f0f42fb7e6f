"""Which files a graph build resolves in each phase, and the state resolving leaves for the
next build.

A whole build resolves every file in every phase. A build carried from another commit's
graph (see `carried`) resolves a file again from the first phase in which something it read
may have changed; the bindings and bases another file made are known changed only once that
file is resolved again, so files are taken in the order a whole build takes them, and each
file's carried state is put in place when the build passes it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt

from worker.index.views.graph.made import BaseRows, ClassKey, FileImports, ImportRows
from worker.index.views.graph.reads import Phase, ReadKind, ReadTable
from worker.index.views.graph.scope import Scopes

I64: TypeAlias = npt.NDArray[np.int64]
_EVERY_PHASE: tuple[Phase, ...] = tuple(Phase)
_EVERY_FILE = 1 << 62
"""Where a phase that has ended is: past every file."""
NEVER: Final = len(Phase) + 1
"""The phase a file resolved again in no phase is resolved from: past the last."""


@dataclass(frozen=True, slots=True)
class ResolutionState:
    """What resolving a commit's graph read and made, kept beside the graph for the next."""

    oids: npt.NDArray[np.uint8]
    """Each file's blob id (file rows, 20 bytes each)."""
    grammars: list[str | None]
    """Each file's grammar (file rows), as resolving saw it."""
    reads: ReadTable
    imports: ImportRows
    """What files' imports made (the files whose imports made something)."""
    bases: BaseRows
    """The bases of the classes that have any, by file."""


class Plan:
    """Which files each phase resolves, and the carried state of the others put in place.

    A whole build resolves every file and carries nothing (`Plan.whole`).
    """

    def __init__(
        self,
        scopes: Scopes,
        dirty_from: dict[int, Phase] | None,
        carried: ResolutionState | None,
    ) -> None:
        self._scopes = scopes
        self.dirty_from = dirty_from
        """The phase each file is resolved again from; None: every file, every phase."""
        self._carried = carried
        self._readers: dict[tuple[int, int, int], list[int]] = {}
        """By (phase, read kind, file read), the files that read it: plain ints, which look
        up alike with the enums' members (a member made from its value takes a microsecond)."""
        if carried is not None:
            reads = carried.reads
            state_reads = np.flatnonzero(
                (reads.kind == ReadKind.BINDINGS) | (reads.kind == ReadKind.BASES)
            )
            for reader, phase, kind, node in zip(
                reads.reader[state_reads].tolist(),
                reads.phase[state_reads].tolist(),
                reads.kind[state_reads].tolist(),
                reads.node[state_reads].tolist(),
                strict=True,
            ):
                self._readers.setdefault((phase, kind, node), []).append(reader)
        self.class_keys: dict[int, dict[ClassKey, None]] = {}
        """By file node, the keys of the classes its second phase gave bases, in the order it
        gave them: a set's order follows the strings' hashes, which differ from process to
        process, and the stored state is the same bytes on every host."""
        self._passed = {int(Phase.IMPORTS): -1, int(Phase.BASES): -1}
        """Where each phase is: the files before this node are passed (see `files`)."""
        self._unplaced: dict[int, set[int]] = {}
        """By phase, the files whose carried state is not in place yet."""
        if carried is not None:
            self._unplaced = {
                int(Phase.IMPORTS): set(carried.imports.files()),
                int(Phase.BASES): set(carried.bases.files()),
            }
            scopes.carried = self._place_when_passed

    @staticmethod
    def whole(scopes: Scopes) -> Plan:
        return Plan(scopes, None, None)

    def resolves(self, file: int, phase: Phase) -> bool:
        """Whether `file`'s references of `phase` are resolved in this build."""
        if self.dirty_from is None:
            return True
        start = self.dirty_from.get(file)
        return start is not None and start <= phase

    def resolving(self, files: I64, phase: Phase) -> npt.NDArray[np.bool_]:
        """Whether each of `files` has its references of `phase` resolved in this build."""
        resolving: npt.NDArray[np.bool_] = self.first_phases(files) <= phase
        return resolving

    def first_phases(self, files: I64) -> npt.NDArray[np.uint8]:
        """The phase each of `files` (nodes, or -1) is resolved again from: past the last
        phase for one that is not.

        Looked up in a table by node: the files may be every edge's of a large graph, and
        the files resolved again a few.
        """
        if self.dirty_from is None:
            return np.full(len(files), Phase.IMPORTS, dtype=np.uint8)
        dirty = np.fromiter(self.dirty_from, dtype=np.int64, count=len(self.dirty_from))
        top = max(int(files.max(initial=-1)), int(dirty.max(initial=-1)))
        # Shifted by one: -1 (no file) is row 0, resolved in no phase.
        table = np.full(top + 2, NEVER, dtype=np.uint8)
        table[dirty + 1] = np.fromiter(self.dirty_from.values(), dtype=np.uint8, count=len(dirty))
        first: npt.NDArray[np.uint8] = table[files + 1]
        return first

    def reachable(self) -> set[int]:
        """Every file this build may resolve: those it resolves from the start, and those
        that read the bindings or bases of one it may resolve (which may change)."""
        assert self.dirty_from is not None
        readers: dict[int, set[int]] = {}
        for (_, _, node), files in self._readers.items():
            readers.setdefault(node, set()).update(files)
        found = set(self.dirty_from)
        frontier = list(found)
        while frontier:
            for reader in readers.get(frontier.pop(), ()):
                if reader not in found:
                    found.add(reader)
                    frontier.append(reader)
        return found

    def files(self, phase: Phase, with_rows: list[int]) -> Iterator[int]:
        """The files `phase` resolves, in node order (`with_rows`: the files with references
        of this phase).

        The carried state of the files before the one being resolved is in place, as in a
        whole build, where they are resolved before it: put there when first read (see
        `_place_when_passed`), as most of it never is.
        """
        if self.dirty_from is None or self._carried is None:
            yield from with_rows
            return
        pending = [f for f, start in self.dirty_from.items() if start <= phase]
        heapq.heapify(pending)
        last = -1
        while pending:
            file = heapq.heappop(pending)
            if file == last:
                continue
            last = file
            self._passed[phase] = file
            yield file
            for reader in self._changed_readers(phase, file):
                heapq.heappush(pending, reader)
        self._passed[phase] = _EVERY_FILE

    def _place_when_passed(self, file: int, phase: int) -> None:
        """Before a read of a file's state of `phase`: its carried state, put in place if the
        phase has passed the file (else it is not made yet, as in a whole build)."""
        unplaced = self._unplaced[phase]
        if file in unplaced and file < self._passed[phase]:
            unplaced.discard(file)
            self._place(Phase(phase), file)

    def _place(self, phase: Phase, file: int) -> None:
        """Put a file's carried state of `phase` in place, unless it is resolved again."""
        if self.resolves(file, phase):
            return
        assert self._carried is not None
        if phase == Phase.IMPORTS:
            made = self._carried.imports.get(file)
            assert made is not None
            scope = self._scopes.files[file]
            scope.bindings.update(made.bindings)
            scope.wildcards += made.wildcards
            scope.namespaces += made.namespaces
        elif phase == Phase.BASES:
            for key, bases in (self._carried.bases.get(file) or {}).items():
                self._scopes.bases[key] = (*self._scopes.bases.get(key, ()), *bases)

    def _changed_readers(self, phase: Phase, file: int) -> list[int]:
        """When what `file` made in `phase` differs from what it made before: the files that
        read it in this phase after it (returned, to resolve now), and in later phases
        (marked to resolve from there)."""
        assert self.dirty_from is not None
        assert self._carried is not None
        if phase == Phase.IMPORTS:
            kind = ReadKind.BINDINGS
            before = self._carried.imports.get(file)
            scope = self._scopes.files.get(file)
            now = scope.bindings if scope is not None else {}
            same = (before.bindings if before is not None else {}) == now
        elif phase == Phase.BASES:
            kind = ReadKind.BASES
            was = self._carried.bases.get(file) or {}
            made = {
                key: self._scopes.bases[key]
                for key in self.class_keys.get(file, {})
                if self._scopes.bases.get(key)
            }
            same = was == made
        else:
            return []
        if same:
            return []
        now_too = []
        for later in _EVERY_PHASE[phase - 1 :]:
            readers = self._readers.get((later, kind, file), [])
            for reader in readers:
                if later == phase:
                    # Read in this phase before `file` was resolved: it read nothing yet.
                    if reader > file and not self.resolves(reader, phase):
                        self.dirty_from[reader] = phase
                        now_too.append(reader)
                elif not self.resolves(reader, later):
                    self.dirty_from[reader] = later
        return now_too

    def state(
        self, oids: npt.NDArray[np.uint8], grammars: list[str | None], reads: ReadTable
    ) -> ResolutionState:
        """The state this build leaves: what it resolved, and what it carried for the rest."""
        scopes = self._scopes
        imports: dict[int, FileImports] = {}
        bases: dict[int, dict[ClassKey, tuple[int, ...]]] = {}
        for file, scope in scopes.files.items():
            if not self.resolves(file, Phase.IMPORTS):
                continue
            if scope.bindings or scope.wildcards or scope.namespaces:
                # Not copied: they are rows before anything changes them again.
                imports[file] = FileImports(scope.bindings, scope.wildcards, scope.namespaces)
        for file, keys in self.class_keys.items():
            if not self.resolves(file, Phase.BASES):
                continue
            found = {key: scopes.bases[key] for key in keys if scopes.bases.get(key)}
            if found:
                bases[file] = found
        made_imports, made_bases = ImportRows.of(imports), BaseRows.of(bases)
        carried = self._carried
        if carried is not None:
            # Those of the files not resolved again are carried as they were.
            kept_imports = carried.imports.without(
                self.resolving(carried.imports.file_column, Phase.IMPORTS)
            )
            kept_bases = carried.bases.without(
                self.resolving(carried.bases.file_column, Phase.BASES)
            )
            made_imports = ImportRows.concat([kept_imports, made_imports])
            made_bases = BaseRows.concat([kept_bases, made_bases])
        if carried is not None and self.dirty_from is not None:
            # Each reader's reads of the phases it was not resolved again in are kept.
            first = self.first_phases(carried.reads.reader.astype(np.int64))
            kept_rows = np.flatnonzero(carried.reads.phase < first)
            reads = ReadTable.concat([carried.reads.take(kept_rows), reads])
        return ResolutionState(
            oids=oids,
            grammars=grammars,
            reads=reads,
            imports=made_imports,
            bases=made_bases,
        )
