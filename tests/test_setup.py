"""setup.py: the graph build's modules are imported compiled, from a build of their source."""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import runpy
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _setup() -> dict[str, Any]:
    return runpy.run_path(str(ROOT / "setup.py"), run_name="setup")


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def test_the_graph_build_is_compiled_and_the_model_is_not() -> None:
    """setup.py compiles the graph package's modules but its model and re-exports, and the
    analysis's definitions and outlines."""
    compiled = _setup()["compiled_modules"]()
    assert "worker/index/views/graph/scope.py" in compiled
    assert "worker/index/views/graph/build.py" in compiled
    assert "worker/index/analysis/definitions.py" in compiled
    assert "worker/index/analysis/outline.py" in compiled
    assert not any(p.endswith(("model.py", "__init__.py")) for p in compiled)
    assert all((ROOT / p).is_file() for p in compiled)


def test_compiled_modules_are_imported_from_a_build_no_older_than_their_source() -> None:
    """Installed as the README says, each compiled module is its build, not older than its
    source: a changed module needs `pip install -e .` again (REPO_READER_PURE_PYTHON=1 installs
    none, and the source is imported)."""
    pure = os.environ.get("REPO_READER_PURE_PYTHON") == "1"
    for path in _setup()["compiled_modules"]():
        module = importlib.import_module(_module_name(path))
        imported = Path(module.__file__ or "")
        if pure:
            assert imported.suffix == ".py", imported
            continue
        assert imported.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), (
            f"{path} is not compiled: pip install -e . (or set REPO_READER_PURE_PYTHON=1)"
        )
        source = ROOT / path
        if imported.parent == source.parent:  # an editable install: built beside the source
            assert imported.stat().st_mtime + 1 >= source.stat().st_mtime, (
                f"{path} changed since it was compiled: pip install -e . again"
            )


def test_a_pure_python_build_compiles_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """REPO_READER_PURE_PYTHON=1 builds no extension (no C compiler needed)."""
    monkeypatch.setenv("REPO_READER_PURE_PYTHON", "1")
    assert _setup()["ext_modules"]() == []
