"""The exit codes of every `repo-reader` command (seed 003's table), and what maps to each.

0  success                   1  no results
2  invalid arguments, also those the server refuses (INVALID_REQUEST, LIMIT_EXCEEDED, ...)
3  repository, revision, entity or index not found
4  service error or unreachable (INTERNAL, TIMEOUT, RATE_LIMITED, no NATS, no worker)
5  I/O error (a file or directory that cannot be written or read: --out, --cache)
130 interrupted (Ctrl-C: 128 + SIGINT, as a shell reports it); a service drained after a
    Ctrl-C or SIGTERM exits 0, and a second Ctrl-C ends it at once with 130
"""

from __future__ import annotations

import enum
from typing import Final

from contracts.errors import ErrorCode


class ExitCode(enum.IntEnum):
    """What a command's exit status means."""

    SUCCESS = 0
    NO_RESULTS = 1
    INVALID_ARGUMENTS = 2
    NOT_FOUND = 3
    SERVICE_ERROR = 4
    IO_ERROR = 5
    INTERRUPTED = 130


_BY_ERROR: Final[dict[str, ExitCode]] = {
    ErrorCode.INVALID_REQUEST: ExitCode.INVALID_ARGUMENTS,
    ErrorCode.REQUEST_TOO_BROAD: ExitCode.INVALID_ARGUMENTS,
    ErrorCode.LIMIT_EXCEEDED: ExitCode.INVALID_ARGUMENTS,
    ErrorCode.AMBIGUOUS_REPOSITORY: ExitCode.INVALID_ARGUMENTS,
    ErrorCode.LICENSE_UNAVAILABLE: ExitCode.INVALID_ARGUMENTS,
    ErrorCode.LICENSE_NOT_ALLOWED: ExitCode.INVALID_ARGUMENTS,
    ErrorCode.REPO_NOT_FOUND: ExitCode.NOT_FOUND,
    ErrorCode.ACCESS_DENIED: ExitCode.NOT_FOUND,
    ErrorCode.REVISION_NOT_FOUND: ExitCode.NOT_FOUND,
    ErrorCode.NOT_FOUND: ExitCode.NOT_FOUND,
}
"""A license refusal is the caller's to lift (`--no-require-license`, other licenses); an
unregistered repository is, to a caller, one that is not there."""


def for_error(code: str) -> ExitCode:
    """The exit code of a failure the service answered (an unknown code is a service error)."""
    return _BY_ERROR.get(code, ExitCode.SERVICE_ERROR)
