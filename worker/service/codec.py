"""Encoding and decoding on the wire: one typed decoder per subject and content type.

MessagePack is the default; a request with `Content-Type: application/json` is decoded
as JSON and answered in JSON. A request with no Content-Type whose body starts with `{`
is JSON too, so `nats req SUBJECT '{"query": ...}'` works from a shell: a MessagePack
request is a map, whose first byte is never `{`.

`error_from_exception` is the one place any exception becomes a wire `RepoReaderError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from contracts.errors import ErrorCode, RepoReaderError
from contracts.subjects import CONTENT_TYPE_JSON, CONTENT_TYPE_MSGPACK, HEADER_CONTENT_TYPE, Subject
from worker.errors import InvalidRequest, RepoReaderFailure

_FIELD_PATH = re.compile(r" - at `(?P<path>\$[^`]*)`$")
_UNKNOWN_FIELD = re.compile(r"^Object contains unknown field `(?P<field>[^`]*)`")
_PATTERN_MISMATCH = re.compile(r"^Expected `str` matching regex (?P<pattern>'.*'|\".*\")$")
"""msgspec's message for a string off its pattern, which it shows as Python's repr."""


class Codec:
    """Decoders for the request types of each subject, and an encoder, for one content type."""

    def __init__(self, content_type: str, request_types: Mapping[Subject, type[Any]]) -> None:
        self.content_type = content_type
        self._json = content_type == CONTENT_TYPE_JSON
        self._decoders: dict[Subject, msgspec.json.Decoder[Any] | msgspec.msgpack.Decoder[Any]] = {
            subject: (msgspec.json.Decoder(kind) if self._json else msgspec.msgpack.Decoder(kind))
            for subject, kind in request_types.items()
        }
        self._encoder: msgspec.json.Encoder | msgspec.msgpack.Encoder = (
            msgspec.json.Encoder() if self._json else msgspec.msgpack.Encoder()
        )
        self._types = dict(request_types)

    def decode(self, subject: Subject, data: bytes) -> Any:
        """The typed request in `data`, or InvalidRequest naming the offending field."""
        try:
            return self._decoders[subject].decode(data)
        except msgspec.ValidationError as exc:
            raise invalid_request(exc, self._types[subject]) from None
        except msgspec.DecodeError as exc:
            kind = "JSON" if self._json else "MessagePack"
            raise InvalidRequest(
                f"the request is not valid {kind}: {exc}",
                content_type=self.content_type,
            ) from None
        except UnicodeDecodeError:
            # msgspec validates UTF-8 while it builds a str, and raises this, not a DecodeError.
            raise InvalidRequest(
                "the request holds a string that is not valid UTF-8",
                content_type=self.content_type,
            ) from None

    def encode(self, message: Any) -> bytes:
        """The bytes of a response message."""
        return self._encoder.encode(message)


class Codecs:
    """The JSON and MessagePack codecs, chosen per message by its Content-Type header."""

    def __init__(self, request_types: Mapping[Subject, type[Any]]) -> None:
        self.json = Codec(CONTENT_TYPE_JSON, request_types)
        self.msgpack = Codec(CONTENT_TYPE_MSGPACK, request_types)

    def for_message(self, headers: Mapping[str, str] | None, data: bytes) -> Codec:
        """The codec a message asks for by its Content-Type, or by its first byte without one."""
        content_type = (headers or {}).get(HEADER_CONTENT_TYPE)
        if content_type is None:
            return self.json if data.lstrip()[:1] == b"{" else self.msgpack
        media_type = content_type.split(";")[0].strip().lower()
        return self.json if media_type == CONTENT_TYPE_JSON else self.msgpack


def invalid_request(exc: msgspec.ValidationError, request_type: type[Any]) -> InvalidRequest:
    """The refusal of a request of `request_type` that failed validation: the offending field
    in details and, for a string off its pattern, what the field wants."""
    described = _DESCRIBED.get(request_type)
    if described is None:
        described = _DESCRIBED[request_type] = _pattern_descriptions(request_type)
    return _invalid(str(exc), described)


_DESCRIBED: dict[type[Any], dict[str, tuple[str, str]]] = {}


def _pattern_descriptions(request_type: type[Any]) -> dict[str, tuple[str, str]]:
    """Each string pattern of the request type, keyed as msgspec shows it (its repr), with
    what it means (the description in the type's schema)."""
    _, components = msgspec.json.schema_components([request_type])
    found: dict[str, tuple[str, str]] = {}
    todo: list[Any] = [components]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            pattern, description = node.get("pattern"), node.get("description")
            if isinstance(pattern, str) and isinstance(description, str):
                found.setdefault(repr(pattern), (pattern, description))
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found


def _invalid(message: str, described: Mapping[str, tuple[str, str]]) -> InvalidRequest:
    """An InvalidRequest from a msgspec validation message, with the field's path in details.

    A string that misses its pattern is told what the field wants (its description), not
    only the regular expression it failed.
    """
    details: dict[str, Any] = {}
    match = _FIELD_PATH.search(message)
    path = match.group("path") if match else "$"
    unknown = _UNKNOWN_FIELD.match(message)
    if unknown:
        path = f"{path}.{unknown.group('field')}"
    details["field"] = path.removeprefix("$.").removeprefix("$") or "$"
    text = message[: match.start()] if match else message
    mismatch = _PATTERN_MISMATCH.match(text)
    if mismatch and mismatch.group("pattern") in described:
        pattern, description = described[mismatch.group("pattern")]
        wanted = description.rstrip(".")
        details["pattern"] = pattern
        text = f"expected {wanted[:1].lower()}{wanted[1:]}"
    return InvalidRequest(f"{details['field']}: {text}", **details)


ERROR_CODE_FOR_UNEXPECTED: Final = ErrorCode.INTERNAL


def error_from_exception(exc: BaseException) -> RepoReaderError:
    """The wire error for any exception: failures keep their code, anything else is INTERNAL."""
    if isinstance(exc, RepoReaderFailure):
        return RepoReaderError(code=exc.code.value, message=exc.message, details=exc.details)
    return RepoReaderError(
        code=ERROR_CODE_FOR_UNEXPECTED,
        message="the worker failed to answer; the failure is logged",
        details={"exception": type(exc).__name__},
    )
