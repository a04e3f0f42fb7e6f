"""Recognise a statement that a project's licenses are offered as a choice.

"This software is made available under the terms of *either* of the licenses found in
LICENSE.APACHE or LICENSE.BSD", "dual-licensed under the Unlicense and MIT licenses", a
README's "Licensed under either of ... at your option": the license files beside such a
statement are alternatives (`OR`), not all binding (`AND`).
"""

from __future__ import annotations

import re

CHOICE = re.compile(
    r"\beither\b|\bat (?:your|the user's|the licensee's) (?:option|choice)"
    r"|\bchoice of\b|\bone of the following licen[cs]es",
    re.IGNORECASE,
)
"""Words that offer a choice between licenses."""
STATEMENT_CHOICE = re.compile(rf"{CHOICE.pattern}|\bdual[- ]?licen[cs]", re.IGNORECASE)
"""Also "dual-licensed", which offers a choice in a statement about the project's license
files; inside a license file it may say that two licenses both apply ("dual licensed (both
MIT and PSF)")."""
MAX_STATEMENT_CHARS = 4000
"""A longer license-file text is not a short statement about other files."""
MAX_README_CHARS = 64 * 1024
_LICENSE_WORD = re.compile(r"licen[cs]", re.IGNORECASE)
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def offers_choice(text: str) -> bool:
    """Tell whether a short license-file text says its project's licenses may be chosen from."""
    return (
        len(text) <= MAX_STATEMENT_CHARS
        and _LICENSE_WORD.search(text) is not None
        and STATEMENT_CHOICE.search(text) is not None
    )


def readme_offers_choice(text: str) -> bool:
    """Tell whether a paragraph of a README offers a choice between licenses."""
    return any(
        _LICENSE_WORD.search(paragraph) is not None
        and STATEMENT_CHOICE.search(paragraph) is not None
        for paragraph in _PARAGRAPH_BREAK.split(text[:MAX_README_CHARS])
    )
