"""Recognise license files by name and identify the license their text is.

A text is read with licenseclassifier (a port of Google's licensecheck): it finds every
license text in a file, with where each starts and ends. The first one is the project's
own license; the others (a composite file: the project's license followed by those of
bundled code) are reported as additional. The first license must cover most of the text
before the next one starts (`MIN_COVERAGE`): a file that only mentions a license, or holds
a truncated or edited one, is no license. A preamble that offers a choice ("either",
"dual-licensed", "at your option") before several license texts makes them an `OR`.

Texts licenseclassifier does not know (its patterns allow little rewording) are given to
askalono, whose score must reach `IDENTIFY_THRESHOLD`. Its scores, measured with pyaskalono
0.2 (Dice coefficient over word bigrams, 0..1): full standard texts 0.95-1.0; the LICENSE
files of ~90 installed packages holding one license 0.915-1.0; READMEs, source files,
random or shuffled words and one-line notes at most 0.569; composite files 0.10-0.88,
often naming a bundled license. Below 0.9, no license: for a license filter a missing
license (an explicit LICENSE_UNAVAILABLE) is safer than a wrong one.

A GNU license text does not say whether later versions are granted (the project's notices
do), so it is reported as `-only`, the reading that is never wrong to comply with.
"""

from __future__ import annotations

import re

import askalono
import msgspec
import structlog
from licenseclassifier import identify_license as licensecheck_regions

from worker.licenses.expressions import license_family, normalise_expression
from worker.licenses.statements import CHOICE

log = structlog.get_logger(__name__)

IDENTIFY_THRESHOLD = 0.9
"""The lowest askalono score accepted as an identification (see the module docstring)."""
MIN_COVERAGE = 0.6
"""The share of the words before the next license (or the end) that the first license text
must cover: a title, a copyright line or a sentence saying what follows may be around it."""
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


_WORD = re.compile(r"\w+")
_EXCEPTION = re.compile(r"\bexceptions?\b", re.IGNORECASE)


class TextLicense(msgspec.Struct, frozen=True, kw_only=True):
    """The license a text is, how sure the identification is, and what else it carries."""

    spdx: str
    """An SPDX expression: the project's license (an `OR` when the text offers a choice)."""
    confidence: float
    """0..1: the share of the text around the license that the license text covers (a
    declaration such as an SPDX tag: 1.0; askalono's fallback: its score)."""
    additional: tuple[str, ...] = ()
    """Other licenses found after the project's own (bundled code), first seen first."""


def is_license_file_name(name: str) -> bool:
    """Tell whether a file name is one of LICENSE, LICENCE, COPYING, UNLICENSE (any case, suffix).

    Suffixed names count (LICENSE.md, LICENSE-MIT, COPYING.LESSER); a source file such as
    `license.py` does not.
    """
    return _LICENSE_FILE_NAME.match(name) is not None and _CODE_FILE_NAME.search(name) is None


def identify_license_text(text: str) -> str | None:
    """Return the SPDX expression of the license `text` is, or None when none is sure."""
    found = identify_license(text)
    return found.spdx if found is not None else None


def identify_license(text: str) -> TextLicense | None:
    """Identify the license `text` is (see the module docstring), or None when none is sure."""
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")
    if not normalised.strip():
        return None
    regions = [
        (spdx, region.start, region.end)
        for region in licensecheck_regions(normalised, coverage_threshold=0.0)
        if (spdx := normalise_expression(region.id)) is not None
    ]
    if regions:
        return _from_regions(normalised, regions)
    match = best_license_match(normalised)
    if match is None:
        return None
    name, score = match
    spdx = normalise_expression(name)
    if score < IDENTIFY_THRESHOLD or spdx is None:
        log.debug("license_text_unidentified", best_guess=name, score=round(score, 4))
        return None
    return TextLicense(spdx=spdx, confidence=round(score, 3))


def _from_regions(text: str, regions: list[tuple[str, int, int]]) -> TextLicense | None:
    """The project license from licenseclassifier's regions (SPDX id, start, end), or None
    when they do not decide."""
    first, start, end = regions[0]
    segment_end = regions[1][1] if len(regions) > 1 else len(text)
    covered = _words(text, start, end)
    coverage = covered / max(covered, _words(text, 0, segment_end))
    if coverage < MIN_COVERAGE:
        log.debug("license_text_uncovered", best_guess=first, coverage=round(coverage, 3))
        return None
    if _EXCEPTION.search(text[:start]) or _EXCEPTION.search(text[end:segment_end]):
        # "As a special exception ..." beside the text: the license with an exception the
        # text alone cannot name; the project's metadata or an SPDX tag may.
        log.debug("license_text_with_exception", best_guess=first)
        return None
    later: list[str] = []
    for spdx, _, _ in regions[1:]:
        # A GNU text carries a sample "or any later version" notice: the same license again.
        if license_family(spdx) != license_family(first) and spdx not in later:
            later.append(spdx)
    if later and CHOICE.search(text[:start]):
        choice = " OR ".join([first, *later])
        spdx = normalise_expression(choice) or choice
        return TextLicense(spdx=spdx, confidence=round(coverage, 3))
    return TextLicense(spdx=first, confidence=round(coverage, 3), additional=tuple(later))


def _words(text: str, start: int, end: int) -> int:
    return sum(1 for _ in _WORD.finditer(text, start, end))


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
