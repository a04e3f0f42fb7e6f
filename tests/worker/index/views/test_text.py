"""Ranking a report: its title weighs more than its body."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.worker.index.conftest import RepoFactory, open_commit_index
from worker.index import CommitIndex
from worker.index.views.ranking import RankingParams, analyse_query

FILES = {
    "pkg/cache.py": b'''def expire(entries, now):
    """Drop the cache entries whose deadline passed."""
    return {key: entry for key, entry in entries.items() if entry.deadline > now}
''',
    "pkg/session.py": b'''def connect(host, retries):
    """Open a session to the host, retrying the connection when it is refused."""
    for attempt in range(retries):
        session = open_session(host)
        if session:
            return session
    raise ConnectionError(host)
''',
}

REPORT = """\
Stale cache entries never expire

```python
client = make_client(host, retries=3)
```

The client reconnects its session to the host, and after the session
reconnects the connection is retried and the session comes back.
"""


@pytest.fixture
def index(make_repo: Callable[[str], RepoFactory], tmp_path: Path) -> CommitIndex:
    factory = make_repo("pkg")
    return open_commit_index(factory, factory.commit(FILES), tmp_path)


def test_title_terms_outweigh_a_longer_body(index: CommitIndex) -> None:
    """The file the title is about ranks first though the body's words favour another."""
    assert next(index.ranked(REPORT)).path == "pkg/cache.py"
    unboosted = analyse_query(REPORT, RankingParams(title_boost=1.0))
    assert next(index.ranked(unboosted)).path == "pkg/session.py"


def test_a_question_has_no_title_boost() -> None:
    """A one-line question is weighed as it is: it has no title apart from its text."""
    question = "where do cache entries expire"
    assert (
        analyse_query(question).weights
        == analyse_query(question, RankingParams(title_boost=1.0)).weights
    )
