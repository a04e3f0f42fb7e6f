"""A caller's half of the wire protocol, without a transport: what every client offers.

`RepoReaderAPI` is what an orchestrator calls: `call` any capability and get every message
of its answer, or `research` and get the whole research answer. `RepoReaderClient` does it
over NATS; `worker.testing.MockRepoReader`'s client does it in process. Both encode the
request with `encode_request` and read the reply messages with `AnswerReader`, so a
refusal raises the same exception and an answer arrives in the same shape from either.

Imports only msgspec, `contracts` and `worker.errors`.
"""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import msgspec

from contracts.research import (
    OmittedRepo,
    RepoReaderRequest,
    RepoReaderResponse,
    ResearchArtifact,
    ResolvedRepo,
)
from contracts.subjects import (
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_MSGPACK,
    HEADER_CONTENT_TYPE,
    HEADER_REQUEST_ID,
    Subject,
)
from worker.errors import InternalError, failure_from_error

ResponseT = TypeVar("ResponseT", bound=msgspec.Struct)


@dataclass(frozen=True, slots=True)
class ResearchResult:
    """A whole research answer, its batches joined."""

    request_id: str
    resolved: tuple[ResolvedRepo, ...]
    artifacts: tuple[ResearchArtifact, ...]
    omitted: tuple[OmittedRepo, ...] = ()
    """Repositories in scope the answer leaves out, and why (e.g. no license detected)."""


def encode_request(request: msgspec.Struct, *, json: bool) -> bytes:
    """The bytes of a request: JSON or MessagePack."""
    return msgspec.json.encode(request) if json else msgspec.msgpack.encode(request)


def request_headers(request_id: str, *, json: bool) -> dict[str, str]:
    """The headers a request carries: its encoding and its id."""
    return {
        HEADER_CONTENT_TYPE: CONTENT_TYPE_JSON if json else CONTENT_TYPE_MSGPACK,
        HEADER_REQUEST_ID: request_id,
    }


class AnswerReader(Generic[ResponseT]):
    """Reads the reply messages of one request, in order, into the batches of its answer."""

    def __init__(
        self,
        response_type: type[ResponseT],
        *,
        json: bool,
        request_id: str,
        repeats: bool = False,
    ) -> None:
        """`repeats`: a batch that arrived already may come again (a redelivered answer to a
        durable request) and is then ignored."""
        self._decoder: Any = (msgspec.json.Decoder if json else msgspec.msgpack.Decoder)(
            response_type
        )
        self._request_id = request_id
        self._repeats = repeats
        self.batches: list[ResponseT] = []

    def take(self, data: bytes) -> bool:
        """Read one message; True once the answer is complete.

        An error message raises the failure it carries (`failure_from_error`); a batch out
        of order, or a message this client cannot decode, raises InternalError.
        """
        try:
            response = self._decoder.decode(data)
        except msgspec.DecodeError as exc:
            # A value this client's types do not allow (a newer server's), or bad bytes.
            raise InternalError(
                f"the answer could not be read: {exc}", request_id=self._request_id
            ) from None
        if response.errors:
            error = response.errors[0]
            raise failure_from_error(error.code, error.message, dict(error.details))
        if self._repeats and response.batch < len(self.batches):
            return False
        if response.batch != len(self.batches):
            raise InternalError(
                f"batch {response.batch} arrived where batch {len(self.batches)} was due",
                request_id=self._request_id,
            )
        self.batches.append(response)
        return bool(response.last)


class RepoReaderAPI(abc.ABC):
    """What a repo-reader client offers an orchestrator, whatever carries its requests."""

    @abc.abstractmethod
    async def call(
        self,
        subject: Subject,
        request: msgspec.Struct,
        response_type: type[ResponseT],
        *,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> list[ResponseT]:
        """Send `request` on `subject` and return every message of its answer, in order."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release what the client holds."""

    async def research(
        self,
        request: RepoReaderRequest,
        *,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> ResearchResult:
        """Ask a research question; raises the RepoReaderFailure the service answered with."""
        rid = request_id or uuid.uuid4().hex
        batches = await self.call(
            Subject.RESEARCH, request, RepoReaderResponse, request_id=rid, timeout=timeout
        )
        return ResearchResult(
            request_id=rid,
            resolved=batches[0].resolved,
            artifacts=tuple(a for batch in batches for a in batch.artifacts),
            omitted=batches[0].omitted,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
