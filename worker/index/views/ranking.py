"""The research ranking's vocabulary: its knobs, the analysed query, and the hits it returns
with the signals that placed them."""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass
from typing import Final

import msgspec

from worker.index.analysis.tokens import raw_tokens, token_terms
from worker.index.views.report import ReportQuery, read_report


class Signals(enum.IntFlag):
    """Why a file was ranked where it is."""

    TERMS = 1
    """Its text or path shares terms with the query."""
    ENTITY = 2
    """It defines a name the query mentions."""
    PATH = 4
    """The query names its path or module."""
    GRAPH = 16
    """One of the best files imports it."""
    HISTORY = 8
    """Past commits whose messages match the query changed it."""

    def labels(self) -> tuple[str, ...]:
        """The names of the signals set, in a fixed order."""
        return tuple(s.name.lower() for s in Signals if s in self and s.name)


class SearchHit(msgspec.Struct, frozen=True):
    """One ranked chunk: where it is (path, blob, 1-based inclusive lines) and what it is."""

    path: str
    blob: str
    start_line: int
    end_line: int
    score: float
    symbol: str | None
    language: str | None
    signals: Signals = Signals(0)
    """Why the chunk's file was ranked (`Signals`)."""


@dataclass(frozen=True, slots=True)
class RankingParams:
    """The ranking's knobs; the defaults are the values the quality benchmark chose."""

    k1: float = 1.2
    b: float = 0.75
    w_body: float = 1.0
    w_symbol: float = 3.0
    w_path: float = 1.0
    w_name: float = 2.0
    path_weight: float = 0.5
    """Path-field score relative to the content score in a file's score."""
    rest_weight: float = 0.0
    """Share of a file's other chunks' scores added to its best chunk's."""
    k3: float = 1.5
    """Saturation of a term's count in the query (long reports repeat words)."""
    identifier_boost: float = 1.5
    """Query weight of whole identifiers (`get_user`, `QuerySet`) over plain words."""
    max_terms: int = 24
    """Only the highest-weighted query terms are scored: a long report costs no more."""
    title_boost: float = 2.0
    """Query weight of the terms of a report's title (its first line) over the rest: the
    reporter's own summary of the fault, where the body also holds reproduction and setup."""
    diversity_decay: float = 0.5
    test_prior: float = 0.3
    """Multiplier of files under a tests directory or named like a test."""
    doc_prior: float = 0.5
    """Multiplier of prose files (docs, changelogs: .md, .rst, .txt)."""
    vendored_prior: float = 0.3
    """Multiplier of code the project carries but does not write: vendored and bundled
    libraries, static web assets, translations."""
    config_prior: float = 0.3
    """Multiplier of configuration, CI, lock and license files when the query reads as a bug
    report (they match its version dumps and package names, never its fault)."""
    entity_weight: float = 0.5
    """A chunk defining a name the query mentions gains this share of the geometric mean of
    its own and the best chunk's score, divided by the square root of how many files define
    that name."""
    max_defining_files: int = 16
    """A name defined in more files than this names nothing in particular."""
    path_mention_weight: float = 0.35
    """A file whose path the query names (a traceback frame) gains this share of the best
    file's score: evidence, not the answer (a frame names where the error passed through,
    which is not always where it is fixed)."""
    module_mention_weight: float = 0.25
    """A module a dotted name in the query names gains this share of the best file's score."""
    import_sources: int = 10
    """How many of the best files lend a score to the files they import."""
    import_weight: float = 0.1
    """A file one of the best files imports gains this share of the geometric mean of its own
    score and its importer's (a fix often spans a module and what it imports)."""
    import_support_weight: float = 0.3
    """... or up to this share, as long as that keeps it below its importer: an import
    supports a file's evidence more than it makes it."""
    call_support_weight: float = 1.0
    """The same, up to this share, when the importer's best chunk calls what the import
    binds: the code the report matched uses it."""
    delegate_weight: float = 1.0
    """A file that one of the best files' best chunk calls into gains this share of what the
    chunk gained for defining a name the query mentions (of any query): users name the
    function they call, and its behaviour is often in the code it delegates to."""
    history_weight: float = 0.5
    """The file most lent by past commits matching the query gains this share of the best
    file's score; others in proportion."""


class AnalysedQuery(msgspec.Struct, frozen=True):
    """A query analysed once for every index it is asked of: its weighted terms and mentions."""

    weights: dict[str, float]
    report: ReportQuery


DEFAULT_PARAMS: Final = RankingParams()


def query_weights(query: str, params: RankingParams = DEFAULT_PARAMS) -> dict[str, float]:
    """Each query term with its query-side weight (saturated count, identifier boost)."""
    counts: Counter[str] = Counter()
    identifiers: set[str] = set()
    for token in raw_tokens(query):
        terms = token_terms(token)
        counts.update(terms)
        if len(terms) > 1:
            identifiers.add(terms[-1])
    k3 = params.k3
    return {
        term: (k3 + 1) * n / (k3 + n) * (params.identifier_boost if term in identifiers else 1.0)
        for term, n in counts.items()
    }


def analyse_query(query: str, params: RankingParams = DEFAULT_PARAMS) -> AnalysedQuery:
    """Read the query as a report and weigh the terms of the text that is scored."""
    report = read_report(query)
    weights = query_weights(report.text, params)
    if params.title_boost != 1.0 and report.reads_as_report:
        for term in {t for token in raw_tokens(report.title) for t in token_terms(token)}:
            if term in weights:
                weights[term] *= params.title_boost
    return AnalysedQuery(weights=weights, report=report)
