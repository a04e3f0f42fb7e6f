"""One language table: a file's language from its name, else its extension; filters; parsers."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.errors import InvalidRequest
from worker.index.analysis.grammars import PARSED_LANGUAGES, grammar_of, grammars_of
from worker.languages import (
    EXTENSIONS,
    FILE_NAMES,
    LanguageFilter,
    extension_of,
    extensions_pattern,
    language_of,
)


def _by_pathlib(path: str) -> str | None:
    p = PurePosixPath(path)
    by_extension = {e: language for language, exts in EXTENSIONS.items() for e in exts}
    by_name = {n: language for language, names in FILE_NAMES.items() for n in names}
    return by_name.get(p.name) or by_extension.get(p.suffix.lower())


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("django/db/models/query.py", "python"),
        ("kernel/sched/core.c", "c"),
        ("src/App.TSX", "typescript"),
        ("docs/index.rst", "rst"),
        ("drivers/Kconfig", "kconfig"),
        ("include/linux/list.h", "c"),
        ("a/.py", None),
        ("a/b.", None),
        ("a.b/README", None),
    ],
)
def test_language_of_examples(path: str, language: str | None) -> None:
    """Extensions count case-insensitively; a leading or trailing dot is no extension."""
    assert language_of(path) == language


names = st.sampled_from(
    ["a", "x.py", ".py", "..py", "py.", "a..", "Makefile", "b.PY", "c.tar.gz", "d.h", "e.C"]
)
"""Names git allows in a tree ("." and ".." are not: pathlib would drop or keep them)."""


@settings(max_examples=300, deadline=None)
@given(st.lists(names, min_size=1, max_size=4))
def test_language_of_agrees_with_pathlib(components: list[str]) -> None:
    """For any git path, the same answer as PurePosixPath's name and suffix give."""
    path = "/".join(components)
    assert language_of(path) == _by_pathlib(path)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(names, st.sampled_from(["x.c++", "y.Cpp", "GNUmakefile", "Kbuild"])),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from(["c", "cpp", "python", "makefile", "typescript"]),
)
def test_a_language_filter_pattern_selects_what_the_filter_does(
    components: list[str], language: str
) -> None:
    """The RE2 pattern a search runs over all paths at once selects what the filter selects
    one path at a time, and the extension pattern what `extension_of` says."""
    path = "/".join(components)
    wanted = LanguageFilter(language)
    assert bool(re2.search(wanted.pattern, path)) == wanted(path)
    extensions = EXTENSIONS[language]
    by_extension = re2.search(extensions_pattern(extensions), path)
    assert bool(by_extension) == (extension_of(path) in extensions)


def test_one_name_per_language_on_the_wire() -> None:
    """Every extension and file name belongs to one language; TSX is TypeScript."""
    extensions = [e for exts in EXTENSIONS.values() for e in exts]
    names = [n for ns in FILE_NAMES.values() for n in ns]
    assert len(extensions) == len(set(extensions))
    assert len(names) == len(set(names))
    assert language_of("a.tsx") == language_of("a.ts") == "typescript"


def test_grammars_follow_the_table_with_tsx_parsed_as_such() -> None:
    """A parsed file's grammar is its language's, but TSX gets the TSX grammar."""
    assert grammar_of("src/App.tsx") == "tsx"
    assert grammar_of("src/app.ts") == "typescript"
    assert grammar_of("kernel/fork.c") == "c"
    assert grammar_of("README.md") is None
    assert {grammar_of(f"x{e}") for exts in EXTENSIONS.values() for e in exts} - {None} == (
        PARSED_LANGUAGES
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["a", "x.py", ".tsx", "c.tsx", "b.TSX", "py.", "Makefile", "d.h"]),
            min_size=1,
            max_size=3,
        ).map("/".join),
        max_size=12,
    )
)
def test_grammars_of_many_paths_agree_with_each_path_alone(paths: list[str]) -> None:
    """A tree's grammars looked up together are each path's own, names and extensions alike."""
    assert grammars_of(paths) == [grammar_of(p) for p in paths]


def test_a_header_declaring_cpp_is_parsed_as_cpp() -> None:
    """A `.h` holding a class, namespace or template gets the C++ grammar; a C one stays C."""
    assert (
        grammar_of("geo/shape.h", b"#pragma once\nnamespace geo {\nclass Shape {};\n}\n") == "cpp"
    )
    assert grammar_of("t.h", b"template <typename T>\nT id(T x) { return x; }\n") == "cpp"
    assert grammar_of("list.h", b"struct node;\nint list_len(struct node *n);\n") == "c"
    assert grammar_of("list.h", b"/* a class of problems */\nint f(void);\n") == "c"


def test_a_language_filter_takes_aliases_and_shared_headers() -> None:
    """Aliases name the same language; C++ filters select `.h` headers too."""
    assert LanguageFilter("TS")("src/App.tsx")
    assert LanguageFilter("c++")("include/util.h")
    assert LanguageFilter("c")("include/util.h")
    assert LanguageFilter("makefile")("drivers/Makefile")
    assert not LanguageFilter("python")("setup.cfg")
    with pytest.raises(InvalidRequest) as raised:
        LanguageFilter("klingon")
    assert "python" in raised.value.details["known"]
