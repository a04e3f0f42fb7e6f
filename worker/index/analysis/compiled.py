"""numba's njit with its compiled code cached on disk, for the analysis kernels.

Only a build imports the kernels (and so numba and LLVM, tens of megabytes): a worker that
only answers queries never loads them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba


def compiled(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """numba.njit, with compiled code cached on disk where numba finds a writable place.

    Compiling a kernel takes a process a second or two; loading it from the cache,
    milliseconds. A read-only installation without NUMBA_CACHE_DIR compiles once per process.
    """

    def compile_(function: Callable[..., Any]) -> Any:
        try:
            return numba.njit(cache=True, **options)(function)
        except RuntimeError:  # numba: "no locator available", nowhere writable to cache
            return numba.njit(**options)(function)

    return compile_
