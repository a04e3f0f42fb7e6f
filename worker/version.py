"""The installed repo-reader's version, as its package metadata says."""

from __future__ import annotations

import importlib.metadata
from functools import cache


@cache
def product_version() -> str:
    """The version of the installed `repo-reader` distribution; `unknown` when it runs from a
    source tree that was never installed."""
    try:
        return importlib.metadata.version("repo-reader")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
