"""bench.docs runs on a small corpus: every document timed, then skipped, then the changed
ones regenerated after the second sync."""

from __future__ import annotations

from pathlib import Path

from bench.corpora import PreparedCorpus
from bench.docs import corpus_rows
from tests.support.cache import SAMPLE_FILES
from tests.support.gitrepos import make_repo


def test_the_rows_show_each_document_and_the_engines_answers(tmp_path: Path) -> None:
    """Five documents with sizes, a skip at the same head, a partial regeneration after sync 2."""
    repo, head = make_repo(tmp_path / "sample", SAMPLE_FILES)
    corpus = PreparedCorpus(
        name="sample",
        version="1",
        path=Path(repo.path),
        base_commit=head,
        edited_commit=None,
        files=len(SAMPLE_FILES),
        source_bytes=0,
        prepare_seconds=0.0,
        reused=True,
    )
    rows = {row[1]: row for row in corpus_rows(corpus, tmp_path / "work")}
    for doc_type in ("repo_map", "api_index", "license_report", "churn_report", "architecture"):
        assert rows[doc_type][2].endswith(" KiB")
    assert rows["same head, asked again"][4].startswith("regenerated nothing; skipped")
    after = rows["after sync 2"][4]
    assert after.startswith("regenerated repo_map, license_report, churn_report; skipped")
    assert "api_index, architecture: nothing they depend on changed" in after
    assert rows["asked again"][4].startswith("regenerated nothing")
