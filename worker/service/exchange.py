"""What the edge decides about one message with no NATS in sight: its request id, whether its
capability is served, and the single message that answers it when it fails.

The worker's server and the mock Repo Reader (`worker.testing`) both answer through these, so a
refusal has the same code, message, details and size bound from either. Imports only msgspec,
`contracts` and light `worker` modules.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from contracts.errors import RepoReaderError
from contracts.subjects import (
    HEADER_CONTENT_TYPE,
    HEADER_REQUEST_ID,
    HEADER_SERVICE_ERROR,
    HEADER_SERVICE_ERROR_CODE,
    REQUEST_ID_MAX_LENGTH,
    REQUEST_ID_PATTERN,
    Subject,
)
from worker.errors import CapabilityDisabled, InvalidRequest
from worker.service.codec import error_from_exception
from worker.service.replies import body_budget, error_message

_REQUEST_ID = re.compile(REQUEST_ID_PATTERN)


def request_id_of(given: str | None) -> tuple[str, InvalidRequest | None]:
    """The id to answer under, and the refusal to answer with when `given` is no usable id.

    No id (or an empty one) gets a fresh id; a malformed one gets a fresh id too, so that
    nothing the caller sent unchecked is echoed in reply headers or logs.
    """
    if not given:
        return uuid.uuid4().hex, None
    if _REQUEST_ID.fullmatch(given):
        return given, None
    if len(given) > REQUEST_ID_MAX_LENGTH:
        reason = f"{len(given)} characters is above the bound of {REQUEST_ID_MAX_LENGTH}"
    else:
        reason = "only the characters A-Z a-z 0-9 . _ : - may appear in it"
    return uuid.uuid4().hex, InvalidRequest(
        f"{HEADER_REQUEST_ID}: not a usable request id ({reason}); this answer carries a fresh one",
        header=HEADER_REQUEST_ID,
        length=len(given),
        max_length=REQUEST_ID_MAX_LENGTH,
        pattern=REQUEST_ID_PATTERN,
    )


def reply_headers(content_type: str, request_id: str) -> dict[str, str]:
    """The headers every reply message carries."""
    return {HEADER_CONTENT_TYPE: content_type, HEADER_REQUEST_ID: request_id}


def check_enabled(subject: Subject, *, enabled: bool) -> None:
    """CapabilityDisabled unless the server's config serves `subject`'s capability."""
    if not enabled:
        raise CapabilityDisabled(
            f"{subject.capability} is disabled on this server", capability=subject.capability
        )


def error_reply(
    exc: BaseException,
    *,
    request_id: str,
    headers: dict[str, str],
    max_payload: int,
    encode: Callable[[Any], bytes],
) -> tuple[RepoReaderError, dict[str, str], bytes]:
    """The wire error for `exc`, the headers of its message and its body within `max_payload`
    (the server's max payload, which counts the headers)."""
    error = error_from_exception(exc)
    headers, body = error_reply_of(
        error, request_id=request_id, headers=headers, max_payload=max_payload, encode=encode
    )
    return error, headers, body


def error_reply_of(
    error: RepoReaderError,
    *,
    request_id: str,
    headers: dict[str, str],
    max_payload: int,
    encode: Callable[[Any], bytes],
) -> tuple[dict[str, str], bytes]:
    """The headers and body of the message that answers with `error`, within `max_payload`."""
    headers = {
        **headers,
        HEADER_SERVICE_ERROR_CODE: error.code,
        HEADER_SERVICE_ERROR: header_value(error.message),
    }
    body = error_message(
        request_id, error, max_payload=body_budget(max_payload, headers), encode=encode
    )
    return headers, body


def header_value(text: str) -> str:
    """A header-safe, bounded copy of `text` (NATS headers cannot hold line breaks)."""
    return " ".join(text.split())[:200]
