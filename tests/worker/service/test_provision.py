"""Tests of provisioning: the JetStream resources workers use, made once, changed never."""

from __future__ import annotations

import asyncio

import nats

from contracts.subjects import REQUEST_STREAM, WORKER_CONSUMER
from worker.service.admission import BUCKET, KEY_TTL_SECONDS
from worker.service.embedded_nats import EmbeddedNats
from worker.service.provision import provision


def test_provision_makes_the_rate_limit_bucket_once(nats_server: EmbeddedNats) -> None:
    """The first run creates the bucket with the limiter's TTL; a second one changes nothing."""

    async def scenario() -> tuple[list[str], list[str], float | None, int]:
        nc = await nats.connect(nats_server.url)
        try:
            first = await provision(nc)
            bucket = await nc.jetstream().key_value(BUCKET)
            await bucket.create("research.1", b"1")
            again = await provision(nc)
            status = await bucket.status()
            return first, again, status.ttl, status.values
        finally:
            await nc.close()

    first, again, ttl, values = asyncio.run(scenario())
    assert (
        first
        == again
        == [
            f"key-value bucket {BUCKET}",
            f"durable request stream {REQUEST_STREAM} and its consumer {WORKER_CONSUMER}",
        ]
    )
    assert ttl == KEY_TTL_SECONDS
    assert values == 1  # the counts a second run found are still there
