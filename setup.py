"""The entity graph's build, and the analysis's walk over each definition, compiled to C with
mypyc; everything else stays Python.

Resolution goes reference by reference, and an outline and the definitions are read match by
match: dictionary lookups, attribute reads and small calls, with no numeric kernel for numba
and no library that does it. mypyc compiles the same typed source that mypy checks, so there
is one implementation; the compiled modules sit beside it and are imported in its place.

REPO_READER_PURE_PYTHON=1 builds without compiling (no C compiler needed). An editable
install compiles in place: after changing a compiled module, install again, or the old
build is the one imported (`tests/test_setup.py` says so).
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
RESOLVER = Path("worker/index/views/graph")
NOT_COMPILED = frozenset({"__init__.py", "model.py"})
"""The package's re-exports, and the graph model the queries share: they hand it numpy
integers, which compiled code refuses where the types say int."""
ANALYSIS = (
    Path("worker/index/analysis/definitions.py"),
    Path("worker/index/analysis/outline.py"),
)
"""The analysis's modules that loop in Python per definition and per outline line."""


COMPILE_VIEW = (
    "--config-file=",
    "--no-site-packages",
    "--ignore-missing-imports",
    "--follow-imports=skip",
    "--cache-dir=/dev/null",
)
"""mypy's view when compiling: the compiled modules' source alone, anything they import from
elsewhere (numpy, the rest of the project) typed Any. The compile then needs nothing
installed, and makes the same code whatever is; the type check is CI's mypy, strict.

No cache: every compile reads all the modules afresh. Recompiling one module against the
cached others made C that did not build (mypyc's separate compilation referred to an enum's
constructor another module's library does not export)."""


def compiled_modules() -> list[str]:
    """The modules mypyc compiles (paths relative to the project): the graph build's, and
    the analysis's ANALYSIS."""
    graph = [
        path.relative_to(HERE)
        for path in (HERE / RESOLVER).glob("*.py")
        if path.name not in NOT_COMPILED
    ]
    return sorted(str(path) for path in [*graph, *ANALYSIS])


def ext_modules() -> list[object]:
    """mypyc's extensions, or none when REPO_READER_PURE_PYTHON=1."""
    if os.environ.get("REPO_READER_PURE_PYTHON") == "1":
        return []
    from mypyc.build import mypycify

    # One library per module (not one for all): its C compiles in a fraction of the time,
    # and on every core at once.
    return list(mypycify([*COMPILE_VIEW, *compiled_modules()], opt_level="3", separate=True))


if __name__ == "__main__":  # setuptools runs this file as __main__; tests only read it
    setup(ext_modules=ext_modules(), options={"build_ext": {"parallel": os.cpu_count() or 1}})
