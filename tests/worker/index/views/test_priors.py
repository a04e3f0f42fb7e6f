"""File priors: the column-wise priors equal the one-path prior for every path."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from worker.index.views.priors import file_prior, file_priors

_SEGMENT = st.one_of(
    st.sampled_from(["tests", "Vendor", "node_modules", "src", "spec", "a", "Router.py"]),
    st.text(alphabet="abcXYZ019_.-", min_size=1, max_size=8),
)
_PATH = st.lists(_SEGMENT, min_size=1, max_size=12).map("/".join)


@given(
    paths=st.lists(_PATH, max_size=30),
    needle=st.one_of(st.none(), st.text(alphabet="abcxyz_.r", max_size=5)),
)
def test_column_wise_priors_equal_each_paths_prior(paths: list[str], needle: str | None) -> None:
    """Depth, low-priority directories (not file names) and a needle in the file name weigh
    the same in the column-wise priors as in one path's prior."""
    got = file_priors(pa.array(paths, pa.string()), needle).tolist()
    assert got == [file_prior(path, needle) for path in paths]


def test_a_test_directory_weighs_but_a_file_named_tests_does_not() -> None:
    """`tests/x.py` is a test file; `src/tests` (a file) is not; a name holding the needle rises."""
    low, plain, named = file_priors(
        pa.array(["tests/x.py", "src/tests", "src/router.py"]), "router"
    )
    assert low < plain < named
