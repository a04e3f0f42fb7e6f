"""Tests of the shared rate limiter against a real NATS server's JetStream key-value store."""

from __future__ import annotations

import asyncio

import nats
import pytest
from nats.js.errors import BucketNotFoundError

from contracts.subjects import Subject
from worker.config import parse_config
from worker.errors import ConfigError, RateLimited
from worker.service.admission import BUCKET, RateLimiter
from worker.service.embedded_nats import EmbeddedNats

CONFIG = parse_config(
    "[capabilities.code_search]\nrate_per_minute = 5\n"
    "[capabilities.git_history]\nrate_per_minute = 2\n"
)
SUBJECTS = [Subject.CODE_SEARCH, Subject.GIT_HISTORY, Subject.CODE_READ]


class FixedClock:
    """A wall clock the test moves by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def outcomes(limiter: RateLimiter, subject: Subject, count: int) -> list[float | None]:
    """None for each admitted request, retry_after_seconds for each refused one."""

    async def one() -> float | None:
        try:
            await limiter(subject)
        except RateLimited as refused:
            return refused.retry_after_seconds
        return None

    return list(await asyncio.gather(*(one() for _ in range(count))))


def test_two_limiters_together_never_exceed_the_budget(nats_server: EmbeddedNats) -> None:
    """Two workers' limiters on separate connections admit exactly the budget between them."""

    async def scenario() -> tuple[list[float | None], list[float | None]]:
        clock = FixedClock(6_000_000.0 + 15)  # 15 s into a minute
        first, second = await nats.connect(nats_server.url), await nats.connect(nats_server.url)
        try:
            a = await RateLimiter.connect(first, CONFIG.capabilities, SUBJECTS, clock=clock)
            b = await RateLimiter.connect(second, CONFIG.capabilities, SUBJECTS, clock=clock)
            results = await asyncio.gather(
                outcomes(a, Subject.CODE_SEARCH, 8), outcomes(b, Subject.CODE_SEARCH, 8)
            )
            clock.now += 60  # the next minute has a fresh budget
            later = await outcomes(a, Subject.CODE_SEARCH, 6) + await outcomes(
                b, Subject.CODE_SEARCH, 1
            )
            return results[0] + results[1], later
        finally:
            await first.close()
            await second.close()

    this_minute, next_minute = asyncio.run(scenario())
    assert this_minute.count(None) == 5
    assert all(r == pytest.approx(45.0) for r in this_minute if r is not None)
    assert next_minute.count(None) == 5


def test_budgets_are_per_capability(nats_server: EmbeddedNats) -> None:
    """Each capability counts on its own; one without a budget is never refused."""

    async def scenario() -> dict[Subject, int]:
        nc = await nats.connect(nats_server.url)
        try:
            limiter = await RateLimiter.connect(nc, CONFIG.capabilities, SUBJECTS)
            admitted = {}
            for subject in SUBJECTS:
                admitted[subject] = (await outcomes(limiter, subject, 10)).count(None)
            return admitted
        finally:
            await nc.close()

    admitted = asyncio.run(scenario())
    assert admitted[Subject.GIT_HISTORY] <= 2 * 2  # at most two windows if a minute turns
    assert admitted[Subject.GIT_HISTORY] >= 2
    assert admitted[Subject.CODE_READ] == 10


def test_without_budgets_the_bucket_is_never_touched(nats_server: EmbeddedNats) -> None:
    """A worker with no rate limits configured creates no key-value bucket at all."""

    async def scenario() -> None:
        nc = await nats.connect(nats_server.url)
        try:
            limiter = await RateLimiter.connect(nc, parse_config("").capabilities, SUBJECTS)
            assert limiter.limits == {}
            await limiter(Subject.CODE_SEARCH)
            with pytest.raises(BucketNotFoundError):
                await nc.jetstream().key_value(BUCKET)
        finally:
            await nc.close()

    asyncio.run(scenario())


def test_budgets_without_jetstream_are_a_config_error() -> None:
    """A budget on a server without JetStream stops the limiter with a ConfigError naming it."""

    async def scenario(url: str) -> None:
        nc = await nats.connect(url)
        try:
            with pytest.raises(ConfigError, match=r"code\.search, git\.history .*nats-server -js"):
                await RateLimiter.connect(nc, CONFIG.capabilities, SUBJECTS)
            limiter = await RateLimiter.connect(nc, parse_config("").capabilities, SUBJECTS)
            await limiter(Subject.CODE_SEARCH)
        finally:
            await nc.close()

    with EmbeddedNats(jetstream=False) as server:
        asyncio.run(scenario(server.url))
