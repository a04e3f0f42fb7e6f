"""Calling the agent tools over NATS from synchronous tests, batches joined."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
import pytest

from contracts.registry import BATCHED, MESSAGES
from contracts.subjects import Subject
from worker.client import RepoReaderClient
from worker.errors import RepoReaderFailure
from worker.service.replies import join_batches

ResponseT = TypeVar("ResponseT", bound=msgspec.Struct)

CALLS: dict[type[msgspec.Struct], tuple[Subject, type[msgspec.Struct], str | None]] = {
    request: (subject, response, BATCHED[subject])
    for subject, (request, response) in MESSAGES.items()
}


@dataclass(frozen=True, slots=True)
class ToolCaller:
    """Sends tool requests to the workers behind `url`."""

    url: str

    def ask(self, request: msgspec.Struct, *, json: bool = False) -> Any:
        """The whole answer to `request` (its batches joined); failures raise."""
        subject, response_type, field = CALLS[type(request)]
        batches = asyncio.run(self._call(subject, request, response_type, json=json))
        return join_batches(batches, field) if field else batches[0]

    def refusal(self, request: msgspec.Struct) -> RepoReaderFailure:
        """The failure the workers answer `request` with (the test fails if it succeeds)."""
        with pytest.raises(RepoReaderFailure) as failure:
            self.ask(request)
        return failure.value

    def many(self, requests: list[msgspec.Struct]) -> list[Any | RepoReaderFailure]:
        """Send `requests` concurrently; each result is an answer or the failure it got."""

        async def one(client: RepoReaderClient, request: msgspec.Struct) -> Any:
            subject, response_type, _ = CALLS[type(request)]
            try:
                return (await client.call(subject, request, response_type))[0]
            except RepoReaderFailure as failure:
                return failure

        async def run() -> list[Any]:
            async with await RepoReaderClient.connect(self.url, timeout=60) as client:
                return list(await asyncio.gather(*(one(client, r) for r in requests)))

        return asyncio.run(run())

    async def _call(
        self,
        subject: Subject,
        request: msgspec.Struct,
        response_type: type[ResponseT],
        *,
        json: bool,
    ) -> list[ResponseT]:
        async with await RepoReaderClient.connect(self.url, json=json, timeout=60) as client:
            return await client.call(subject, request, response_type)
