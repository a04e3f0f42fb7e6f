"""The exceptions a request can fail with; each maps to exactly one wire `ErrorCode`.

    RepoReaderFailure                 (code, message, details)
    ├── InvalidRequest                INVALID_REQUEST
    ├── RequestTooBroad               REQUEST_TOO_BROAD
    ├── LimitExceeded                 LIMIT_EXCEEDED
    ├── RepoNotFound                  REPO_NOT_FOUND
    ├── AmbiguousRepository           AMBIGUOUS_REPOSITORY
    ├── AccessDenied                  ACCESS_DENIED
    ├── RevisionNotFound              REVISION_NOT_FOUND
    ├── LicenseUnavailable            LICENSE_UNAVAILABLE
    ├── LicenseNotAllowed             LICENSE_NOT_ALLOWED
    ├── NotFound                      NOT_FOUND
    ├── RateLimited                   RATE_LIMITED (details.retry_after_seconds)
    ├── Timeout                       TIMEOUT
    │   ├── NoAnswer                  TIMEOUT (client side: no complete answer in time)
    │   └── NoResponders              TIMEOUT (client side: no worker serves the subject)
    ├── CapabilityDisabled            CAPABILITY_DISABLED
    ├── InternalError                 INTERNAL
    │   └── SyncError                 INTERNAL (the mirror could not sync a repository)
    └── UnknownFailure                a code this client does not know (a newer server's)

    ConfigError                       start-up only: a bad repo-reader.toml or NATS config
    ConnectionLost                    a service's NATS connection closed for good: it exits

Handlers raise these; `worker.service.codec.error_from_exception` is the one place that turns an
exception (any exception) into a `RepoReaderError`, and `failure_from_error` the one
place a client turns a received error back into its exception.
"""

from __future__ import annotations

from typing import Any, ClassVar

from contracts.errors import ErrorCode


class RepoReaderFailure(Exception):
    """A request that cannot be answered, with a person-readable message and program details."""

    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details

    @property
    def wire_code(self) -> str:
        """The code on the wire: the class's, or what a newer server sent (UnknownFailure)."""
        return str(self.code)


class InvalidRequest(RepoReaderFailure):
    """The request is malformed: unknown field, wrong type, bad value."""

    code = ErrorCode.INVALID_REQUEST


class RequestTooBroad(RepoReaderFailure):
    """The request's scope is too wide or its query has no informative term."""

    code = ErrorCode.REQUEST_TOO_BROAD


class LimitExceeded(RepoReaderFailure):
    """A requested limit is above the server's ceiling."""

    code = ErrorCode.LIMIT_EXCEEDED


class RepoNotFound(RepoReaderFailure):
    """A repository is registered but has no mirror in the cache."""

    code = ErrorCode.REPO_NOT_FOUND


class AmbiguousRepository(RepoReaderFailure):
    """A repository reference matches more than one repository."""

    code = ErrorCode.AMBIGUOUS_REPOSITORY


class AccessDenied(RepoReaderFailure):
    """A repository is not registered, or the server's policy denies it."""

    code = ErrorCode.ACCESS_DENIED


class RevisionNotFound(RepoReaderFailure):
    """A revision does not resolve to a commit in the repository."""

    code = ErrorCode.REVISION_NOT_FOUND


class LicenseUnavailable(RepoReaderFailure):
    """A license is required but none could be detected."""

    code = ErrorCode.LICENSE_UNAVAILABLE


class LicenseNotAllowed(RepoReaderFailure):
    """The only sources there are carry licenses the request does not allow."""

    code = ErrorCode.LICENSE_NOT_ALLOWED


class NotFound(RepoReaderFailure):
    """A path or entity does not exist at the resolved revision."""

    code = ErrorCode.NOT_FOUND


class RateLimited(RepoReaderFailure):
    """The capability's per-minute budget is spent; retry after `retry_after_seconds`."""

    code = ErrorCode.RATE_LIMITED

    def __init__(self, message: str, *, retry_after_seconds: float, **details: Any) -> None:
        super().__init__(message, retry_after_seconds=retry_after_seconds, **details)
        self.retry_after_seconds = retry_after_seconds


class Timeout(RepoReaderFailure):
    """The request ran out of its time budget."""

    code = ErrorCode.TIMEOUT


class NoAnswer(Timeout):
    """Raised by the client when no complete answer arrived in time; it retries these."""


class NoResponders(Timeout):
    """Raised by the client when no worker was subscribed to the subject it called, however
    often it asked again before its deadline (details.tries)."""


class CapabilityDisabled(RepoReaderFailure):
    """The capability is turned off in the server's config."""

    code = ErrorCode.CAPABILITY_DISABLED


class InternalError(RepoReaderFailure):
    """Something failed that is not the caller's doing."""

    code = ErrorCode.INTERNAL


class SyncError(InternalError):
    """The mirror could not sync (or index) a repository; the message says which and why."""


class ConfigError(Exception):
    """A configuration mistake found at start-up; the message names the file and the setting."""


class ConnectionLost(Exception):
    """A service process's NATS connection closed for good while it served (the server
    refused it, or reconnecting gave up): the process exits, so its supervisor restarts it."""


_BY_CODE: dict[ErrorCode, type[RepoReaderFailure]] = {
    cls.code: cls
    for cls in (
        InvalidRequest,
        RequestTooBroad,
        LimitExceeded,
        RepoNotFound,
        AmbiguousRepository,
        AccessDenied,
        RevisionNotFound,
        LicenseUnavailable,
        LicenseNotAllowed,
        NotFound,
        Timeout,
        CapabilityDisabled,
        InternalError,
    )
}


class UnknownFailure(RepoReaderFailure):
    """A failure whose code this client does not know: a newer server's; `wire_code` holds it.

    Kept apart from InternalError, so that a caller never retries or reports it as a fault
    of the server it does not know to be one.
    """

    def __init__(self, wire_code: str, message: str, **details: Any) -> None:
        super().__init__(message, **details)
        self._wire_code = wire_code

    @property
    def wire_code(self) -> str:
        """The code the server sent."""
        return self._wire_code


def failure_from_error(code: str, message: str, details: dict[str, Any]) -> RepoReaderFailure:
    """The exception a client raises for an error it received (any code, known or not)."""
    if code not in ErrorCode.__members__:
        return UnknownFailure(code, message, **details)
    if code == ErrorCode.RATE_LIMITED:
        rest = {k: v for k, v in details.items() if k != "retry_after_seconds"}
        return RateLimited(
            message, retry_after_seconds=float(details.get("retry_after_seconds", 1.0)), **rest
        )
    return _BY_CODE.get(ErrorCode(code), InternalError)(message, **details)
