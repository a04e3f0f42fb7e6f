"""A file's scope answers lookups by its language's rules, however the commit's tables are
made."""

from __future__ import annotations

from worker.index.views.graph.scope import Scopes


def _scopes(table: dict[str, int], asked: list[set[str] | None]) -> Scopes:
    def only_definitions(wanted: set[str] | None) -> dict[str, int]:
        asked.append(wanted)
        return {k: v for k, v in table.items() if wanted is None or k in wanted}

    return Scopes(
        types=[],
        file_nodes={},
        dir_nodes={},
        grammars={},
        entities_of=lambda file: [],
        file_of=lambda node: node,
        only_definitions=only_definitions,
    )


def test_only_tabulates_the_expected_names_and_still_answers_any_other() -> None:
    """Told which names it will be asked, `only` tabulates just those; a name beyond them
    gets the answer the whole table gives."""
    asked: list[set[str] | None] = []
    scopes = _scopes({"alpha": 5, "beta": 6}, asked)
    scopes.expect_only({"alpha"})
    assert scopes.only("alpha") == 5
    assert asked == [{"alpha"}]
    assert scopes.only("beta") == 6
    assert scopes.only("gamma") is None
    assert scopes.only("alpha") == 5
    assert asked == [{"alpha"}, None]


def test_only_without_expectations_tabulates_every_name_once() -> None:
    """With nothing expected, the whole table is made on the first question and kept."""
    asked: list[set[str] | None] = []
    scopes = _scopes({"alpha": 5}, asked)
    assert scopes.only("alpha") == 5
    assert scopes.only("beta") is None
    assert asked == [None]
