"""Evidence beyond terms: the best files' imports rise, the ones their best code calls the
most; a raised exception's module gains nothing; a named wrapper lends its name to the code
it calls."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.worker.index.conftest import RepoFactory, open_commit_index
from worker.index import CommitIndex
from worker.index.views.ranking import RankingParams, SearchHit, Signals

IMPORTING = {
    "pkg/__init__.py": b"",
    "pkg/client.py": b'''from .retry import backoff
from pkg.errors import TimeoutFailure


def fetch(url, attempts):
    """Fetch a url; a timeout fails the fetch after the attempts."""
    for attempt in range(attempts):
        reply = request(url, timeout=backoff(attempt))
        if reply:
            return reply
    raise TimeoutFailure(url)
''',
    "pkg/retry.py": b'''def backoff(attempt):
    """The delay before an attempt."""
    return 2**attempt
''',
    "pkg/errors.py": b'''class TimeoutFailure(Exception):
    """A fetch ran out of attempts."""
''',
    "pkg/schedule.py": b'''def delay(job):
    """The delay before a job runs again after a fetch failed."""
    return job.delay
''',
}

FETCH_REPORT = """\
fetch gives up too early on a slow url

```python
fetch("https://example.org", attempts=3)
```

pkg.errors.TimeoutFailure: https://example.org

The delay before the last attempt looks too short.
"""


CALLING = {
    "pkg/__init__.py": b"",
    "pkg/client.py": b'''from .retry import backoff
from .format import render


def fetch(url, attempts):
    """Fetch a url; a slow url is tried again after a pause."""
    for attempt in range(attempts):
        reply = request(url, timeout=backoff(attempt))
        if reply:
            return reply


def describe(reply):
    return render(reply)
''',
    "pkg/format.py": b'''def render(value):
    """The pause between tries."""
    return str(value)
''',
    "pkg/retry.py": b'''def backoff(value):
    """The pause between tries."""
    return str(value)
''',
}

SLOW_REPORT = """\
fetch gives up on a slow url

```python
fetch(url, attempts=3)
```

The pause between tries looks too short.
"""

WRAPPING = {
    "pkg/__init__.py": b"",
    "pkg/termui.py": b'''from ._pager import pipe


def show_paged(text, color):
    """Show the text."""
    return pipe(text, color)
''',
    "pkg/_pager.py": b'''import os


def pipe(text, color):
    """Start the pager the environment names: without raw mode, less prints color codes
    as they are, so the raw flag is added to the command when color is shown."""
    command = os.environ.get("PAGER", "less")
    if color and command == "less":
        command += " -R"
    return run(command, text)
''',
}

PAGED_QUESTION = (
    "{name} prints raw color codes: which pager command does it start, and when is the raw"
    " flag added?"
)


@pytest.fixture
def importing(make_repo: Callable[[str], RepoFactory]) -> tuple[RepoFactory, str]:
    factory = make_repo("importing")
    return factory, factory.commit(IMPORTING)


def _files(index: CommitIndex, report: str) -> list[str]:
    return list(dict.fromkeys(hit.path for hit in index.ranked(report)))


def test_a_module_the_best_file_imports_rises_marked_graph(
    importing: tuple[RepoFactory, str], tmp_path: Path
) -> None:
    """A file the best file imports outranks one sharing as many words, and says why."""
    index = open_commit_index(*importing, tmp_path)
    ranked = _files(index, FETCH_REPORT)
    assert ranked[0] == "pkg/client.py"
    assert ranked.index("pkg/retry.py") < ranked.index("pkg/schedule.py")
    retry = next(hit for hit in index.ranked(FETCH_REPORT) if hit.path == "pkg/retry.py")
    assert Signals.GRAPH in retry.signals
    alone = RankingParams(
        import_weight=0.0, import_support_weight=0.0, call_support_weight=0.0, delegate_weight=0.0
    )
    unlinked = _files(open_commit_index(*importing, tmp_path, alone), FETCH_REPORT)
    assert unlinked.index("pkg/retry.py") > unlinked.index("pkg/schedule.py")


def test_the_raised_exceptions_module_gains_nothing_from_imports(
    importing: tuple[RepoFactory, str], tmp_path: Path
) -> None:
    """Where a raised exception is defined gains no graph signal, though the best file
    imports it; were it not raised, the import would count."""
    index = open_commit_index(*importing, tmp_path)

    def errors_signals(report: str) -> Signals:
        return next(hit.signals for hit in index.ranked(report) if hit.path == "pkg/errors.py")

    assert Signals.GRAPH not in errors_signals(FETCH_REPORT)
    not_raised = FETCH_REPORT.replace("pkg.errors.TimeoutFailure: https://example.org", "")
    assert Signals.GRAPH in errors_signals(not_raised + "timeout failure\n")


def test_a_module_the_best_code_calls_outranks_one_only_imported(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """Of two imported files matching alike, the one whose function the best chunk calls
    ranks first; counted as a plain import, the tie goes the other way."""
    factory = make_repo("calling")
    commit = factory.commit(CALLING)
    ranked = _files(open_commit_index(factory, commit, tmp_path), SLOW_REPORT)
    assert ranked[:3] == ["pkg/client.py", "pkg/retry.py", "pkg/format.py"]
    plain = RankingParams(
        call_support_weight=RankingParams().import_support_weight, delegate_weight=0.0
    )
    ranked = _files(open_commit_index(factory, commit, tmp_path, plain), SLOW_REPORT)
    assert ranked[:3] == ["pkg/client.py", "pkg/format.py", "pkg/retry.py"]


def test_a_named_wrapper_lends_its_name_to_the_code_it_calls(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A question naming a wrapper ranks the module the wrapper calls into first, marked
    graph; without the lending, the wrapper's name keeps it first."""
    factory = make_repo("wrapping")
    commit = factory.commit(WRAPPING)
    question = PAGED_QUESTION.format(name="show_paged()")
    index = open_commit_index(factory, commit, tmp_path)
    assert _files(index, question)[:2] == ["pkg/_pager.py", "pkg/termui.py"]
    assert Signals.GRAPH in next(index.ranked(question)).signals
    alone = open_commit_index(factory, commit, tmp_path, RankingParams(delegate_weight=0.0))
    assert _files(alone, question)[:2] == ["pkg/termui.py", "pkg/_pager.py"]


def test_a_definition_holding_the_named_word_lends_nothing(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """Naming `show` links `show_paged` by its word, but only a definition of the name
    itself lends: the module it calls gains no graph signal and no score."""
    factory = make_repo("wrapping")
    commit = factory.commit(WRAPPING)
    question = PAGED_QUESTION.format(name="`show`")

    def pager_hit(params: RankingParams | None) -> SearchHit:
        index = open_commit_index(factory, commit, tmp_path, params)
        assert (
            Signals.ENTITY
            in next(h for h in index.ranked(question) if h.path == "pkg/termui.py").signals
        )
        return next(hit for hit in index.ranked(question) if hit.path == "pkg/_pager.py")

    lent, alone = pager_hit(None), pager_hit(RankingParams(delegate_weight=0.0))
    assert Signals.GRAPH not in lent.signals
    assert lent.score == alone.score
