"""Connections to NATS as the roles of sandbox/nats.conf, recording what the server refuses."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import NoRespondersError

from contracts.subjects import inbox_prefix_for

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NATS_CONF = PROJECT_ROOT / "sandbox" / "nats.conf"
ROLES = ("orchestrator", "synthesis", "worker", "mirror", "provisioner")
PERMISSIONS_VIOLATION = "permissions violation"


def new_passwords() -> dict[str, str]:
    """A fresh random password per role (letters and digits, starting with a letter)."""
    return {role: "pw" + secrets.token_hex(16) for role in ROLES}


def password_environment(passwords: dict[str, str]) -> dict[str, str]:
    """The environment variables sandbox/nats.conf reads the passwords from."""
    return {f"REPO_READER_NATS_{role.upper()}_PASSWORD": pw for role, pw in passwords.items()}


class RoleConnection:
    """A NATS connection as one role, its replies under the role's own inbox prefix (as the
    project's clients connect); `errors` collects what the server reported."""

    def __init__(self, url: str, role: str, password: str) -> None:
        self.url = url
        self.role = role
        self.password = password
        self.errors: list[str] = []
        self._reported = asyncio.Condition()
        self._nc: Client | None = None

    @property
    def nc(self) -> Client:
        assert self._nc is not None, "not connected"
        return self._nc

    async def _record(self, exc: Exception) -> None:
        async with self._reported:
            self.errors.append(str(exc))
            self._reported.notify_all()

    async def __aenter__(self) -> Self:
        self._nc = await nats.connect(
            self.url,
            user=self.role,
            password=self.password,
            name=f"test-{self.role}",
            inbox_prefix=inbox_prefix_for(self.role),
            error_cb=self._record,
            allow_reconnect=False,
            connect_timeout=5,
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._nc is not None and not self._nc.is_closed:
            await self._nc.close()

    def violations(self) -> list[str]:
        """The permission violations reported so far."""
        return [e for e in self.errors if PERMISSIONS_VIOLATION in e.lower()]

    @contextlib.asynccontextmanager
    async def refused(self, timeout: float = 5.0) -> AsyncIterator[Refusal]:
        """Expect the server to refuse what the block does; `.message` is its violation."""
        seen = len(self.violations())
        refusal = Refusal()
        yield refusal
        async with self._reported:
            try:
                await asyncio.wait_for(
                    self._reported.wait_for(lambda: len(self.violations()) > seen), timeout
                )
            except TimeoutError:
                raise AssertionError(
                    f"{self.role}: no permissions violation; errors={self.errors}"
                ) from None
        refusal.message = self.violations()[seen]

    async def settled(self) -> None:
        """Round-trip to the server.

        nats-py may send the PING of a flush ahead of a SUB it queued before, so this
        does not prove a subscription is registered: see `request_when_served`.
        """
        await self.nc.flush(timeout=5)


@dataclass
class Refusal:
    """The server's permission violation for something a connection did."""

    message: str = ""


async def request_when_served(nc: Client, subject: str, data: bytes, timeout: float = 5.0) -> Msg:
    """A request, repeated while the server reports no responders yet (until `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await nc.request(subject, data, timeout=timeout)
        except NoRespondersError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.02)


def jetstream_inventory(monitoring_url: str) -> dict[str, tuple[int, tuple[str, ...]]]:
    """Every stream the server holds: its message count and its consumers' names.

    Read from the monitoring endpoint, so it shows what exists whatever any user may see.
    """
    query = "/jsz?accounts=true&streams=true&consumers=true"
    with urllib.request.urlopen(monitoring_url + query, timeout=5) as response:
        document = json.load(response)
    streams = {}
    for account in document.get("account_details") or []:
        for stream in account.get("stream_detail") or []:
            consumers = tuple(c["name"] for c in stream.get("consumer_detail") or [])
            streams[stream["name"]] = (stream["state"]["messages"], consumers)
    return streams
