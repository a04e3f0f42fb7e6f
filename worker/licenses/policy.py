"""Decide whether a source's license expression meets a request's license constraints.

An expression is read with license_expression's SPDX licensing and evaluated as a
choice: `A OR B` is admitted when either side is, `A AND B` only when both are. A
`WITH` exception only ever adds permissions, so `X WITH e` is judged as `X`. One
license id is acceptable when it is in `allowed_licenses` (if given) and may be reused
in a work under `compatible_with` (if given); both constraints must hold for the same
choice of licenses.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

from license_expression import (
    AND,
    OR,
    LicenseSymbol,
    LicenseWithExceptionSymbol,
    get_spdx_licensing,
)

from worker.errors import InvalidRequest
from worker.licenses.compatibility import SPDX_TO_MATRIX, has_compatibility_data, may_reuse

ALLOWED_FIELD = "license_constraints.allowed_licenses"
COMPATIBLE_FIELD = "license_constraints.compatible_with"

_LICENSE_REF = re.compile(r"^LicenseRef-[A-Za-z0-9.-]+$")
_parse_lock = threading.Lock()

LicenseTree: TypeAlias = "str | tuple[Literal['and', 'or'], tuple[LicenseTree, ...]]"
"""A parsed expression: a normalised license id, or an operator over sub-trees."""


class LicensePolicy:
    """The license constraints of one request, checked once and applied to every source."""

    def __init__(self, *, allowed: frozenset[str] | None, compatible_with: str | None) -> None:
        """Use `from_constraints`, which validates the ids; these must be normalised already."""
        self._allowed = allowed
        self._compatible_with = compatible_with

    @classmethod
    def from_constraints(
        cls, allowed: Sequence[str] | None, compatible_with: str | None
    ) -> LicensePolicy:
        """Build a policy from a request's `allowed_licenses` and `compatible_with`.

        Raises `InvalidRequest` naming the field and the id for an id that is not an SPDX
        license id (a `LicenseRef-` is accepted in `allowed_licenses`), and for a
        `compatible_with` license the compatibility matrix does not cover.
        """
        normalised_allowed = (
            None
            if allowed is None
            else frozenset(_license_id(ALLOWED_FIELD, value, allow_ref=True) for value in allowed)
        )
        target = None
        if compatible_with is not None:
            target = _license_id(COMPATIBLE_FIELD, compatible_with, allow_ref=False)
            if not has_compatibility_data(target):
                raise InvalidRequest(
                    f"{COMPATIBLE_FIELD}: no compatibility data for {compatible_with!r}",
                    field=COMPATIBLE_FIELD,
                    value=compatible_with,
                    supported=sorted(SPDX_TO_MATRIX),
                )
        return cls(allowed=normalised_allowed, compatible_with=target)

    @property
    def unconstrained(self) -> bool:
        """True when the request names no license constraint."""
        return self._allowed is None and self._compatible_with is None

    def admits(self, spdx_expression: str | None) -> bool:
        """Tell whether a source under `spdx_expression` may be used by the request.

        None (no license found) is never admitted: no artifact goes out without license
        information. Under a constraint, an expression that does not parse is not admitted.
        """
        if spdx_expression is None:
            return False
        if self.unconstrained:
            return True
        tree = parse_license_expression(spdx_expression)
        if tree is None:
            return False
        return _satisfied(tree, self._acceptable)

    def _acceptable(self, license_id: str) -> bool:
        if self._allowed is not None and license_id not in self._allowed:
            return False
        return self._compatible_with is None or may_reuse(license_id, self._compatible_with)


@functools.lru_cache(maxsize=4096)
def parse_license_expression(expression: str) -> LicenseTree | None:
    """Parse an SPDX expression into a tree of normalised ids, or None when it does not parse."""
    try:
        with _parse_lock:
            parsed = _licensing().parse(expression)
        return None if parsed is None else _tree(parsed)
    except Exception:  # license_expression raises AttributeError on some malformed input
        return None


def _tree(node: Any) -> LicenseTree:
    if isinstance(node, LicenseWithExceptionSymbol):
        return _tree(node.license_symbol)
    if isinstance(node, LicenseSymbol):
        if node.is_exception:
            raise ValueError(f"exception {node.key!r} used as a license")
        return str(node.key)
    if isinstance(node, AND):
        return ("and", tuple(_tree(arg) for arg in node.args))
    if isinstance(node, OR):
        return ("or", tuple(_tree(arg) for arg in node.args))
    raise ValueError(f"unexpected node {node!r} in a license expression")


def _satisfied(tree: LicenseTree, acceptable: Callable[[str], bool]) -> bool:
    if isinstance(tree, str):
        return acceptable(tree)
    operator, operands = tree
    results = (_satisfied(operand, acceptable) for operand in operands)
    return all(results) if operator == "and" else any(results)


def _license_id(field: str, value: str, *, allow_ref: bool) -> str:
    """Return the normalised SPDX id of `value`, or raise `InvalidRequest` naming `field`."""
    if allow_ref and _LICENSE_REF.match(value):
        return value
    try:
        with _parse_lock:
            info = _licensing().validate(value)
            parsed = _licensing().parse(value) if not info.errors else None
    except Exception:  # license_expression fails with AttributeError on some malformed input
        info, parsed = None, None
    if info is not None and info.errors:
        problem = "; ".join(str(error) for error in info.errors)
    elif not isinstance(parsed, LicenseSymbol) or parsed.is_exception:
        problem = "not a single license id"
    else:
        return str(parsed.key)
    raise InvalidRequest(
        f"{field}: {value!r} is not an SPDX license id ({problem})", field=field, value=value
    )


@functools.cache
def _licensing() -> Any:
    return get_spdx_licensing()
