"""Tests of applying a request's license constraints to source license expressions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.errors import InvalidRequest
from worker.licenses import LicensePolicy
from worker.licenses.policy import ALLOWED_FIELD, COMPATIBLE_FIELD


@pytest.mark.parametrize(
    ("allowed", "expression", "admitted"),
    [
        (["MIT"], "MIT", True),
        (["MIT"], "mit", True),
        (["MIT"], "MIT OR GPL-3.0-only", True),
        (["MIT"], "GPL-3.0-only OR MIT", True),
        (["MIT"], "MIT AND BSD-3-Clause", False),
        (["MIT", "BSD-3-Clause"], "MIT AND BSD-3-Clause", True),
        (["MIT"], "(MIT AND BSD-3-Clause) OR (MIT AND Apache-2.0)", False),
        (["MIT", "Apache-2.0"], "(MIT AND BSD-3-Clause) OR (MIT AND Apache-2.0)", True),
        (["MIT"], "Apache-2.0", False),
        (["GPL-2.0-only"], "GPL-2.0-only WITH Linux-syscall-note", True),
        (["GPL-2.0-only"], "GPL-2.0 WITH Linux-syscall-note", True),
        (["GPL-2.0"], "GPL-2.0-only", True),
        (["GPL-2.0-or-later"], "GPL-2.0+", True),
        (["GPL-2.0-or-later"], "GPL-2.0-only", False),
        (["MIT"], "GPL-2.0-only WITH Linux-syscall-note OR MIT", True),
        (["Apache-2.0"], "Apache-2.0 WITH LLVM-exception AND MIT", False),
        (["MIT"], "NOASSERTION", False),
        (["MIT"], "MIT/Apache-2.0", False),
        (["MIT"], "MIT AND", False),
        (["MIT"], "", False),
        (["LicenseRef-Acme"], "LicenseRef-Acme OR GPL-3.0-only", True),
        ([], "MIT", False),
    ],
)
def test_allowed_licenses(allowed: list[str], expression: str, admitted: bool) -> None:
    """An expression is admitted when some choice in it uses only allowed licenses."""
    assert LicensePolicy.from_constraints(allowed, None).admits(expression) is admitted


@pytest.mark.parametrize(
    ("work", "source", "admitted"),
    [
        ("GPL-3.0-only", "MIT", True),
        ("MIT", "GPL-3.0-only", False),
        ("GPL-3.0-only", "Apache-2.0", True),
        ("GPL-2.0-only", "Apache-2.0", False),
        ("GPL-3.0-only", "GPL-2.0-only", False),
        ("GPL-3.0-only", "GPL-2.0-or-later", True),
        ("GPL-3.0-or-later", "GPL-3.0-only", True),
        ("GPL-2.0-only", "GPL-2.0-only WITH Linux-syscall-note", True),
        ("GPL-3.0-only", "AGPL-3.0-only", False),
        ("AGPL-3.0-only", "GPL-3.0-or-later", True),
        ("AGPL-3.0-only", "GPL-2.0-only", False),
        ("MIT", "Apache-2.0", True),
        ("MIT", "0BSD", True),
        ("MIT", "MIT-0", True),
        ("MIT", "BSD-3-Clause", True),
        ("MIT", "LGPL-2.1-only", False),
        ("MIT", "MPL-2.0", False),
        ("MIT", "EPL-2.0", False),
        ("LGPL-3.0-only", "LGPL-2.1-or-later", True),
        ("GPL-3.0-only", "LGPL-2.1-only", True),
        ("GPL-3.0-only", "MPL-2.0", True),
        ("Apache-2.0", "MIT OR GPL-3.0-only", True),
        ("Apache-2.0", "MIT AND GPL-3.0-only", False),
        ("Apache-2.0", "BSD-4-Clause", False),
        ("Apache-2.0", "CDDL-1.0", False),
        ("CC0-1.0", "MIT", False),
        ("CC0-1.0", "Unlicense", True),
        ("EPL-2.0", "EPL-2.0", True),
    ],
)
def test_compatible_with(work: str, source: str, admitted: bool) -> None:
    """A source is admitted when its code may be reused in a work under the given license."""
    assert LicensePolicy.from_constraints(None, work).admits(source) is admitted


def test_both_constraints_hold_for_one_choice() -> None:
    """Allowed and compatible must be met by the same choice of an OR, not by two."""
    policy = LicensePolicy.from_constraints(["GPL-3.0-only"], "MIT")
    assert not policy.admits("MIT OR GPL-3.0-only")
    assert LicensePolicy.from_constraints(["MIT", "GPL-3.0-only"], "MIT").admits(
        "MIT OR GPL-3.0-only"
    )


def test_unsupported_compatible_with_lists_the_supported() -> None:
    """A valid id without compatibility data is refused with the ids that have it."""
    with pytest.raises(InvalidRequest) as raised:
        LicensePolicy.from_constraints(None, "CDDL-1.0")
    assert "GPL-3.0-only" in raised.value.details["supported"]
    assert "CDDL-1.0" not in raised.value.details["supported"]


def test_unconstrained_policy() -> None:
    """With no constraint every expression is admitted, but never a missing license."""
    policy = LicensePolicy.from_constraints(None, None)
    assert policy.unconstrained
    assert policy.admits("LicenseRef-Whatever AND GPL-3.0-only")
    assert not policy.admits(None)
    assert not LicensePolicy.from_constraints(["MIT"], None).unconstrained


def test_missing_license_never_admitted() -> None:
    """A source without any license is refused under any constraint."""
    assert not LicensePolicy.from_constraints(["MIT"], None).admits(None)
    assert not LicensePolicy.from_constraints(None, "GPL-3.0-or-later").admits(None)


@pytest.mark.parametrize(
    ("allowed", "compatible_with", "field", "bad"),
    [
        (["MIT", "FooBar-1.0"], None, ALLOWED_FIELD, "FooBar-1.0"),
        (["Linux-syscall-note"], None, ALLOWED_FIELD, "Linux-syscall-note"),
        (["MIT OR Apache-2.0"], None, ALLOWED_FIELD, "MIT OR Apache-2.0"),
        (["MIT/Apache-2.0"], None, ALLOWED_FIELD, "MIT/Apache-2.0"),
        ([""], None, ALLOWED_FIELD, ""),
        (None, "NotALicense", COMPATIBLE_FIELD, "NotALicense"),
        (None, "LicenseRef-Acme", COMPATIBLE_FIELD, "LicenseRef-Acme"),
        (None, "CDDL-1.0", COMPATIBLE_FIELD, "CDDL-1.0"),
        (["MIT"], "GPL-2.0-only WITH Linux-syscall-note", COMPATIBLE_FIELD, None),
    ],
)
def test_invalid_ids_rejected(
    allowed: list[str] | None, compatible_with: str | None, field: str, bad: str | None
) -> None:
    """An id that is not a (supported) SPDX license id is InvalidRequest naming field and id."""
    with pytest.raises(InvalidRequest) as raised:
        LicensePolicy.from_constraints(allowed, compatible_with)
    value = bad if bad is not None else compatible_with
    details = dict(raised.value.details)
    details.pop("supported", None)
    assert details == {"field": field, "value": value}
    assert field in raised.value.message
    assert repr(value) in raised.value.message


_KNOWN = ["MIT", "Apache-2.0", "GPL-3.0-only", "BSD-2-Clause", "ISC", "MPL-2.0"]
Formula = str | tuple[str, "Formula", "Formula"]
_FORMULAS: st.SearchStrategy[Formula] = st.recursive(
    st.sampled_from(_KNOWN),
    lambda inner: st.tuples(st.sampled_from(["AND", "OR"]), inner, inner),
    max_leaves=6,
)


def _render(formula: Formula) -> str:
    if isinstance(formula, str):
        return formula
    operator, left, right = formula
    return f"({_render(left)} {operator} {_render(right)})"


def _holds(formula: Formula, allowed: set[str]) -> bool:
    if isinstance(formula, str):
        return formula in allowed
    operator, left, right = formula
    if operator == "AND":
        return _holds(left, allowed) and _holds(right, allowed)
    return _holds(left, allowed) or _holds(right, allowed)


@given(st.sets(st.sampled_from(_KNOWN)), _FORMULAS)
def test_admits_matches_boolean_reading(allowed: set[str], formula: Formula) -> None:
    """admits() equals the expression read as a formula: allowed ids true, others false."""
    policy = LicensePolicy.from_constraints(sorted(allowed), None)
    assert policy.admits(_render(formula)) is _holds(formula, allowed)
