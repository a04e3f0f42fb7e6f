"""bench.graph's edge cases run: every language is measured, Python meets its targets."""

from __future__ import annotations

from bench.graph import PRECISION, RECALL, precision_recall
from bench.graph_cases import CASES


def test_every_language_case_is_measured_and_python_meets_its_targets() -> None:
    """One row per case; Python's edges at least 0.95 precise and 0.90 complete."""
    rows = {language: (p, r) for language, p, r, _, _ in precision_recall()}
    assert set(rows) == {case.language for case in CASES}
    assert all(0.0 <= p <= 1.0 and 0.0 <= r <= 1.0 for p, r in rows.values())
    precision, recall = rows["python"]
    assert precision >= PRECISION
    assert recall >= RECALL
