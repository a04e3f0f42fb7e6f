"""Per-capability, per-minute request budgets shared by every worker through a JetStream KV bucket.

Each capability with `rate_per_minute > 0` counts its requests in one key per minute
(`<capability>.<minute since the epoch>`). A worker admits a request by raising the
count with compare-and-set on the key's revision (create when absent, update with the
revision it read otherwise) and retries when another worker got there first, so all
workers together never admit more than the budget in a minute. Refused requests get
RATE_LIMITED with the seconds until the next minute starts. Keys expire with the
bucket's TTL. A capability without a budget never touches the bucket.

Windows follow the workers' wall clocks; workers on different hosts need synchronised
clocks (NTP) for their minutes to line up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Final

import structlog
from nats.aio.client import Client as NATS
from nats.js.api import KeyValueConfig
from nats.js.errors import (
    BucketNotFoundError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    ServiceUnavailableError,
)
from nats.js.kv import KeyValue

from contracts.subjects import Subject
from worker.config import Capabilities
from worker.errors import ConfigError, InternalError, RateLimited

log = structlog.get_logger(__name__)

BUCKET: Final = "repo_reader_rate"
WINDOW_SECONDS: Final = 60
KEY_TTL_SECONDS: Final = 3 * WINDOW_SECONDS
MAX_ATTEMPTS: Final = 64
"""Compare-and-set retries before giving up (only under extreme contention)."""


class RateLimiter:
    """The admission hook of a worker: raises RateLimited when a capability's budget is spent."""

    def __init__(
        self,
        kv: KeyValue | None,
        limits: Mapping[Subject, int],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._kv = kv
        self._limits = {s: n for s, n in limits.items() if n > 0}
        self._clock = clock
        if self._limits and kv is None:
            raise ValueError("rate limits need a key-value bucket")

    @classmethod
    async def connect(
        cls,
        nc: NATS,
        capabilities: Capabilities,
        subjects: list[Subject],
        *,
        clock: Callable[[], float] = time.time,
    ) -> RateLimiter:
        """A limiter for `subjects` over the shared bucket (created when missing)."""
        limits = {s: capabilities.get(s.capability).rate_per_minute for s in subjects}
        if not any(limits.values()):
            return cls(None, limits, clock=clock)
        try:
            bucket = await open_bucket(nc)
        except ServiceUnavailableError:
            limited = ", ".join(sorted(s.capability for s, n in limits.items() if n))
            raise ConfigError(
                f"the rate limits of {limited} are counted in JetStream, which this NATS "
                "server does not run: start it with JetStream (`nats-server -js`), or set "
                "their rate_per_minute to 0"
            ) from None
        return cls(bucket, limits, clock=clock)

    @property
    def limits(self) -> dict[Subject, int]:
        """The per-minute budget of each limited capability."""
        return dict(self._limits)

    async def __call__(self, subject: Subject) -> None:
        """Admit one request on `subject`, or raise RateLimited."""
        limit = self._limits.get(subject)
        if limit is None:
            return
        assert self._kv is not None
        name = subject.capability.replace(".", "_")
        for _ in range(MAX_ATTEMPTS):
            now = self._clock()
            window = int(now // WINDOW_SECONDS)
            key = f"{name}.{window}"
            try:
                entry = await self._kv.get(key)
            except KeyNotFoundError:
                entry = None
            try:
                if entry is None or entry.value is None:
                    await self._kv.create(key, b"1")
                    return
                count = int(entry.value)
                if count >= limit:
                    retry_after = round((window + 1) * WINDOW_SECONDS - now, 3)
                    raise RateLimited(
                        f"{subject.capability} allows {limit} requests a minute; "
                        f"retry in {retry_after:g} s",
                        retry_after_seconds=max(retry_after, 0.001),
                        capability=subject.capability,
                        limit=limit,
                    )
                await self._kv.update(key, str(count + 1).encode(), last=entry.revision)
                return
            except KeyWrongLastSequenceError:
                continue  # another worker counted first: read again
        raise InternalError(
            "the shared rate limit counter is too contended", capability=subject.capability
        )


async def open_bucket(nc: NATS) -> KeyValue:
    """The shared rate-limit bucket, created with a TTL when it does not exist yet and this
    connection may create it.

    sandbox/nats.conf lets only the provisioner create it (`repo-reader provision`): a worker
    finding no bucket there stops with a ConfigError saying so.
    """
    js = nc.jetstream()
    try:
        return await js.key_value(BUCKET)
    except BucketNotFoundError:
        pass
    try:
        return await js.create_key_value(
            KeyValueConfig(
                bucket=BUCKET,
                description="repo-reader per-capability per-minute request counts",
                history=1,
                ttl=KEY_TTL_SECONDS,
            )
        )
    except Exception:
        # Another worker may have created it between the lookup and the create; or this
        # connection may not create buckets (the server drops the request: a timeout).
        pass
    try:
        return await js.key_value(BUCKET)
    except BucketNotFoundError:
        raise ConfigError(
            f"the rate-limit bucket {BUCKET} does not exist and this NATS user may not create "
            "it: run `repo-reader provision` as the provisioner user first"
        ) from None
