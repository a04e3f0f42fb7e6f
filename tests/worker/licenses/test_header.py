"""Tests of reading `SPDX-License-Identifier:` headers."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from worker.licenses.header import (
    HEADER_SCAN_LINES,
    MAX_EXPRESSION_CHARS,
    is_spdx_expression,
    spdx_header,
)


@pytest.mark.parametrize(
    "line",
    [
        "# SPDX-License-Identifier: MIT",
        "// SPDX-License-Identifier: MIT",
        "/* SPDX-License-Identifier: MIT */",
        "/*SPDX-License-Identifier: MIT*/",
        " * SPDX-License-Identifier: MIT",
        "-- SPDX-License-Identifier: MIT",
        "<!-- SPDX-License-Identifier: MIT -->",
        "; SPDX-License-Identifier: MIT",
        "% SPDX-License-Identifier: MIT",
        "(* SPDX-License-Identifier: MIT *)",
        "{- SPDX-License-Identifier: MIT -}",
        ".. SPDX-License-Identifier: MIT",
        "REM SPDX-License-Identifier: MIT",
        "SPDX-License-Identifier: MIT",
        "\t#   spdx-license-identifier:   MIT   ",
    ],
)
def test_comment_styles(line: str) -> None:
    """The tag is found after any common comment leader, and closers are stripped."""
    assert spdx_header(f"{line}\nbody()\n") == "MIT"


def test_expression_kept_as_written_with_whitespace_collapsed() -> None:
    """An expression keeps its ids, case and parentheses; only whitespace is collapsed."""
    head = "/*\n * SPDX-License-Identifier: (GPL-2.0-only  WITH\tLinux-syscall-note) OR 0bsd\n */"
    assert spdx_header(head) == "(GPL-2.0-only WITH Linux-syscall-note) OR 0bsd"


def test_dual_license_header() -> None:
    """A dual-license header comes back as the OR expression it declares."""
    assert spdx_header(b"// SPDX-License-Identifier: MIT OR Apache-2.0\n") == "MIT OR Apache-2.0"


def test_several_tags_all_apply() -> None:
    """Several tag lines (REUSE style) are joined with AND, compound values parenthesised."""
    head = "# SPDX-License-Identifier: MIT\n# SPDX-License-Identifier: Apache-2.0 OR BSD-2-Clause\n"
    assert spdx_header(head) == "MIT AND (Apache-2.0 OR BSD-2-Clause)"


def test_repeated_tag_counted_once() -> None:
    """The same value twice is one license, not `MIT AND MIT`."""
    assert spdx_header("# SPDX-License-Identifier: MIT\n# SPDX-License-Identifier: MIT\n") == "MIT"


@pytest.mark.parametrize(
    "text",
    [
        'TAG = "SPDX-License-Identifier: MIT"\n',
        "x = 1  # SPDX-License-Identifier: MIT\n",
        "# SPDX-License-Identifier:\n",
        "# SPDX-License-Identifier: MIT, see LICENSE\n",
        "# SPDX-License-Identifier: MIT OR\n",
        "# SPDX-License-Identifier: (MIT\n",
        "# SPDX-License-Identifier: MIT WITH\n",
        "# SPDX-License-Identifier: MIT AND AND BSD-2-Clause\n",
        "# SPDX-License-Identifier: GPL v2\n",
        "# SPDX-License-Identifier: " + "MIT OR " * 60 + "MIT\n",
        "print('no header here')\n",
        "",
    ],
)
def test_no_header(text: str) -> None:
    """A tag inside code, or one whose value is not an SPDX expression, is no header."""
    assert spdx_header(text) is None


def test_only_the_top_of_the_file_is_read() -> None:
    """A tag below the scanned lines does not count; one just inside them does."""
    filler = "x = 1\n" * (HEADER_SCAN_LINES - 1)
    assert spdx_header(filler + "# SPDX-License-Identifier: MIT\n") == "MIT"
    assert spdx_header(filler + "\n# SPDX-License-Identifier: MIT\n") is None


def test_non_utf8_bytes() -> None:
    """Undecodable bytes on the lines around the tag do not hide it."""
    assert spdx_header(b"\xff\xfe\x00\n# SPDX-License-Identifier: ISC\n\x80\x81") == "ISC"


def test_byte_order_mark() -> None:
    """A UTF-8 byte order mark before the first line's comment is skipped."""
    assert spdx_header("\ufeff// SPDX-License-Identifier: MIT\n".encode()) == "MIT"


@given(st.binary(max_size=4096))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    """Any bytes yield None or a valid SPDX expression, never an exception."""
    header = spdx_header(data)
    assert header is None or is_spdx_expression(header)


@given(st.text(max_size=2048))
def test_arbitrary_text_never_raises(text: str) -> None:
    """Any text yields None or a valid SPDX expression."""
    header = spdx_header(text)
    assert header is None or is_spdx_expression(header)


_IDS = st.sampled_from(["MIT", "Apache-2.0", "GPL-2.0-only", "BSD-3-Clause", "LicenseRef-Acme"])
_EXPRESSIONS = st.recursive(
    _IDS | st.builds("{} WITH Classpath-exception-2.0".format, _IDS),
    lambda inner: st.builds(
        "({} {} {})".format, inner, st.sampled_from(["AND", "OR", "and", "or"]), inner
    ),
    max_leaves=6,
)


@given(_EXPRESSIONS, st.sampled_from(["# {}", "// {}", "/* {} */", "<!-- {} -->", "-- {}", "; {}"]))
def test_valid_expressions_round_trip(expression: str, style: str) -> None:
    """Every well-formed expression in any comment style comes back exactly."""
    assume(len(expression) <= MAX_EXPRESSION_CHARS)
    line = style.format(f"SPDX-License-Identifier: {expression}")
    assert spdx_header(f"#!/bin/sh\n{line}\nrest\n") == expression
