"""The compiled loop over lines and spans (numba), apart so that only a build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled


@_compiled(nogil=True)
def first_not_in(a: Any, starts: Any, ends: Any, skip: Any) -> Any:
    # For each [start, end), the position of its first byte `skip` does not select (or end).
    found = np.empty(len(starts), np.int64)
    for i in range(len(starts)):
        at, end = starts[i], ends[i]
        while at < end and skip[a[at]]:
            at += 1
        found[i] = at
    return found
