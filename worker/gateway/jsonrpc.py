"""The JSON-RPC 2.0 gateway (seed 003): `POST /v1/rpc`, forwarding each call over NATS.

Stateless: every call becomes one request to the workers (or, for `rebuild_index`, to the
mirror) with the orchestrator's credentials, so more gateways add capacity. Batches are
answered in order; notifications (no `id`) get no answer. Errors follow the seed: -32700 a
body that is no JSON (HTTP 400), -32600 no valid request (400), -32601 an unknown method,
-32602 bad parameters, -32001 repository, revision or index not found, -32002 entity not
found, -32004 timeout, -32603 anything else (500 when the gateway itself failed, 503 when
no worker or NATS answered); `error.data` carries the product's code and details.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any, Final

import msgspec
import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from contracts.errors import ErrorCode
from worker.client import RepoReaderClient
from worker.errors import NoAnswer, NoResponders, RepoReaderFailure
from worker.gateway.methods import METHODS, Method
from worker.service.codec import invalid_request
from worker.service.replies import join_batches

log = structlog.get_logger(__name__)

API_VERSION: Final = "1.0.0"
VERSION_HEADER: Final = "X-CDS-API-Version"
MAX_BODY_BYTES: Final = 1 << 20
MAX_BATCH: Final = 50

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
INDEX_NOT_FOUND, ENTITY_NOT_FOUND, QUERY_TIMEOUT = -32001, -32002, -32004

_BY_CODE: Final[dict[str, int]] = {
    ErrorCode.INVALID_REQUEST: INVALID_PARAMS,
    ErrorCode.REQUEST_TOO_BROAD: INVALID_PARAMS,
    ErrorCode.LIMIT_EXCEEDED: INVALID_PARAMS,
    ErrorCode.AMBIGUOUS_REPOSITORY: INVALID_PARAMS,
    ErrorCode.LICENSE_UNAVAILABLE: INVALID_PARAMS,
    ErrorCode.LICENSE_NOT_ALLOWED: INVALID_PARAMS,
    ErrorCode.REPO_NOT_FOUND: INDEX_NOT_FOUND,
    ErrorCode.REVISION_NOT_FOUND: INDEX_NOT_FOUND,
    ErrorCode.ACCESS_DENIED: INDEX_NOT_FOUND,
    ErrorCode.NOT_FOUND: ENTITY_NOT_FOUND,
    ErrorCode.TIMEOUT: QUERY_TIMEOUT,
}
_UNAVAILABLE: Final = frozenset({ErrorCode.RATE_LIMITED, ErrorCode.CAPABILITY_DISABLED})

_json = msgspec.json.Encoder()


class _Envelope(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A JSON-RPC 2.0 request object."""

    jsonrpc: str
    method: str
    params: dict[str, Any] | list[Any] | None = None
    id: str | int | msgspec.UnsetType | None = msgspec.UNSET


class _Failure(Exception):
    """A call's JSON-RPC error, with the HTTP status it deserves when it is alone."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None, status: int) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.status = code, message, data, status


def _error(call_id: Any, failure: _Failure) -> dict[str, Any]:
    body: dict[str, Any] = {"code": failure.code, "message": failure.message}
    if failure.data is not None:
        body["data"] = failure.data
    return {"jsonrpc": "2.0", "id": call_id, "error": body}


class Gateway:
    """Answers JSON-RPC calls with one NATS client shared by every call."""

    def __init__(self, client: RepoReaderClient) -> None:
        self.client = client

    async def answer(self, body: bytes) -> tuple[int, Any]:
        """The HTTP status and JSON body (None: nothing to answer) for a request body."""
        try:
            document = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            return 400, _error(None, _Failure(PARSE_ERROR, f"Parse error: {exc}", None, 400))
        if isinstance(document, list):
            if not document:
                failure = _Failure(INVALID_REQUEST, "Invalid Request: empty batch", None, 400)
                return 400, _error(None, failure)
            if len(document) > MAX_BATCH:
                failure = _Failure(
                    INVALID_REQUEST, f"Invalid Request: more than {MAX_BATCH} calls", None, 400
                )
                return 400, _error(None, failure)
            answers = [await self._one(call) for call in document]
            kept = [answer for _, answer in answers if answer is not None]
            return (200, kept) if kept else (204, None)
        status, answer = await self._one(document)
        return (status, answer) if answer is not None else (204, None)

    async def _one(self, call: Any) -> tuple[int, dict[str, Any] | None]:
        call_id = call.get("id") if isinstance(call, dict) else None
        if isinstance(call_id, bool) or not isinstance(call_id, str | int | None):
            call_id = None  # an id that is no id is answered with null, as JSON-RPC 2.0 says
        try:
            envelope = msgspec.convert(call, type=_Envelope)
        except msgspec.ValidationError as exc:
            return 400, _error(
                call_id, _Failure(INVALID_REQUEST, f"Invalid Request: {exc}", None, 400)
            )
        if envelope.jsonrpc != "2.0":
            failure = _Failure(INVALID_REQUEST, "Invalid Request: jsonrpc must be 2.0", None, 400)
            return 400, _error(call_id, failure)
        notification = envelope.id is msgspec.UNSET
        try:
            result = await self._call(envelope)
        except _Failure as failure:
            if notification:
                return 204, None
            return failure.status, _error(envelope.id, failure)
        if notification:
            return 204, None
        return 200, {"jsonrpc": "2.0", "id": envelope.id, "result": result}

    async def _call(self, envelope: _Envelope) -> dict[str, Any]:
        method: Method | None = METHODS.get(envelope.method)
        if method is None:
            raise _Failure(
                METHOD_NOT_FOUND,
                f"Method not found: {envelope.method!r}",
                {"methods": sorted(METHODS)},
                200,
            )
        if isinstance(envelope.params, list):
            raise _Failure(INVALID_PARAMS, "Invalid params: pass them by name", None, 200)
        try:
            request = msgspec.convert(
                method.params(envelope.params or {}), type=method.request_type
            )
        except msgspec.ValidationError as exc:
            refused = invalid_request(exc, method.request_type)
            raise _Failure(
                INVALID_PARAMS,
                f"Invalid params: {refused.message}",
                {"code": ErrorCode.INVALID_REQUEST, "details": refused.details},
                200,
            ) from None
        try:
            batches = await self.client.call(method.subject, request, method.response_type)
        except RepoReaderFailure as failure:
            code = failure.wire_code
            data = {"code": code, "details": failure.details}
            if isinstance(failure, (NoResponders, NoAnswer)):
                # No worker answered at all: the service, not the call, is unavailable.
                raise _Failure(INTERNAL_ERROR, failure.message, data, 503) from None
            status = 503 if code in _UNAVAILABLE else 500 if code == ErrorCode.INTERNAL else 200
            raise _Failure(
                _BY_CODE.get(code, INTERNAL_ERROR), failure.message, data, status
            ) from None
        answer = join_batches(batches, method.items) if method.items else batches[0]
        return method.result(answer)


def create_app(
    nats_url: str,
    *,
    user: str | None = None,
    password: str | None = None,
    inbox_prefix: str | None = None,
) -> Starlette:
    """The gateway's ASGI application, connected to NATS for its lifetime (replies under
    `inbox_prefix`, by default the user's own: see `RepoReaderClient.connect`)."""
    state: dict[str, Gateway] = {}

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        client = await RepoReaderClient.connect(
            nats_url,
            user=user,
            password=password,
            inbox_prefix=inbox_prefix,
            timeout=float(os.environ.get("REPO_READER_GATEWAY_TIMEOUT", "60")),
        )
        state["gateway"] = Gateway(client)
        try:
            yield
        finally:
            await client.close()

    async def rpc(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return _response(413, _too_large())
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return _response(413, _too_large())
        try:
            status, answer = await state["gateway"].answer(body)
        except Exception:
            log.exception("gateway.failed")
            failure = _Failure(INTERNAL_ERROR, "Internal error", None, 500)
            return _response(500, _error(None, failure))
        return _response(status, answer)

    return Starlette(
        routes=[Route("/v1/rpc", rpc, methods=["POST"]), Route("/rpc", rpc, methods=["POST"])],
        lifespan=lifespan,
    )


def _too_large() -> dict[str, Any]:
    message = f"Invalid Request: the body is larger than {MAX_BODY_BYTES} bytes"
    return _error(None, _Failure(INVALID_REQUEST, message, None, 413))


def _response(status: int, answer: Any) -> Response:
    headers = {VERSION_HEADER: API_VERSION}
    if answer is None:
        return Response(status_code=status, headers=headers)
    return Response(
        _json.encode(answer), status_code=status, media_type="application/json", headers=headers
    )
