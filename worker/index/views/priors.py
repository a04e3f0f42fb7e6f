"""How likely a file is to hold what a caller wants, from its path alone: code search's prior of a
file, research's multipliers of tests, vendored code, prose and configuration."""

from __future__ import annotations

import re
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

_LOW_PRIORITY_DIRS: Final = frozenset(
    {"test", "tests", "testing", "__tests__", "spec", "specs", "testdata", "fixtures",
     "vendor", "third_party", "thirdparty", "node_modules"}
)  # fmt: skip
_LOW_PRIORITY_DIR: Final = (
    "(^|/)(" + "|".join(re.escape(d) for d in sorted(_LOW_PRIORITY_DIRS)) + ")/"
)
"""A directory of `_LOW_PRIORITY_DIRS` anywhere in a lowercased path (not its file name)."""
NAME_PRIOR: Final = 0.3
"""Added to a file's prior when a literal query is part of its name."""


def file_prior(path: str, needle: str | None) -> float:
    """How likely a file is to hold the hit a caller wants, before reading it (0..1): shallow
    paths outside test and vendor directories, and names holding a literal query, first."""
    return float(file_priors(pa.array([path], pa.string()), needle)[0])


def file_priors(paths: pa.Array, needle: str | None) -> npt.NDArray[np.float64]:
    """`file_prior` of each path, column-wise (a code search weighs thousands of candidates)."""
    lowered = pc.utf8_lower(paths)
    depth = np.minimum(pc.count_substring(lowered, "/").to_numpy(zero_copy_only=False), 8)
    part = 0.5 + 0.2 * (1 - depth / 8)
    low = pc.match_substring_regex(lowered, _LOW_PRIORITY_DIR).to_numpy(zero_copy_only=False)
    part = np.where(low, part - 0.3, part)
    if needle is not None and len(needle) >= 3:
        names = pc.replace_substring_regex(lowered, "^.*/", "")
        named = pc.match_substring(names, needle).to_numpy(zero_copy_only=False)
        part = np.where(named, part + NAME_PRIOR, part)
    priors: npt.NDArray[np.float64] = np.round(np.clip(part, 0.0, 1.0), 4)
    return priors


# What research weighs down, by path (RE2 syntax, as Arrow's regular expressions read it).
TEST_PATH: Final = (
    r"(^|/)(tests?|testing|__tests__|spec)/|(^|/)test_[^/]*$|_tests?\.[^/]*$|(^|/)conftest\.py$"
)
DOC_PATH: Final = r"(?i)\.(md|rst|txt|adoc)$|(^|/)(docs?|Documentation)/"
PROSE_NAME: Final = r"(^|/)[A-Z][A-Z_-]{2,}$"
"""README, CHANGES, AUTHORS, EXAMPLES: prose under a name without an extension."""
VENDORED_PATH: Final = (
    r"(?i)(^|/)(vendor|vendored|_vendor|third_party|thirdparty|extern|cextern|external"
    r"|node_modules|static|locale|locales|LC_MESSAGES)/|\.min\.(js|css)$|\.(po|pot|css|map)$"
)
CONFIG_PATH: Final = (
    r"(?i)(^|/)(\.github|\.circleci|ci|\.ci)/|\.(ini|cfg|toml|ya?ml|lock|json|in)$"
    r"|(^|/)(LICENSE|LICENCE|COPYING|NOTICE|AUTHORS|CHANGES|CHANGELOG|Makefile|Dockerfile)"
    r"[^/]*$|(^|/)requirements[^/]*\.txt$"
)


def _matches(paths: pa.Array | pa.ChunkedArray, pattern: str) -> npt.NDArray[np.bool_]:
    found: npt.NDArray[np.bool_] = pc.match_substring_regex(paths, pattern).to_numpy(
        zero_copy_only=False
    )
    return found


def research_path_priors(
    paths: pa.Array | pa.ChunkedArray, *, test: float, vendored: float, doc: float
) -> npt.NDArray[np.float64]:
    """Each path's multiplier in research: tests, then vendored code, then prose weigh less;
    1.0 for anything else."""
    prose = _matches(paths, DOC_PATH) | _matches(paths, PROSE_NAME)
    chosen: npt.NDArray[np.float64] = np.select(
        [_matches(paths, TEST_PATH), _matches(paths, VENDORED_PATH), prose],
        [test, vendored, doc],
        default=1.0,
    ).astype(np.float64)
    return chosen


def config_paths(paths: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.bool_]:
    """Which paths are configuration, CI, lock or license files (`CONFIG_PATH`)."""
    return _matches(paths, CONFIG_PATH)
