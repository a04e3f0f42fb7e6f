"""Binary strings through numpy: the radix sort orders by bytes and finds repeats."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.strings import binary_array, binary_parts, sort_binary


def test_binary_parts_round_trip() -> None:
    """A sliced array's bytes and offsets rebuild the same strings."""
    strings = pa.array([b"ab", b"", b"cde", b"f"], pa.binary()).slice(1)
    data, offsets = binary_parts(strings)
    assert binary_array(data, offsets).to_pylist() == [b"", b"cde", b"f"]


byte_strings = st.binary(min_size=1, max_size=64).map(lambda b: b.replace(b"\0", b"a"))


@settings(max_examples=200, deadline=None)
@given(st.lists(byte_strings, min_size=0, max_size=60))
def test_sort_binary_orders_and_finds_repeats(strings: list[bytes]) -> None:
    """The order sorts the strings by their bytes; repeats are flagged after their first."""
    order, repeat = sort_binary(pa.array(strings, pa.binary()))
    ordered = [strings[i] for i in order.tolist()]
    assert ordered == sorted(strings)
    assert repeat.tolist() == [i > 0 and ordered[i] == ordered[i - 1] for i in range(len(ordered))]


def test_sort_binary_long_shared_prefixes() -> None:
    """Strings that share long prefixes (many rounds of the radix) still sort exactly."""
    rng = np.random.default_rng(3)
    strings = [
        b"x" * int(rng.integers(0, 60)) + bytes(rng.integers(97, 100, int(rng.integers(0, 4))))
        for _ in range(2000)
    ]
    strings = [s or b"y" for s in strings]
    order, repeat = sort_binary(pa.array(strings, pa.binary()))
    ordered = [strings[i] for i in order.tolist()]
    assert ordered == sorted(strings)
    assert int((~repeat).sum()) == len(set(strings))


def test_sort_binary_keys_across_blocks_and_the_data_end() -> None:
    """Keys built block by block, and those read near the end of the data, sort exactly."""
    rng = np.random.default_rng(5)
    n = (1 << 18) + 1000  # past one block of keys
    lengths = rng.integers(1, 12, n)
    data = rng.integers(97, 101, int(lengths.sum()), dtype=np.uint8).tobytes()
    ends = np.cumsum(lengths).tolist()
    strings = [data[e - k : e] for e, k in zip(ends, lengths.tolist(), strict=True)]
    strings[-3:] = [b"b", b"a", b"ab"]  # the last strings start within 8 bytes of the end
    order, repeat = sort_binary(pa.array(strings, pa.binary()))
    ordered = [strings[i] for i in order.tolist()]
    assert ordered == sorted(strings)
    assert int((~repeat).sum()) == len(set(strings))
