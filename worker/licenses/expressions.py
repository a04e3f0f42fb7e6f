"""Read SPDX license expressions with license_expression: validate, normalise, list their ids.

license_expression's licensing object is not safe for concurrent parsing, so every use
goes through `LICENSING_LOCK`.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

from license_expression import get_spdx_licensing

LICENSING_LOCK = threading.Lock()
"""Held around every call into the shared SPDX licensing object."""

_GNU_FAMILY = re.compile(r"^(A?L?GPL-[0-9.]+)(?:-only|-or-later|\+)?$")
_CARGO_OR = re.compile(r"\s*/\s*")


@functools.cache
def spdx_licensing() -> Any:
    """The SPDX licensing of license_expression (its id list and aliases), loaded once."""
    return get_spdx_licensing()


@functools.lru_cache(maxsize=4096)
def normalise_expression(expression: str) -> str | None:
    """Return `expression` in SPDX's canonical form, or None when it is not a valid SPDX
    expression of known ids (a `LicenseRef-` counts as known).

    Deprecated ids become their current form (`GPL-2.0` -> `GPL-2.0-only`, `GPL-2.0+` ->
    `GPL-2.0-or-later`); a Cargo-style `MIT/Apache-2.0` is read as `MIT OR Apache-2.0`.
    """
    text = " ".join(_CARGO_OR.sub(" OR ", expression).split())
    if not text or len(text) > 512:
        return None
    try:
        with LICENSING_LOCK:
            info = spdx_licensing().validate(text)
    except Exception:  # license_expression raises AttributeError on some malformed input
        return None
    if info.errors or not info.normalized_expression:
        return None
    return str(info.normalized_expression)


@functools.lru_cache(maxsize=4096)
def license_ids(expression: str) -> frozenset[str]:
    """The license ids (without exceptions) an expression names; empty when it does not parse."""
    try:
        with LICENSING_LOCK:
            parsed = spdx_licensing().parse(expression)
            keys = spdx_licensing().license_keys(parsed) if parsed is not None else []
            exceptions = {
                str(symbol.key)
                for symbol in spdx_licensing().license_symbols(parsed)
                if getattr(symbol, "is_exception", False)
            }
    except Exception:  # license_expression raises AttributeError on some malformed input
        return frozenset()
    return frozenset(str(key) for key in keys if str(key) not in exceptions)


def license_family(license_id: str) -> str:
    """The license an id names with its version grant left out (`GPL-2.0-or-later` ->
    `GPL-2.0`): a license text says which GNU license it is, never whether later versions
    are granted, which only the project's notices say."""
    match = _GNU_FAMILY.match(license_id)
    return match.group(1) if match else license_id


def is_refinement(expression: str, text_ids: frozenset[str]) -> bool:
    """Tell whether `expression` names exactly the licenses of `text_ids`, up to version
    grants and exceptions: a declaration that says more precisely what the texts are."""
    ids = license_ids(expression)
    return bool(ids) and {license_family(i) for i in ids} == {license_family(i) for i in text_ids}
