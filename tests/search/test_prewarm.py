"""The fork server's warm-up: every parsed language loaded once, and inherited by workers."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from worker.search import build_workers
from worker.search.languages import PARSED_LANGUAGES, language_of

ROOT = Path(__file__).resolve().parents[2]
_LOADED = "sorted(__import__('worker.search.languages', fromlist=['_grammars'])._grammars)"


def test_warm_up_has_a_sample_for_every_parsed_language() -> None:
    """Each parsed language has a sample path, and the path is read as that language."""
    from worker.search.prewarm import _PATHS

    assert set(_PATHS) == PARSED_LANGUAGES
    assert {language: language_of(path) for language, path in _PATHS.items()} == {
        language: language for language in PARSED_LANGUAGES
    }


def test_importing_prewarm_loads_every_grammar() -> None:
    """A fresh interpreter that imports the module has every grammar and query loaded."""
    probe = f"import worker.search.prewarm; print({_LOADED})"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == str(sorted(PARSED_LANGUAGES))


def test_build_workers_start_with_the_grammars_loaded() -> None:
    """A worker forked from the build's fork server has every grammar before its first blob."""
    assert "worker.search.prewarm" in build_workers.fork_server_preload()
    context = build_workers.fork_server()
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        assert pool.submit(eval, _LOADED).result() == sorted(PARSED_LANGUAGES)
