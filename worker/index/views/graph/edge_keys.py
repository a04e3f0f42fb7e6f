"""A graph's edges as sortable keys: (source, target, relation) in one int64.

Sorted, the keys order the edges by source, then target, then relation; an edge made twice
has one key twice, so distinct keys are distinct edges. A key holds a source node below
2**30 and a target below 2**31 (a graph of a billion nodes), and stays positive.
"""

from __future__ import annotations

from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt

from worker.index.views.graph.model import Edges

I64: TypeAlias = npt.NDArray[np.int64]

_TARGET_SHIFT: Final = 2
_SOURCE_SHIFT: Final = 33
_NODE_MASK: Final = (1 << 31) - 1


def edge_keys(source: I64, target: I64, relation: int | I64) -> I64:
    """The key of each edge (source, target, relation)."""
    return (source << _SOURCE_SHIFT) | (target << _TARGET_SHIFT) | relation


def edges_of(keys: I64) -> Edges:
    """The edges the keys hold."""
    return Edges(
        source=(keys >> _SOURCE_SHIFT).astype(np.int32),
        target=((keys >> _TARGET_SHIFT) & _NODE_MASK).astype(np.int32),
        relation=(keys & 3).astype(np.uint8),
    )
