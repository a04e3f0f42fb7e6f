"""Tests for a service's NATS connection: its credentials and the event of its end."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from worker.errors import ConfigError
from worker.service.connection import NatsCredentials, connect_service
from worker.service.embedded_nats import EmbeddedNats


@pytest.mark.parametrize(
    ("environment", "prefix"),
    [
        ({"REPO_READER_NATS_USER": "worker"}, "_INBOX_worker"),
        ({}, "_INBOX"),
        (
            {"REPO_READER_NATS_USER": "worker", "REPO_READER_NATS_INBOX_PREFIX": "_INBOX_w2"},
            "_INBOX_w2",
        ),
    ],
)
def test_service_replies_come_to_the_users_inbox_prefix(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], prefix: str
) -> None:
    """A service's inbox prefix is REPO_READER_NATS_INBOX_PREFIX, else `_INBOX_<user>`."""
    for variable in ("REPO_READER_NATS_USER", "REPO_READER_NATS_INBOX_PREFIX"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    assert NatsCredentials.from_environment().inbox_prefix == prefix


def test_a_user_that_cannot_name_an_inbox_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A user name with a '.' and no explicit prefix stops start-up with the variable to set."""
    monkeypatch.delenv("REPO_READER_NATS_INBOX_PREFIX", raising=False)
    monkeypatch.setenv("REPO_READER_NATS_USER", "team.worker")
    with pytest.raises(ConfigError, match="REPO_READER_NATS_INBOX_PREFIX"):
        NatsCredentials.from_environment()


def test_a_password_file_is_read_when_no_password_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """REPO_READER_NATS_PASSWORD_FILE (a container's secret) gives the password, stripped;
    REPO_READER_NATS_PASSWORD wins over it."""
    (tmp_path / "secret").write_text("s3cret\n")
    monkeypatch.setenv("REPO_READER_NATS_USER", "worker")
    monkeypatch.setenv("REPO_READER_NATS_PASSWORD_FILE", str(tmp_path / "secret"))
    monkeypatch.delenv("REPO_READER_NATS_PASSWORD", raising=False)
    assert NatsCredentials.from_environment().password == "s3cret"
    monkeypatch.setenv("REPO_READER_NATS_PASSWORD", "given")
    assert NatsCredentials.from_environment().password == "given"


def test_closed_is_set_once_the_connection_is_closed_for_good(
    nats_server: EmbeddedNats, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service's connection is open and not closed; once drained, its closed event is set."""
    for variable in ("REPO_READER_NATS_USER", "REPO_READER_NATS_INBOX_PREFIX"):
        monkeypatch.delenv(variable, raising=False)

    async def scenario() -> None:
        connection = await connect_service(nats_server.url, name="test-service")
        assert connection.nc.is_connected
        assert not connection.closed.is_set()
        await connection.nc.drain()
        await asyncio.wait_for(connection.closed.wait(), timeout=30)

    asyncio.run(scenario())
