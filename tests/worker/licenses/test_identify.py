"""Tests of identifying license texts and recognising license file names."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.gitrepos import MIT_LICENSE
from tests.worker.licenses.conftest import STANDARD_TEXTS, TEXTS, license_text
from worker.licenses.identify import (
    IDENTIFY_THRESHOLD,
    MAX_LICENSE_FILE_BYTES,
    best_license_match,
    identify_license_text,
    is_license_file_name,
    license_file_text,
)

README = """# fastroute

A tiny HTTP router for Python.

## Install

    pip install fastroute

## Usage

Create a `Router`, register handlers with `add_route`, then call `dispatch`.
Contributions are welcome: open an issue first. This project is licensed under the
terms of the MIT license, see the LICENSE file for details.
"""
SOURCE = '''"""Request routing."""


class Router:
    """Maps URL paths to handler functions."""

    def __init__(self):
        self.routes = {}

    def add_route(self, path, handler):
        self.routes[path] = handler
'''


@pytest.mark.parametrize("spdx_id", sorted(STANDARD_TEXTS))
def test_standard_texts_are_identified(spdx_id: str) -> None:
    """Each full standard text is identified as its license, above the threshold."""
    assert identify_license_text(license_text(spdx_id)) == spdx_id
    match = best_license_match(license_text(spdx_id))
    assert match is not None
    assert match[1] >= IDENTIFY_THRESHOLD


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t\n",
        "see the website",
        "MIT",
        "Licensed under the MIT license",
        "TODO: add a license",
        "All rights reserved.",
        "This software is released into the public domain.",
        README,
        SOURCE,
        "lorem ipsum dolor sit amet " * 200,
    ],
)
def test_garbage_is_not_a_license(text: str) -> None:
    """Empty text, one-line notes, a README and code are never identified as a license."""
    assert identify_license_text(text) is None


def test_half_a_license_is_not_enough() -> None:
    """The first half of the MIT text scores below the threshold (0.65 measured)."""
    body = MIT_LICENSE.split("\n\n", 2)[2]
    assert identify_license_text(body[: len(body) // 2]) is None


def test_shuffled_license_words_are_not_a_license() -> None:
    """The GPL's own words in another order are not the GPL."""
    words = license_text("GPL-3.0-only").split()
    assert identify_license_text(" ".join(words[1::2] + words[0::2])) is None


def test_license_on_one_line() -> None:
    """A license reflowed onto a single line is still identified."""
    assert identify_license_text(" ".join(license_text("MIT").split())) == "MIT"


def test_crlf_line_ends() -> None:
    """Windows line ends do not change the identification."""
    assert identify_license_text(license_text("BSD-3-Clause").replace("\n", "\r\n")) == (
        "BSD-3-Clause"
    )


def test_apache_without_appendix_is_apache() -> None:
    """An Apache-2.0 text without its appendix is Apache-2.0, not askalono's near-twin Pixar."""
    text = license_text("Apache-2.0")
    truncated = text[: text.index("APPENDIX")]
    assert best_license_match(truncated) is not None
    assert identify_license_text(truncated) == "Apache-2.0"


def test_pixar_text_stays_pixar() -> None:
    """The real Pixar license (section 6 replaced) is not rewritten to Apache-2.0."""
    text = license_text("Apache-2.0")
    text = text[: text.index("APPENDIX")]
    section_6 = re.compile(r"6\. Trademarks\..*?NOTICE file\.", re.DOTALL)
    pixar = section_6.sub(
        "6. Trademarks. This License does not grant permission to use the trade\n"
        "      names, trademarks, service marks, or product names of the Licensor\n"
        "      and its affiliates, except as required to comply with Section 4(c) of\n"
        "      the License and to reproduce the content of the NOTICE file.",
        text,
    )
    assert pixar != text
    assert identify_license_text(pixar) == "Pixar"


_WORDS = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=12)


@settings(max_examples=30, deadline=None)
@given(st.lists(_WORDS, max_size=30).map(" ".join))
def test_short_random_text_is_never_identified(text: str) -> None:
    """Up to 30 random words never reach the threshold."""
    assert identify_license_text(text) is None


_LICENSE_WORDS = sorted(
    {word for path in TEXTS.iterdir() for word in re.findall(r"[A-Za-z]+", path.read_text())}
)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(_LICENSE_WORDS), max_size=300).map(" ".join))
def test_random_license_words_are_never_identified(text: str) -> None:
    """Words drawn from license texts, in random order, never reach the threshold."""
    assert identify_license_text(text) is None


@pytest.mark.parametrize(
    "name",
    [
        "LICENSE",
        "license",
        "LICENCE",
        "License.md",
        "LICENSE.txt",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "LICENSE_APACHE-2.0.txt",
        "COPYING",
        "COPYING.LESSER",
        "copying.lib",
        "UNLICENSE",
    ],
)
def test_license_file_names(name: str) -> None:
    """The usual license file names, any case, with or without suffix, are recognised."""
    assert is_license_file_name(name)


@pytest.mark.parametrize(
    "name",
    ["LICENSES", "licenses.py", "license.py", "LICENSE.json", "README", "MYLICENSE", "NOTICE", ""],
)
def test_other_file_names(name: str) -> None:
    """Source files and look-alike names are not license files."""
    assert not is_license_file_name(name)


def test_binary_content_is_not_text() -> None:
    """Bytes with NUL in them are not read as a license text."""
    assert license_file_text(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR") is None


def test_oversized_content_is_not_text() -> None:
    """A file above the size cap is not read."""
    assert license_file_text(b"a" * (MAX_LICENSE_FILE_BYTES + 1)) is None


def test_latin1_license_is_identified() -> None:
    """A Latin-1 license file decodes (as Windows-1252) and is identified."""
    data = license_text("MIT").replace("Example Author", "Jürgen Groß").encode("latin-1")
    text = license_file_text(data)
    assert text is not None
    assert "Jürgen" in text
    assert identify_license_text(text) == "MIT"
