"""Ctrl-C twice: the real commands as subprocesses, sent SIGINT as a terminal sends it (to the
whole process group), while their NATS server hangs so that the first one's clean-up cannot end
before the second arrives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from mcp.types import LATEST_PROTOCOL_VERSION

from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gateways import free_port
from tests.support.workers import PROJECT_ROOT, WorkerProcess
from worker.service.embedded_nats import EmbeddedNats

INTERRUPTED = 130


def start(arguments: list[str], *, stdin: int | None = None) -> subprocess.Popen[str]:
    """`repo-reader ARGUMENTS` in a process group of its own, its stderr readable by line
    (killed after two minutes, so that a reader waiting for a line never waits for ever)."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "worker.cli.main", *arguments],
        env=env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    watchdog = threading.Timer(120, process.kill)
    watchdog.daemon = True
    watchdog.start()
    return process


def read_until(stream: IO[str] | None, marker: str) -> str:
    """What `stream` says up to and including the first line holding `marker`."""
    assert stream is not None
    said = []
    for line in stream:
        said.append(line)
        if marker in line:
            return "".join(said)
    raise AssertionError(f"{marker!r} never came:\n{''.join(said)}")


def ctrl_c(process: subprocess.Popen[str]) -> None:
    """SIGINT to the process and its children, as a terminal's Ctrl-C."""
    os.killpg(process.pid, signal.SIGINT)


def poll_until(process: subprocess.Popen[str], condition: Callable[[], bool]) -> None:
    """Return once `condition` holds (a file the process writes or removes), while it runs."""
    while not condition():
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    """The exit status and the rest of stderr, once every process holding it has gone."""
    _, rest = process.communicate(timeout=60)
    return process.returncode, rest


@pytest.fixture
def served_cache(tmp_path: Path, make_source: SourceFactory) -> MirroredCache:
    """A cache with the sample repository mirrored."""
    cache = MirroredCache(tmp_path / "cache")
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    return cache


@pytest.mark.parametrize("command", [["serve"], ["mirror", "serve", "--interval", "0"]])
def test_a_second_ctrl_c_ends_a_drain_at_once(
    served_cache: MirroredCache, command: list[str]
) -> None:
    """The first Ctrl-C starts the drain; the second, while the drain waits on a hung server,
    ends the process at once with 130 and one log line, no traceback."""
    with EmbeddedNats() as server:
        process = start(["--cache", str(served_cache.root), *command, "--nats", server.url])
        read_until(process.stderr, '"worker.ready"')
        with server.paused():
            ctrl_c(process)
            read_until(process.stderr, '"worker.draining"')
            ctrl_c(process)
            status, rest = finish(process)
    assert status == INTERRUPTED
    assert '"process.interrupted_again"' in rest
    assert "Traceback" not in rest


def test_a_second_ctrl_c_ends_the_gateway_at_once(tmp_path: Path) -> None:
    """The gateway's shutdown waits on a hung server; a second Ctrl-C ends it at once (130)."""
    ready = tmp_path / "gateway.ready"
    with EmbeddedNats() as server:
        options = ["--port", str(free_port()), "--ready-file", str(ready)]
        process = start(["gateway", "--nats", server.url, *options])
        poll_until(process, ready.exists)
        with server.paused():
            ctrl_c(process)
            poll_until(process, lambda: not ready.exists())  # its shutdown has begun
            ctrl_c(process)
            status, rest = finish(process)
    assert status == INTERRUPTED
    assert '"process.interrupted_again"' in rest
    assert "Traceback" not in rest


def test_a_second_ctrl_c_ends_the_mcp_bridge_at_once(served_cache: MirroredCache) -> None:
    """`mcp` over stdio, connected to NATS by one tool call: the first Ctrl-C stops it, the
    second, while it closes the connection to a hung server, ends it at once (130)."""
    with EmbeddedNats() as server, WorkerProcess(served_cache.root, server.url):
        process = start(["mcp", "--nats", server.url], stdin=subprocess.PIPE)
        assert process.stdin is not None
        assert process.stdout is not None
        for message in (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LATEST_PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "repo_status", "arguments": {"repo": "acme/sample"}},
            },
        ):
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
        answer = read_until(process.stdout, '"id":2')
        assert "acme/sample" in answer
        with server.paused():
            ctrl_c(process)
            read_until(process.stderr, '"process.stopping"')
            ctrl_c(process)
            status, rest = finish(process)
    assert status == INTERRUPTED
    assert '"process.interrupted_again"' in rest
    assert "Traceback" not in rest


def test_ctrl_c_twice_during_quickstart_is_quiet(make_source: SourceFactory) -> None:
    """Ctrl-C twice while quickstart indexes: 130, no traceback from it or from its index
    workers, and none of its processes left (stderr closes)."""
    source, _ = make_source("sample")
    process = start(["quickstart", str(source)])
    read_until(process.stderr, "indexing")
    ctrl_c(process)
    ctrl_c(process)
    status, rest = finish(process)
    assert status == INTERRUPTED
    assert "Traceback" not in rest
