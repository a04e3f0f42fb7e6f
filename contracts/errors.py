"""The closed set of error codes and the error object every capability shares."""

from __future__ import annotations

import enum
from typing import Any

import msgspec


class ErrorCode(enum.StrEnum):
    """Machine-readable error codes; the set is closed and shared by every capability."""

    INVALID_REQUEST = "INVALID_REQUEST"
    REQUEST_TOO_BROAD = "REQUEST_TOO_BROAD"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    REPO_NOT_FOUND = "REPO_NOT_FOUND"
    AMBIGUOUS_REPOSITORY = "AMBIGUOUS_REPOSITORY"
    ACCESS_DENIED = "ACCESS_DENIED"
    REVISION_NOT_FOUND = "REVISION_NOT_FOUND"
    LICENSE_UNAVAILABLE = "LICENSE_UNAVAILABLE"
    LICENSE_NOT_ALLOWED = "LICENSE_NOT_ALLOWED"
    NOT_FOUND = "NOT_FOUND"
    RATE_LIMITED = "RATE_LIMITED"
    TIMEOUT = "TIMEOUT"
    CAPABILITY_DISABLED = "CAPABILITY_DISABLED"
    INTERNAL = "INTERNAL"


class RepoReaderError(msgspec.Struct, frozen=True, kw_only=True):
    """A structured failure: `message` is for a person, `details` for a program.

    `code` is one of `ErrorCode` when a server sends it; a client reads it as text, so that an
    answer from a newer server with a code this client does not know still decodes.
    """

    code: str
    message: str
    details: dict[str, Any] = {}


class ResponseEnvelope(msgspec.Struct, frozen=True, kw_only=True):
    """The fields every response message starts with, on every subject.

    An answer may be several messages: `batch` counts them from 0 and the one with `last`
    set ends it. A failed request is answered by one message with `errors` set.
    """

    request_id: str
    batch: int = 0
    last: bool = True
    errors: tuple[RepoReaderError, ...] = ()


class ErrorReply(ResponseEnvelope, frozen=True, kw_only=True):
    """The single message that answers a failed request on any subject.

    It has only the envelope's fields, so a client decodes it with the response type of
    the subject it asked on.
    """

    errors: tuple[RepoReaderError, ...]
