"""The MCP bridge with the SDK's client, over stdio and streamable HTTP, against a running stack."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.gateways import free_port
from tests.support.graphs import build_graph_cache
from tests.support.workers import PROJECT_ROOT, WorkerProcess, start_service
from worker.gateway.mcp_bridge import TOOLS
from worker.service.embedded_nats import EmbeddedNats
from worker.version import product_version

REPO = "acme/shop"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A NATS server and a worker over the shop; the server's URL and a scratch directory."""
    root = tmp_path_factory.mktemp("mcp")
    cache = build_graph_cache(root)
    with EmbeddedNats() as server, WorkerProcess(cache.cache.root, server.url):
        yield server.url, root


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}


@asynccontextmanager
async def over_stdio(url: str) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "worker.cli.main", "mcp", "--nats", url],
        env=environment(),
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        server = (await session.initialize()).server_info
        assert (server.name, server.version) == ("repo-reader", product_version())
        yield session


async def exchange(session: ClientSession) -> dict[str, Any]:
    """List the tools, research, read, and one refusal."""
    listed = await session.list_tools()
    research = await session.call_tool(
        "research",
        {"query": "order total price", "repo_constraints": {"allowlist": [REPO]}},
    )
    read = await session.call_tool("code_read", {"repo": REPO, "path": "shop/models.py"})
    refused = await session.call_tool("graph_retrieve", {"repo": REPO, "entity_ids": ["x.py:f"]})
    bad = await session.call_tool("code_search", {"repo": REPO, "query": "x", "max_result": 2})
    return {
        "tools": listed.tools,
        "research": research,
        "read": read,
        "refused": refused,
        "bad": bad,
    }


def check(results: dict[str, Any]) -> None:
    tools = results["tools"]
    assert [t.name for t in tools] == [t.name for t in TOOLS]
    assert not any(t.annotations.destructive_hint for t in tools)
    writers = [t.name for t in tools if not t.annotations.read_only_hint]
    assert writers == ["docs_regenerate"]  # the engine may write docs on its own ref
    assert tools[1].input_schema["required"] == ["repo", "query"]
    research = results["research"]
    assert not research.is_error
    artifacts = research.structured_content["artifacts"]
    assert artifacts
    assert all(a["license"] == "MIT" and a["swhid"].startswith("swh:1:cnt:") for a in artifacts)
    assert research.content[0].text.startswith(f"UNTRUSTED CONTENT from {REPO}@")
    read = results["read"]
    assert "def sum_prices(items):" in read.structured_content["content"]
    assert read.structured_content["license"] == "MIT"
    refused = results["refused"]
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "NOT_FOUND"
    bad = results["bad"]
    assert bad.is_error
    assert bad.structured_content["error"]["code"] == "INVALID_REQUEST"
    assert "max_result" in bad.content[0].text
    assert bad.structured_content["error"]["details"] == {"field": "max_result"}


def test_an_agent_researches_and_reads_over_stdio(stack: tuple[str, Path]) -> None:
    """initialize, list tools, research, read and two refusals through `repo-reader mcp`."""
    url, _ = stack

    async def run() -> dict[str, Any]:
        async with over_stdio(url) as session:
            return await exchange(session)

    check(anyio.run(run))


def test_the_same_over_streamable_http(stack: tuple[str, Path]) -> None:
    """The same exchange with `repo-reader mcp --transport http`."""
    url, root = stack
    port = free_port()
    ready = root / f"mcp-{port}.ready"
    process = start_service(
        [
            "mcp", "--nats", url, "--transport", "http", "--port", str(port),
            "--ready-file", str(ready),
        ],
        ready_file=ready,
        log_file=root / f"mcp-{port}.log",
    )  # fmt: skip
    try:

        async def run() -> dict[str, Any]:
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await exchange(session)

        check(anyio.run(run))
    finally:
        process.terminate()
        process.wait(timeout=30)
