"""The JetStream resources workers use but may not create, made once before they start.

Whoever creates a stream chooses the subjects it stores and where the server republishes
them, so being allowed to create even one named stream amounts to publishing on any
subject. sandbox/nats.conf therefore gives creation to a `provisioner` user, run once at
deployment (`repo-reader provision`; compose's nats-setup), never to a long-running worker.
"""

from __future__ import annotations

from nats.aio.client import Client as NATS

from contracts.subjects import REQUEST_STREAM, WORKER_CONSUMER
from worker.service.admission import BUCKET, open_bucket
from worker.service.durable import StreamSettings, ensure_request_stream


async def provision(nc: NATS) -> list[str]:
    """Create what is missing, change nothing that exists; what exists now, one line each."""
    await open_bucket(nc)
    await ensure_request_stream(nc.jetstream(), StreamSettings())
    return [
        f"key-value bucket {BUCKET}",
        f"durable request stream {REQUEST_STREAM} and its consumer {WORKER_CONSUMER}",
    ]
