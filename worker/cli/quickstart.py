"""`repo-reader quickstart`: the whole flow on one machine with nothing set up beforehand.

Starts an embedded NATS server, mirrors a local git repository into a cache, starts a
worker, asks one research question through the client and prints the artifacts.
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from pathlib import Path

import pygit2

from contracts.research import RepoConstraints, RepoReaderRequest, ResultLimits
from worker.capabilities.table import Worker, serve
from worker.client import RepoReaderClient, artifact_lines
from worker.mirror.sync import Mirror
from worker.service.embedded_nats import EmbeddedNats
from worker.service.interrupts import interruptible


def quickstart(path: Path, *, query: str, cache: Path | None = None) -> int:
    """Mirror the repository at `path`, serve it, ask `query`, print the answer."""
    discovered = pygit2.discover_repository(str(path))
    if discovered is None:
        print(f"repo-reader: {path} is not inside a git repository", file=sys.stderr)
        return 2
    repo = pygit2.Repository(discovered)
    source = Path(repo.workdir or repo.path).resolve()
    name = "local/" + (re.sub(r"[^A-Za-z0-9_.-]", "-", source.name.removesuffix(".git")) or "repo")
    with tempfile.TemporaryDirectory(prefix="repo-reader-quickstart-") as scratch:
        cache_dir = cache or Path(scratch) / "cache"
        with EmbeddedNats() as server:
            _say(f"embedded NATS server on {server.url}")
            mirror = Mirror(
                cache_dir, cache_dir / "repo-reader.toml", progress=lambda n, m: _say(f"{n}: {m}")
            )
            if mirror.config.repo(name) is None:
                mirror.add(name, str(source))
            (result,) = mirror.sync([name])
            _say(f"mirrored {name} at {result.head[:12]} into {cache_dir}")
            return asyncio.run(_ask(Worker(mirror.config, cache_dir), server.url, name, query))


async def _ask(worker: Worker, url: str, name: str, query: str) -> int:
    """Serve `worker` and ask it `query`; Ctrl-C ends both (KeyboardInterrupt), a second one
    at once."""
    return await interruptible(_serve_and_ask(worker, url, name, query))


async def _serve_and_ask(worker: Worker, url: str, name: str, query: str) -> int:
    stop = asyncio.Event()
    ready_file = Path(tempfile.mkdtemp(prefix="repo-reader-ready-")) / "ready"
    serving = asyncio.create_task(
        serve(worker, url, concurrency=2, ready_file=ready_file, stop=stop)
    )
    try:
        while not ready_file.exists():
            if serving.done():
                await serving
            await asyncio.sleep(0.05)
        _say(f"worker ready; asking: {query!r}")
        request = RepoReaderRequest(
            query=query,
            repo_constraints=RepoConstraints(allowlist=(name,)),
            result_limits=ResultLimits(max_total_excerpts=5),
        )
        async with await RepoReaderClient.connect(url) as client:
            result = await client.research(request)
        for r in result.resolved:
            print(f"# {r.repo} @ {r.commit} ({r.ref}) license={r.license or '-'}")
        print()
        print(artifact_lines(result.artifacts) if result.artifacts else "no matching excerpts")
        return 0
    finally:
        stop.set()
        await serving
        ready_file.unlink(missing_ok=True)
        ready_file.parent.rmdir()


def _say(message: str) -> None:
    print(f"quickstart: {message}", file=sys.stderr, flush=True)
