"""Tests of the wire names: per-user inbox prefixes."""

from __future__ import annotations

import pytest

from contracts.subjects import DEFAULT_INBOX_PREFIX, inbox_prefix_for


def test_a_user_gets_an_inbox_prefix_of_its_own() -> None:
    """A connection as `orchestrator` gets replies under `_INBOX_orchestrator`."""
    assert inbox_prefix_for("orchestrator") == "_INBOX_orchestrator"


@pytest.mark.parametrize("user", [None, ""])
def test_no_user_keeps_the_shared_default(user: str | None) -> None:
    """Without a user the prefix is the NATS clients' default `_INBOX`."""
    assert inbox_prefix_for(user) == DEFAULT_INBOX_PREFIX == "_INBOX"


@pytest.mark.parametrize("user", ["a.b", "a b", "a*", "a>"])
def test_a_user_name_that_cannot_be_one_subject_token_is_refused(user: str) -> None:
    """A name with '.', white space or a wildcard would give a prefix the config cannot name."""
    with pytest.raises(ValueError, match="REPO_READER_NATS_INBOX_PREFIX"):
        inbox_prefix_for(user)
