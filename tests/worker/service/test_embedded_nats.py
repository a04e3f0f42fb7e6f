"""Tests of the embedded nats-server: ports it picks itself, start-up failures reported."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import nats
import pytest

from worker.service.embedded_nats import EmbeddedNats, NatsServerError


async def round_trip(url: str) -> bytes:
    """Publish one message through the server at `url` and return what a subscriber got."""
    nc = await nats.connect(url)
    try:
        sub = await nc.subscribe("probe")
        await nc.publish("probe", b"ping")
        return (await sub.next_msg(timeout=5)).data
    finally:
        await nc.close()


def test_servers_listen_on_ports_they_pick() -> None:
    """Each server reports the port it bound, and two at once never share one."""
    with EmbeddedNats() as first, EmbeddedNats() as second:
        assert first.port > 0
        assert second.port > 0
        assert first.port != second.port
        assert first.url == f"nats://127.0.0.1:{first.port}"
        assert asyncio.run(round_trip(first.url)) == b"ping"
        assert asyncio.run(round_trip(second.url)) == b"ping"


def test_server_that_exits_reports_its_output() -> None:
    """A server that cannot start raises with its own log, and leaves nothing behind."""

    def storage() -> set[Path]:
        return set(Path(tempfile.gettempdir()).glob("repo-reader-nats-*"))

    before = storage()
    with pytest.raises(NatsServerError, match="exited with"):
        EmbeddedNats(config_text="this is { not a config").start()
    assert storage() <= before
