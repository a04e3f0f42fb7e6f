"""A service process's connection to NATS: its credentials, reconnects, and the moment it
is gone for good.

Credentials come from the environment (or a password file), so that a container's secret
never sits in a config file; replies come to the user's own inbox prefix, which the server's
permissions can confine to it.
"""

from __future__ import annotations

import asyncio
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import nats
import structlog
from nats.aio.client import Client as NATS

from contracts.subjects import DEFAULT_INBOX_PREFIX, inbox_prefix_for
from worker.errors import ConfigError

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class NatsCredentials:
    """User and password for the NATS connection, from the environment or a file, and the
    inbox prefix replies come to."""

    user: str | None
    password: str | None
    inbox_prefix: str = DEFAULT_INBOX_PREFIX

    @classmethod
    def from_environment(cls) -> NatsCredentials:
        """`REPO_READER_NATS_USER` with `REPO_READER_NATS_PASSWORD` or `..._PASSWORD_FILE`;
        `REPO_READER_NATS_INBOX_PREFIX`, else `_INBOX_<user>` (see `inbox_prefix_for`)."""
        user = os.environ.get("REPO_READER_NATS_USER") or None
        password = os.environ.get("REPO_READER_NATS_PASSWORD")
        password_file = os.environ.get("REPO_READER_NATS_PASSWORD_FILE")
        if password is None and password_file:
            password = Path(password_file).read_text().strip()
        prefix = os.environ.get("REPO_READER_NATS_INBOX_PREFIX")
        if not prefix:
            try:
                prefix = inbox_prefix_for(user)
            except ValueError as exc:
                raise ConfigError(f"REPO_READER_NATS_USER: {exc}") from None
        return cls(user=user, password=password, inbox_prefix=prefix)


@dataclass(frozen=True, slots=True)
class ServiceConnection:
    """A service process's NATS connection, and an event set once it is closed for good."""

    nc: NATS
    closed: asyncio.Event


RECONNECT_WAIT_SECONDS: Final = 2
"""The pause between two attempts to reconnect to the same server."""


async def connect_service(
    nats_url: str, *, name: str, drain_timeout: int = 30, reconnect_seconds: float = 120.0
) -> ServiceConnection:
    """A long-lived connection for a service process, with the environment's credentials.

    A lost connection is tried again for about `reconnect_seconds`. `closed` is set once the
    connection is closed for good: after a drain, when reconnecting gave up, or when the
    server refused the client (a protocol violation).
    """
    credentials = NatsCredentials.from_environment()
    closed = asyncio.Event()

    async def on_closed() -> None:
        closed.set()

    async def on_disconnected() -> None:
        log.warning("nats.disconnected")

    async def on_reconnected() -> None:
        log.info("nats.reconnected")

    async def on_error(exc: Exception) -> None:
        # E.g. a permissions violation: the server refused something this service needs.
        log.warning("nats.error", error=str(exc))

    nc = await nats.connect(
        nats_url,
        user=credentials.user,
        password=credentials.password,
        inbox_prefix=credentials.inbox_prefix,
        name=name,
        max_reconnect_attempts=max(1, math.ceil(reconnect_seconds / RECONNECT_WAIT_SECONDS)),
        reconnect_time_wait=RECONNECT_WAIT_SECONDS,
        drain_timeout=drain_timeout,
        closed_cb=on_closed,
        disconnected_cb=on_disconnected,
        reconnected_cb=on_reconnected,
        error_cb=on_error,
    )
    return ServiceConnection(nc=nc, closed=closed)
