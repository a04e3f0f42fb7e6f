"""The entities of a batch of blobs: the definitions the parser found, nested in one another
and in their blob, as one table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from worker.index.analysis.batch_text import BatchText
from worker.index.analysis.definitions import MAX_NESTING, Definitions

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class BatchEntities:
    """A batch's entities, blob by blob in pre-order; rows 0-based and the blob's own."""

    blob: I64
    """The index of each one's blob in the batch."""
    parent: I64
    """The row (in this batch) of the entity each is nested in, -1 at the top of its blob."""
    start_row: I64
    end_row: I64
    name_row: I64
    """The row of each one's name (see `Definitions.name_row`)."""
    name: list[str]
    kind: list[str]


def batch_entities(found: Sequence[Definitions]) -> BatchEntities:
    """Every blob's definitions as one table (parents renumbered to batch rows)."""
    sizes = np.fromiter((len(d.symbol) for d in found), dtype=np.int64, count=len(found))
    firsts = np.zeros(len(found), dtype=np.int64)
    np.cumsum(sizes[:-1], out=firsts[1:])
    empty = np.zeros(0, np.int64)
    blob = np.repeat(np.arange(len(found), dtype=np.int64), sizes)
    parent = np.concatenate([empty] + [d.parent for d in found])
    parent = np.where(parent >= 0, parent + firsts[blob], -1)
    return BatchEntities(
        blob=blob,
        parent=parent,
        start_row=np.concatenate([empty] + [d.start_row for d in found]),
        end_row=np.concatenate([empty] + [d.end_row for d in found]),
        name_row=np.concatenate([empty] + [d.name_row for d in found]),
        name=[name for d in found for name in d.symbol],
        kind=[kind for d in found for kind in d.kind],
    )


def innermost(entities: BatchEntities, text: BatchText, blob: I64, row: I64) -> I64:
    """The entity (batch row) whose lines hold each (blob, blob row), innermost; else -1."""
    if not len(entities.blob) or not len(blob):
        return np.full(len(blob), -1, dtype=np.int64)
    key = text.row0[entities.blob] + entities.start_row
    site = text.row0[blob] + row
    # Pre-order within a blob: the last entity starting at or before the row, then up
    # through its parents to one that still holds the row.
    entity = np.searchsorted(key, site, side="right") - 1
    entity = np.where((entity >= 0) & (entities.blob[np.maximum(entity, 0)] == blob), entity, -1)
    for _ in range(MAX_NESTING + 1):
        safe = np.maximum(entity, 0)
        outside = (entity >= 0) & (entities.end_row[safe] < row)
        if not outside.any():
            break
        entity = np.where(outside, entities.parent[safe], entity)
    return entity
