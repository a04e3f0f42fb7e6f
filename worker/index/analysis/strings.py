"""Binary strings held as Arrow arrays, read and built through numpy, and sorted by Arrow.

Arrow's binary arrays are a data buffer and offsets: numpy works on both without a copy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Mask = npt.NDArray[np.bool_]


def binary_parts(array: pa.Array) -> tuple[U8, I64]:
    """The data bytes and offsets (len + 1, from 0) of a binary or string array."""
    if array.type != pa.binary():
        array = array.cast(pa.binary())
    n = len(array)
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[array.offset : array.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None and n else None
    if data is None:
        return np.zeros(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
    base = int(offsets[0])
    return data[base : int(offsets[-1])], offsets.astype(np.int64) - base


def binary_array(data: U8 | bytes, offsets: I64) -> pa.Array:
    """A binary array over contiguous data with the given offsets (len + 1, from 0)."""
    return pa.Array.from_buffers(
        pa.binary(),
        len(offsets) - 1,
        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
    )


def sort_binary(strings: pa.Array) -> tuple[I64, Mask]:
    """The order that sorts binary strings by their bytes, and for each string in that order
    whether it equals the one before."""
    n = len(strings)
    order = pc.sort_indices(strings).to_numpy().astype(np.int64)
    repeat = np.zeros(n, dtype=np.bool_)
    if n > 1:
        ordered = strings.take(pa.array(order))
        same = pc.equal(ordered.slice(1), ordered.slice(0, n - 1))
        repeat[1:] = same.to_numpy(zero_copy_only=False)
    return order, repeat
