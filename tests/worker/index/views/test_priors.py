"""Path priors: code search's column-wise priors and research's path classes."""

from __future__ import annotations

import re

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from worker.index.views.priors import (
    CONFIG_PATH,
    DOC_PATH,
    PROSE_NAME,
    TEST_PATH,
    VENDORED_PATH,
    config_paths,
    file_prior,
    file_priors,
    research_path_priors,
)

_SEGMENT = st.one_of(
    st.sampled_from(["tests", "Vendor", "node_modules", "src", "spec", "a", "Router.py"]),
    st.text(alphabet="abcXYZ019_.-", min_size=1, max_size=8),
)
_PATH = st.lists(_SEGMENT, min_size=1, max_size=12).map("/".join)


_LOW_DIRS = {"test", "tests", "testing", "__tests__", "spec", "specs", "testdata", "fixtures",
             "vendor", "third_party", "thirdparty", "node_modules"}  # fmt: skip


def one_path_prior(path: str, needle: str | None) -> float:
    """The rule, one path at a time: depth, a low-priority directory, a needle in the name."""
    segments = path.lower().split("/")
    prior = 0.5 + 0.2 * (1 - min(len(segments) - 1, 8) / 8)
    if _LOW_DIRS.intersection(segments[:-1]):
        prior -= 0.3
    if needle is not None and len(needle) >= 3 and needle in segments[-1]:
        prior += 0.3
    return round(max(0.0, min(1.0, prior)), 4)


@given(
    paths=st.lists(_PATH, max_size=30),
    needle=st.one_of(st.none(), st.text(alphabet="abcxyz_.r", max_size=5)),
)
def test_column_wise_priors_equal_each_paths_prior(paths: list[str], needle: str | None) -> None:
    """Depth, low-priority directories (not file names) and a needle in the file name weigh
    the same in the column-wise priors as in one path's prior."""
    got = file_priors(pa.array(paths, pa.string()), needle).tolist()
    assert got == [one_path_prior(path, needle) for path in paths]
    assert [file_prior(path, needle) for path in paths] == got


def test_a_test_directory_weighs_but_a_file_named_tests_does_not() -> None:
    """`tests/x.py` is a test file; `src/tests` (a file) is not; a name holding the needle rises."""
    low, plain, named = file_priors(
        pa.array(["tests/x.py", "src/tests", "src/router.py"]), "router"
    )
    assert low < plain < named


_RESEARCH_SEGMENT = st.one_of(
    st.sampled_from(
        ["tests", "test_x.py", "conftest.py", "a_test.go", "vendor", "Static", "docs",
         "Documentation", "README", "CHANGES", "LICENSE.txt", "ci", ".github", "x.min.js",
         "a.yml", "requirements-dev.txt", "src", "core.py", "LC_MESSAGES", "django.po"]
    ),
    st.text(alphabet="abAB_.-", min_size=1, max_size=6),
)  # fmt: skip


@given(paths=st.lists(st.lists(_RESEARCH_SEGMENT, min_size=1, max_size=5).map("/".join)))
def test_research_path_classes_read_as_pythons_regular_expressions_would(
    paths: list[str],
) -> None:
    """Arrow's RE2 reads the path classes as Python's `re` does: tests first, then vendored
    code, then prose; configuration apart."""

    def search(pattern: str, path: str) -> bool:
        return re.search(pattern, path) is not None

    expected = []
    for path in paths:
        if search(TEST_PATH, path):
            expected.append(0.3)
        elif search(VENDORED_PATH, path):
            expected.append(0.2)
        elif search(DOC_PATH, path) or search(PROSE_NAME, path):
            expected.append(0.5)
        else:
            expected.append(1.0)
    column = pa.array(paths, pa.string())
    got = research_path_priors(column, test=0.3, vendored=0.2, doc=0.5)
    assert got.tolist() == expected
    assert config_paths(column).tolist() == [search(CONFIG_PATH, p) for p in paths]
