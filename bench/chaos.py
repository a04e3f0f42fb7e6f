"""Chaos benchmark: durable requests while workers are killed and the NATS server restarts.

    python -m bench.chaos [--requests 10000] [--kill-every 3] [--concurrency 50]

Two workers serve the graph fixture repository (`tests.support.graphs`) from the durable
request stream of a real nats-server. The caller sends `--requests` durable requests (a
mix of graph, code and status requests) through the Python client while, every
`--kill-every` seconds, one worker is SIGKILLed and a fresh one started, and once, when a
third of the requests are answered, the server itself is restarted (same port, same
storage). Prints one table: answered, lost (no answer before the client's deadline),
answered more than once as the caller sees it, errors by code, latency p50/p99/max, and the
latency of the requests a killed worker was working on.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import msgspec
import nats

from bench.tables import render
from contracts.code import CodeReadRequest, CodeReadResponse
from contracts.graph import GraphSearchRequest, GraphSearchResponse
from contracts.repo import RepoStatusRequest, RepoStatusResponse
from contracts.subjects import Subject
from tests.support.graphs import build_graph_cache
from tests.support.workers import WorkerProcess
from worker.client import RepoReaderClient
from worker.errors import NoAnswer, RepoReaderFailure
from worker.service.durable import StreamSettings, ensure_request_stream
from worker.service.embedded_nats import EmbeddedNats

REPO = "acme/shop"
REQUESTS: tuple[tuple[Subject, msgspec.Struct, type[msgspec.Struct]], ...] = (
    (Subject.GRAPH_SEARCH, GraphSearchRequest(repo=REPO, query="sum_prices"), GraphSearchResponse),
    (Subject.CODE_READ, CodeReadRequest(repo=REPO, path="shop/models.py"), CodeReadResponse),
    (Subject.REPO_STATUS, RepoStatusRequest(repo=REPO), RepoStatusResponse),
)


class Chaos:
    """Kills a worker (and starts another) every few seconds; restarts the server once."""

    def __init__(self, cache: Path, server: EmbeddedNats, workers: list[WorkerProcess]) -> None:
        self.cache = cache
        self.server = server
        self.workers = workers
        self.kills: list[float] = []
        self.restarts: list[float] = []
        self.stop = threading.Event()
        self.restart_now = threading.Event()

    def run(self, every: float) -> None:
        while not self.stop.wait(every):
            if self.restart_now.is_set() and not self.restarts:
                self.restarts.append(time.monotonic())
                self.server.restart()
                continue
            victim = self.workers.pop(0)
            assert victim.process is not None
            victim.process.kill()
            victim.process.wait()
            self.kills.append(time.monotonic())
            self.workers.append(WorkerProcess(self.cache, self.server.url, concurrency=4).start())


async def send(url: str, total: int, concurrency: int, chaos: Chaos) -> dict[str, object]:
    """Every request, concurrently; what became of each."""
    outcomes: Counter[str] = Counter()
    answers_per_request: Counter[str] = Counter()
    spans: list[tuple[float, float]] = []
    slots = asyncio.Semaphore(concurrency)
    done = 0
    client = await RepoReaderClient.connect(
        url, timeout=120, max_reconnect_attempts=-1, reconnect_time_wait=0.2
    )

    async def one(index: int) -> None:
        nonlocal done
        subject, request, response_type = REQUESTS[index % len(REQUESTS)]
        request_id = f"chaos-{index}"
        async with slots:
            started = time.monotonic()
            try:
                await client.durable_call(
                    subject, request, response_type, request_id=request_id, timeout=120
                )
                answers_per_request[request_id] += 1
                outcomes["answered"] += 1
            except NoAnswer:
                outcomes["lost"] += 1
            except RepoReaderFailure as failure:
                outcomes[str(failure.code)] += 1
            spans.append((started, time.monotonic()))
        done += 1
        if done >= total // 3:
            chaos.restart_now.set()

    await asyncio.gather(*(one(i) for i in range(total)))
    await client.close()
    return {"outcomes": outcomes, "answers": answers_per_request, "spans": spans}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--kill-every", type=float, default=3.0)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        cache = build_graph_cache(Path(scratch)).cache.root
        with EmbeddedNats() as server:
            asyncio.run(_create_stream(server.url))
            workers = [WorkerProcess(cache, server.url, concurrency=4).start() for _ in range(2)]
            chaos = Chaos(cache, server, workers)
            killer = threading.Thread(target=chaos.run, args=(args.kill_every,), daemon=True)
            started = time.monotonic()
            killer.start()
            try:
                result = asyncio.run(send(server.url, args.requests, args.concurrency, chaos))
            finally:
                chaos.stop.set()
                killer.join()
                for worker in chaos.workers:
                    worker.stop()
            seconds = time.monotonic() - started
    outcomes: Counter[str] = result["outcomes"]  # type: ignore[assignment]
    answers: Counter[str] = result["answers"]  # type: ignore[assignment]
    spans: list[tuple[float, float]] = result["spans"]  # type: ignore[assignment]
    latencies = sorted(1000 * (end - begin) for begin, end in spans)
    hit = sorted(
        1000 * (end - begin)
        for begin, end in spans
        if any(begin <= kill <= end for kill in chaos.kills + chaos.restarts)
    )
    lost = outcomes.get("lost", 0)
    twice = sum(1 for n in answers.values() if n > 1)
    rows = [
        ("measure", "value", "target"),
        ("requests", f"{args.requests} in {seconds:.0f} s, concurrency {args.concurrency}", ""),
        ("workers SIGKILLed / server restarts", f"{len(chaos.kills)} / {len(chaos.restarts)}", ""),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in outcomes.most_common()), ""),
        ("lost", str(lost), "0 " + ("met" if lost == 0 else "MISSED")),
        (
            "answered more than once (caller)",
            str(twice),
            "0 " + ("met" if twice == 0 else "MISSED"),
        ),
        (
            "latency p50 / p99 / max",
            f"{statistics.median(latencies):.0f} / "
            f"{latencies[int(0.99 * (len(latencies) - 1))]:.0f} / {latencies[-1]:.0f} ms",
            "",
        ),
        (
            "requests in flight at a kill or restart",
            f"{len(hit)}: p50 {statistics.median(hit):.0f} ms, max {hit[-1]:.0f} ms"
            if hit
            else "none",
            "",
        ),
    ]
    print(render(rows))
    return 0 if lost == 0 and twice == 0 else 1


async def _create_stream(url: str) -> None:
    nc = await nats.connect(url)
    await ensure_request_stream(nc.jetstream(), StreamSettings())
    await nc.close()


if __name__ == "__main__":
    sys.exit(main())
