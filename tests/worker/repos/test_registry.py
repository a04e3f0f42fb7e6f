"""Tests of what the config alone says about a repository reference."""

from __future__ import annotations

import pytest

from worker.config import parse_config
from worker.errors import AccessDenied, AmbiguousRepository
from worker.repos.registry import lookup_repo, not_mirrored, unknown_revision

CONFIG = parse_config(
    '[policy]\ndeny = ["acme/secret*"]\n'
    + "".join(
        f'[[repos]]\nname = "{name}"\nurl = "https://example.invalid/{name}"\n'
        for name in ("Pallets/Flask", "acme/dup", "other/dup", "acme/secret-sauce")
    )
)


def test_names_and_bare_names_resolve_case_insensitively() -> None:
    """`owner/name` and an unambiguous bare name find the registered entry."""
    assert lookup_repo(CONFIG, "pallets/flask").name == "Pallets/Flask"
    assert lookup_repo(CONFIG, "FLASK").name == "Pallets/Flask"


@pytest.mark.parametrize(
    ("ref", "exception", "reason"),
    [
        ("acme/nope", AccessDenied, "not-registered"),
        ("acme/secret-sauce", AccessDenied, "policy"),
        ("dup", AmbiguousRepository, None),
    ],
)
def test_refusals_name_the_field(ref: str, exception: type, reason: str | None) -> None:
    """Unregistered or denied: ACCESS_DENIED; a bare name of two: AMBIGUOUS_REPOSITORY."""
    with pytest.raises(exception) as raised:
        lookup_repo(CONFIG, ref, field="repo_constraints.allowlist[0]")
    assert raised.value.details["field"] == "repo_constraints.allowlist[0]"
    assert raised.value.details.get("reason") == reason


def test_catalog_refusals_name_the_repository() -> None:
    """Not mirrored and unknown revision refusals carry the repository (and revision)."""
    assert not_mirrored("acme/x").details == {"repo": "acme/x"}
    assert unknown_revision("acme/x", "v9").details == {"repo": "acme/x", "revision": "v9"}
