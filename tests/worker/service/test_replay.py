"""Recorded durable requests replay against two independently built stacks with the same answers."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import nats

from contracts.code import CodeReadRequest, CodeReadResponse, CodeSearchRequest, CodeSearchResponse
from contracts.graph import (
    GraphSearchRequest,
    GraphSearchResponse,
    GraphTraverseRequest,
    GraphTraverseResponse,
)
from contracts.repo import RepoStatusRequest, RepoStatusResponse
from contracts.research import RepoConstraints, RepoReaderRequest, RepoReaderResponse
from contracts.subjects import Subject
from tests.support.cache import MirroredCache
from tests.support.graphs import build_graph_cache
from tests.support.workers import PROJECT_ROOT, WorkerProcess
from worker.client import RepoReaderClient
from worker.service.durable import StreamSettings, ensure_request_stream
from worker.service.embedded_nats import EmbeddedNats

REPO = "acme/shop"
REQUESTS: list[tuple[Subject, msgspec.Struct, type[msgspec.Struct]]] = [
    (Subject.GRAPH_SEARCH, GraphSearchRequest(repo=REPO, query="sum_prices"), GraphSearchResponse),
    (
        Subject.GRAPH_TRAVERSE,
        GraphTraverseRequest(repo=REPO, start_entities=("shop/views.py:checkout",), depth=2),
        GraphTraverseResponse,
    ),
    (Subject.CODE_SEARCH, CodeSearchRequest(repo=REPO, query="def "), CodeSearchResponse),
    (Subject.CODE_READ, CodeReadRequest(repo=REPO, path="shop/models.py"), CodeReadResponse),
    (
        Subject.RESEARCH,
        RepoReaderRequest(
            query="total price of the order items",
            repo_constraints=RepoConstraints(allowlist=(REPO,)),
        ),
        RepoReaderResponse,
    ),
    (Subject.REPO_STATUS, RepoStatusRequest(repo=REPO), RepoStatusResponse),
]


async def _create_stream(url: str) -> None:
    nc = await nats.connect(url)
    await ensure_request_stream(nc.jetstream(), StreamSettings())
    await nc.close()


async def _record(url: str) -> None:
    """Send every request of REQUESTS through the stream (one of them in JSON)."""
    async with await RepoReaderClient.connect(url, timeout=60) as client:
        for subject, request, response_type in REQUESTS:
            await client.durable_call(subject, request, response_type)
    async with await RepoReaderClient.connect(url, timeout=60, json=True) as client:
        await client.durable_call(*REQUESTS[0])


def replay(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "worker.cli.main", "replay", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_two_hosts_built_apart_answer_recorded_requests_alike(tmp_path: Path) -> None:
    """Replayed on host A and on host B (its cache mirrored and indexed on its own from the
    same upstream), the recorded requests get the same answers; a changed answer is caught."""
    host_a = build_graph_cache(tmp_path / "a")
    (tmp_path / "b").mkdir()
    cache_b = MirroredCache(tmp_path / "b")
    # The same repositories from the same upstreams, mirrored and indexed again.
    cache_b.set_config(host_a.cache.config_file.read_text())
    cache_b.mirror.sync(["acme/shop", "acme/unlicensed"])
    answers_a = tmp_path / "a.jsonl"
    with EmbeddedNats() as nats_a, EmbeddedNats() as nats_b:
        asyncio.run(_create_stream(nats_a.url))
        with WorkerProcess(host_a.cache.root, nats_a.url):
            asyncio.run(_record(nats_a.url))
            first = replay("--nats", nats_a.url, "--out", str(answers_a))
        assert first.returncode == 0, first.stderr
        assert f"replayed {len(REQUESTS) + 1} recorded requests" in first.stdout
        with WorkerProcess(cache_b.root, nats_b.url):
            second = replay("--from", nats_a.url, "--nats", nats_b.url, "--compare", str(answers_a))
            assert second.returncode == 0, second.stderr
            assert "identical to" in second.stdout
            tampered = tmp_path / "tampered.jsonl"
            lines = [json.loads(line) for line in answers_a.read_text().splitlines()]
            code_read = next(line for line in lines if line["subject"] == Subject.CODE_READ.value)
            changed = base64.b64decode(code_read["messages"][0]).replace(
                b"sum_prices", b"sum_costs"
            )
            code_read["messages"][0] = base64.b64encode(changed).decode()
            tampered.write_text("".join(json.dumps(line) + "\n" for line in lines))
            third = replay("--from", nats_a.url, "--nats", nats_b.url, "--compare", str(tampered))
    assert third.returncode == 1
    assert "differs:" in third.stderr
