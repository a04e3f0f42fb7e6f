"""Fuzz benchmark: hostile and malformed requests on every subject, in both encodings.

    python -m bench.fuzz [--requests 100000] [--seed 7] [--concurrency 32]

Two workers serve the graph fixture repository (`tests.support.graphs`) behind a real
nats-server. A seeded generator sends requests on every worker subject, in JSON and in
MessagePack: valid ones, and ones mutated into random bytes, wrong types, unknown fields,
huge and hostile strings (invalid UTF-8, control characters, 100 KB values), catastrophic
regular expressions and traversal paths. Every request must get an answer (a hang is a
request with no answer in `--timeout`) and none may be INTERNAL. Prints one table: answers
by code, INTERNAL, hangs, latency, and each worker's resident set before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import nats

from bench.tables import render
from contracts.subjects import (
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_MSGPACK,
    HEADER_CONTENT_TYPE,
    HEADER_REQUEST_ID,
    WORKER_SUBJECTS,
    Subject,
)
from tests.support.graphs import build_graph_cache
from tests.support.workers import WorkerProcess
from worker.service.embedded_nats import EmbeddedNats

REPO = "acme/shop"
VALID: dict[Subject, dict[str, Any]] = {
    Subject.RESEARCH: {"query": "order total", "repo_constraints": {"allowlist": [REPO]}},
    Subject.CODE_SEARCH: {"repo": REPO, "query": "def "},
    Subject.CODE_READ: {"repo": REPO, "path": "shop/models.py"},
    Subject.CODE_LIST: {"repo": REPO, "path": "shop"},
    Subject.GIT_HISTORY: {"repo": REPO},
    Subject.GIT_CHURN: {"repo": REPO, "time_window": "1y"},
    Subject.REPO_STATUS: {"repo": REPO},
    Subject.GRAPH_SEARCH: {"repo": REPO, "query": "sum_prices"},
    Subject.GRAPH_TRAVERSE: {"repo": REPO, "start_entities": ["shop"], "depth": 2},
    Subject.GRAPH_RETRIEVE: {"repo": REPO, "entity_ids": ["shop/models.py:Order"]},
    Subject.GRAPH_DIFF: {"repo": REPO, "base": "main", "head": "main"},
}
HOSTILE_STRINGS = (
    "",
    "../../etc/passwd",
    "/etc/passwd",
    "a" * 100_000,
    "(a+)+$",
    "((((((((((x*)*)*)*)*)*)*)*)*)*)*y",
    "\x00\x01\x02",
    "\u202e\ufeff",
    "💥" * 1000,
    "shop/../LICENSE",
    "$(rm -rf /)",
    "%s%s%s%n",
    "acme/shop\n",
)


class _Envelope(msgspec.Struct):
    errors: list[dict[str, Any]] = []


def mutate(rng: random.Random, body: dict[str, Any]) -> Any:
    """One hostile variant of a valid request body."""
    choice = rng.randrange(8)
    body = dict(body)
    key = rng.choice(sorted(body))
    if choice == 0:
        return {"garbage": rng.randbytes(rng.randrange(1, 64)).hex()}
    if choice == 1:
        body[key] = rng.choice([None, 17, -1, 1e308, [], {}, True, [1, [2, [3]]]])
    elif choice == 2:
        body[rng.choice(["limt", "max_result", "__proto__", "x" * 300])] = 1
    elif choice == 3:
        body[key] = rng.choice(HOSTILE_STRINGS)
    elif choice == 4:
        body["regex"] = True
        body["query"] = rng.choice(HOSTILE_STRINGS[4:6])
    elif choice == 5:
        for field in ("limit", "max_results", "depth", "max_nodes", "include_context"):
            body[field] = rng.choice([0, -5, 10**12])
    elif choice == 6:
        body["path"] = rng.choice(HOSTILE_STRINGS)
    else:
        body.pop(key)
    return body


def encoded(rng: random.Random, body: Any, as_json: bool) -> bytes:
    """The body in the chosen encoding, sometimes broken (random bytes, invalid UTF-8)."""
    roll = rng.random()
    if roll < 0.05:
        return rng.randbytes(rng.randrange(0, 200))
    if roll < 0.08:
        return b'{"repo": "\xff\xfe", "query": "x"}' if as_json else b"\x81\xa4repo\xa1\xff"
    return msgspec.json.encode(body) if as_json else msgspec.msgpack.encode(body)


async def run(url: str, total: int, seed: int, concurrency: int, timeout: float) -> dict[str, Any]:
    """Send `total` requests; counts by answer code, hangs and latencies."""
    rng = random.Random(seed)
    nc = await nats.connect(url, max_reconnect_attempts=1)
    codes: Counter[str] = Counter()
    latencies: list[float] = []
    hangs = 0
    slots = asyncio.Semaphore(concurrency)
    subjects = [s for s in WORKER_SUBJECTS if s in VALID]

    async def one(index: int) -> None:
        nonlocal hangs
        subject = subjects[index % len(subjects)]
        as_json = bool(index & 1)
        body = VALID[subject] if rng.random() < 0.1 else mutate(rng, VALID[subject])
        payload = encoded(rng, body, as_json)
        headers = {
            HEADER_CONTENT_TYPE: CONTENT_TYPE_JSON if as_json else CONTENT_TYPE_MSGPACK,
            HEADER_REQUEST_ID: f"fuzz-{seed}-{index}",
        }
        async with slots:
            started = time.perf_counter()
            try:
                reply = await nc.request(subject.value, payload, timeout=timeout, headers=headers)
            except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
                hangs += 1
                return
            latencies.append((time.perf_counter() - started) * 1000)
        decoder = msgspec.json if as_json else msgspec.msgpack
        try:
            errors = decoder.decode(reply.data, type=_Envelope).errors
        except msgspec.DecodeError:
            codes["UNDECODABLE"] += 1
            return
        codes[errors[0].get("code", "?") if errors else "OK"] += 1

    await asyncio.gather(*(one(i) for i in range(total)))
    await nc.close()
    return {"codes": codes, "latencies": latencies, "hangs": hangs}


def rss_mb(process: WorkerProcess) -> float:
    """A worker's resident set, from /proc."""
    assert process.process is not None
    for line in Path(f"/proc/{process.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        cache = build_graph_cache(Path(scratch))
        with (
            EmbeddedNats() as server,
            WorkerProcess(cache.cache.root, server.url, concurrency=4) as first,
            WorkerProcess(cache.cache.root, server.url, concurrency=4) as second,
        ):
            before = [rss_mb(first), rss_mb(second)]
            started = time.perf_counter()
            result = asyncio.run(
                run(server.url, args.requests, args.seed, args.concurrency, args.timeout)
            )
            seconds = time.perf_counter() - started
            after = [rss_mb(first), rss_mb(second)]
    codes: Counter[str] = result["codes"]
    latencies = sorted(result["latencies"]) or [float("nan")]
    internal = codes.get("INTERNAL", 0) + codes.get("UNDECODABLE", 0)
    rows = [
        ("measure", "value", "target"),
        ("requests (seed)", f"{args.requests} ({args.seed}) in {seconds:.1f} s", ""),
        ("answers by code", ", ".join(f"{c} {n}" for c, n in codes.most_common()), ""),
        ("INTERNAL or undecodable", str(internal), "0 " + ("met" if internal == 0 else "MISSED")),
        ("hangs", str(result["hangs"]), "0 " + ("met" if result["hangs"] == 0 else "MISSED")),
        (
            "latency p50 / p99",
            f"{statistics.median(latencies):.1f} / "
            f"{latencies[int(0.99 * (len(latencies) - 1))]:.1f} ms",
            "",
        ),
        (
            "worker RSS before -> after",
            ", ".join(f"{b:.0f} -> {a:.0f} MB" for b, a in zip(before, after, strict=True)),
            "",
        ),
    ]
    print(render(rows))
    return 0 if internal == 0 and result["hangs"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
