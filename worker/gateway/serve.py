"""Run the JSON-RPC gateway with uvicorn, and say when it listens (a ready file)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from types import FrameType

import uvicorn

from worker.gateway.jsonrpc import create_app
from worker.service.connection import NatsCredentials
from worker.service.interrupts import exit_at_once, interruptible
from worker.service.readiness import write_ready

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9876


class _Server(uvicorn.Server):
    """uvicorn's server, writing a ready file once it listens and removing it on exit; a second
    Ctrl-C ends it at once."""

    def __init__(self, config: uvicorn.Config, ready_file: Path | None) -> None:
        super().__init__(config)
        self.ready_file = ready_file

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        await super().startup(sockets=sockets)  # type: ignore[arg-type]
        if self.ready_file is not None and self.started:
            write_ready(self.ready_file, "gateway")

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            exit_at_once(sig)  # not uvicorn's forced exit, which still waits for the lifespan
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        if self.ready_file is not None:
            self.ready_file.unlink(missing_ok=True)
        await super().shutdown(sockets=sockets)  # type: ignore[arg-type]


def serve_gateway(
    nats_url: str,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    ready_file: Path | None = None,
) -> int:
    """Serve `POST /v1/rpc` until interrupted; the exit status (non-zero if it failed)."""
    credentials = NatsCredentials.from_environment()
    app = create_app(
        nats_url,
        user=credentials.user,
        password=credentials.password,
        inbox_prefix=credentials.inbox_prefix,
    )
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", access_log=False
    )
    server = _Server(config, ready_file)
    asyncio.run(server.serve())
    return 0 if server.started else 4


def serve_mcp(
    nats_url: str,
    *,
    transport: str,
    host: str = DEFAULT_HOST,
    port: int = 9877,
    ready_file: Path | None = None,
) -> int:
    """Serve the MCP bridge over stdio, or over streamable HTTP at `/mcp`."""
    from worker.gateway.mcp_bridge import http_app, serve_stdio

    if transport == "stdio":
        asyncio.run(interruptible(serve_stdio(nats_url)))
        return 0
    config = uvicorn.Config(
        http_app(nats_url, host=host),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        access_log=False,
    )
    server = _Server(config, ready_file)
    asyncio.run(server.serve())
    return 0 if server.started else 4
