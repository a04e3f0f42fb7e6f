"""Recognise license files by name and identify their text with askalono.

The confidence threshold comes from scores measured with pyaskalono 0.2 (Dice
coefficient over word bigrams, 0..1):

- full standard texts: MIT, BSD-3-Clause, Apache-2.0, MPL-2.0 and CC0-1.0 score 1.000;
  GPL-3.0 0.998, LGPL-2.1 0.999, GPL-2.0 0.988, BSD-3-Clause in the 4.4BSD wording
  0.958, ISC 0.955 (SPDX's template says "ISC" where most files say "the author");
- the LICENSE files of the ~90 packages installed here that hold one license, with
  their own copyright lines, a preamble sentence, markdown or reflowed paragraphs:
  0.915 to 1.000, except typing_extensions' (the Python license stack after a page of
  history: 0.846);
- garbage: READMEs, source files, random words, shuffled license texts and one-line
  notes such as "see the website": at most 0.569, and that maximum is a source file
  carrying an MPL notice (a README quoting the GPL: 0.526; "Licensed under the MIT
  license": 0.400);
- composite files (one license plus the texts of bundled third-party code): 0.10 to
  0.88, with the best match often naming the bundled license (numpy's LICENSE.txt comes
  out as GPL-3.0-only at 0.876, mypy's as Python-2.0.1 at 0.873).

`IDENTIFY_THRESHOLD` = 0.9. Anything from 0.6 to 0.9 separates the standard texts from
the garbage; 0.9 also refuses the composite files, whose best match names the wrong
license. For a license filter a missing license (an explicit LICENSE_UNAVAILABLE) is
safer than a wrong one.

Known gaps: the LGPL-3.0 text alone scores 0.30 (SPDX's template includes the GPL-3.0
text it amends), so a COPYING.LESSER is not identified; a GPL text is reported as
`-only`, since the "or any later version" grant is not in the license text itself.
"""

from __future__ import annotations

import re

import askalono
import structlog

log = structlog.get_logger(__name__)

IDENTIFY_THRESHOLD = 0.9
"""The lowest askalono score accepted as an identification (see the module docstring)."""
MAX_LICENSE_FILE_BYTES = 256 * 1024
"""A larger "license file" is a bundle of notices, not one license; it is not read."""

_LICENSE_FILE_NAME = re.compile(
    r"^(?:licen[cs]e|copying|unlicense)(?:[-._][A-Za-z0-9][A-Za-z0-9._+-]*)?$", re.IGNORECASE
)
_CODE_FILE_NAME = re.compile(
    r"\.(?:c|cc|cpp|cs|go|h|hpp|java|js|json|kt|lua|php|pl|pm|py|rb|rs|sh|swift|toml|ts|xml|ya?ml)$",
    re.IGNORECASE,
)
_SPDX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]*$")
# askalono's Pixar template is Apache-2.0 without the appendix and with section 6
# replaced, so an Apache-2.0 text whose appendix was dropped matches Pixar best
# (0.983 on the LICENSE files of requests, packaging and structlog). Section 6 decides.
_APACHE_SECTION_6 = "reasonable and customary use in describing the origin of the work"
_PIXAR_SECTION_6 = "except as required to comply with section 4(c)"


def is_license_file_name(name: str) -> bool:
    """Tell whether a file name is one of LICENSE, LICENCE, COPYING, UNLICENSE (any case, suffix).

    Suffixed names count (LICENSE.md, LICENSE-MIT, COPYING.LESSER); a source file such as
    `license.py` does not.
    """
    return _LICENSE_FILE_NAME.match(name) is not None and _CODE_FILE_NAME.search(name) is None


def identify_license_text(text: str) -> str | None:
    """Return the SPDX id of the license `text` is, or None when no license matches confidently."""
    match = best_license_match(text)
    if match is None:
        return None
    name, score = match
    if score < IDENTIFY_THRESHOLD:
        log.debug("license_text_unidentified", best_guess=name, score=round(score, 4))
        return None
    return name


def best_license_match(text: str) -> tuple[str, float] | None:
    """Return askalono's best match for `text` and its score, whatever the score."""
    normalised = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not normalised:
        return None
    if "\n" not in normalised:
        # askalono drops a text's first line as a title; on a one-line text that is all of it.
        normalised = "\n" + normalised
    result = askalono.identify(normalised)
    name = str(result.name)
    score = float(result.score)
    if _SPDX_ID.match(name) is None:
        return None
    if name == "Pixar":
        folded = " ".join(normalised.lower().split())
        if _APACHE_SECTION_6 in folded and _PIXAR_SECTION_6 not in folded:
            name = "Apache-2.0"
    return name, score


def license_file_text(data: bytes) -> str | None:
    """Decode the bytes of a license file, or return None for binary or oversized content.

    Text that is not UTF-8 is read as Windows-1252 (old license files often are Latin-1),
    with undecodable bytes replaced, so the license wording still counts.
    """
    if len(data) > MAX_LICENSE_FILE_BYTES or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")
