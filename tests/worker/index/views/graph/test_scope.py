"""A file's scope answers lookups by its language's rules, however the commit's tables are
made."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.index.views.graph.scope import ByBaseName, Scopes


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


_PATHS = st.lists(
    st.lists(st.sampled_from(["a", "b", "c.h", "d.py"]), min_size=1, max_size=4).map("/".join),
    max_size=30,
)


@given(_PATHS, st.sampled_from(["a", "b", "c.h", "d.py", "e"]))
def test_by_base_name_gives_each_names_items_in_the_order_given(
    paths: list[str], name: str
) -> None:
    """The items whose path ends in a base name come back in the order they were given, and
    a name no path has gives none."""
    index = ByBaseName(paths, list(range(len(paths))))
    assert index.get(name) == [i for i, path in enumerate(paths) if path.split("/")[-1] == name]
