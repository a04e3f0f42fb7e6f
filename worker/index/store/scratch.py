"""Segments a worker analysed on demand, written under a scratch directory and mapped.

A scratch directory is for a tmpfs, whose bytes are memory: each segment is deleted once no
open index uses it, so the index store's LRU bounds the directory as it bounds the open
indexes; what is left goes when the process exits.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import weakref
from pathlib import Path

from worker.index.analysis.segment_builder import SegmentTables
from worker.index.store.segment import Segment, write_segment


class ScratchSegments:
    """Writes and maps segments under a directory of this process's own in `parent`."""

    def __init__(self, parent: Path) -> None:
        parent.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="segments-", dir=parent))
        """This process's directory (several workers may share `parent`)."""
        self._live: weakref.WeakValueDictionary[str, Segment] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        weakref.finalize(self, shutil.rmtree, self.root, True)

    def keep(self, seg_id: str, tables: SegmentTables) -> Segment:
        """The segment `seg_id` mapped from this directory: the one already open, or `tables`
        written and mapped, deleted again once nothing holds it."""
        with self._lock:
            live = self._live.get(seg_id)
            if live is not None:
                return live
            # A directory of its own: one segment's deletion can never reach another's files.
            home = Path(tempfile.mkdtemp(dir=self.root))
            segment = Segment.open(write_segment(home, seg_id, tables))
            # The finalizer holds this object: the directory outlives every segment in it.
            weakref.finalize(segment, self._delete, home)
            self._live[seg_id] = segment
            return segment

    def _delete(self, home: Path) -> None:
        shutil.rmtree(home, ignore_errors=True)
