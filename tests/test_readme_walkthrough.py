"""The README's walk-through, run: every shell line of its NATS sections and its Python snippet
as a script, against a real NATS server and a Flask-shaped fixture repository.

The lines run as written, in a scratch directory whose `.venv/bin` holds this checkout's
`repo-reader` and the nats-server binary, with three substitutions so that they run here and
beside other tests: the fixture's path for the GitHub URL, a free port for NATS's 4222, and
one for the gateway's 9876. A background line (`... &`) is waited for (its ready log line,
or its port) before the next. `nats req` is the one line not run as is: there is no `nats`
CLI here, so its subject and JSON body are sent as it sends them, and its answer checked.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nats
import pytest

from tests.support.flasklike import make_flasklike
from tests.support.gateways import free_port
from tests.support.workers import PROJECT_ROOT
from worker.service.embedded_nats import nats_server_binary

README = PROJECT_ROOT / "README.md"
SECTIONS = (
    "## The same flow against a NATS server you run",
    "## Agent tools",
    "## The code entity graph",
)
GITHUB_URL = "https://github.com/pallets/flask.git"
READY_LINES = {"nats-server": "Server is ready", "serve": '"worker.ready"'}


def section(title: str) -> str:
    """The README's text from the heading `title` to the next heading of its level."""
    return README.read_text().split(title + "\n", 1)[1].split("\n## ", 1)[0]


def shell_lines(text: str) -> list[str]:
    """The lines of the ```sh blocks of `text`, a continued line joined, comments dropped."""
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for raw in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#[^'\"]*$", "", raw).strip()  # a trailing comment
            if line and not line.startswith("#"):
                lines.append(line)
    return lines


def python_snippet() -> str:
    """The README's "From Python" example."""
    text = section(SECTIONS[0]).split("From Python:", 1)[1]
    return re.findall(r"```python\n(.*?)```", text, re.S)[0]


@dataclass
class Background:
    """A background line's process, its output read as it comes."""

    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)
    seen: dict[str, threading.Event] = field(default_factory=dict)
    reader: threading.Thread | None = None

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            for marker, event in self.seen.items():
                if marker in line:
                    event.set()


@dataclass
class Walk:
    """The scratch directory and environment the lines run in, and what they started."""

    cwd: Path
    env: dict[str, str]
    nats_port: int
    gateway_port: int
    flask: Path
    started: list[Background] = field(default_factory=list)
    ran: list[tuple[str, subprocess.CompletedProcess[str]]] = field(default_factory=list)

    @property
    def nats_url(self) -> str:
        return f"nats://127.0.0.1:{self.nats_port}"

    def localized(self, line: str) -> str:
        """`line` with the fixture for GitHub and this walk's ports."""
        line = line.replace(GITHUB_URL, str(self.flask))
        line = line.replace("nats://127.0.0.1:4222", self.nats_url)
        line = line.replace("nats-server -js", f"nats-server -js -a 127.0.0.1 -p {self.nats_port}")
        return line.replace("9876", str(self.gateway_port))

    def run(self, line: str) -> None:
        """Run one line as the README's reader would, and wait for it if it runs on."""
        line = self.localized(line)
        if line.startswith("export "):
            name = line.removeprefix("export ").split("=", 1)[0]
            value = self._bash(f'{line}; printf %s "${name}"')
            self.env[name] = value.stdout
        elif line.endswith("&"):
            self._start(line.removesuffix("&").strip())
        elif line.startswith("nats req "):
            self._nats_req(line)
        else:
            self.ran.append((line, self._bash(line)))

    def _bash(self, line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", line],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

    def _start(self, line: str) -> None:
        process = subprocess.Popen(
            ["bash", "-c", f"exec {line}"],
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        program = shlex.split(line)[0].rsplit("/", 1)[-1]
        command = "serve" if program == "repo-reader" and " serve " in f"{line} " else program
        background = Background(process)
        ready = READY_LINES.get(command)
        if ready is not None:
            background.seen[ready] = threading.Event()
        self.started.append(background)
        background.reader = threading.Thread(target=background.read, daemon=True)
        background.reader.start()
        if ready is not None:
            if not background.seen[ready].wait(120):
                raise AssertionError(f"{line!r} never got ready:\n{''.join(background.output)}")
        else:  # the gateway logs nothing when it listens: its port says
            wait_for_port(self.gateway_port, process)

    def _nats_req(self, line: str) -> None:
        _, _, subject, body = shlex.split(line)

        async def request() -> bytes:
            nc = await nats.connect(self.nats_url)
            try:
                return (await nc.request(subject, body.encode(), timeout=60)).data
            finally:
                await nc.close()

        answer = asyncio.run(request()).decode()
        self.ran.append(
            (line, subprocess.CompletedProcess(line, 0 if "artifacts" in answer else 1, answer, ""))
        )

    def stop(self) -> None:
        for background in reversed(self.started):
            if background.process.poll() is None:
                background.process.terminate()
                try:
                    background.process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    background.process.kill()
                    background.process.wait()
            if background.reader is not None:
                background.reader.join()  # the output ends with the process
            assert background.process.stdout is not None
            background.process.stdout.close()


def wait_for_port(port: int, process: subprocess.Popen[str]) -> None:
    """Return once something listens on `port` on loopback, while `process` runs."""
    while True:
        assert process.poll() is None, f"exited with {process.returncode}"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walk]:
    """Every walk-through line run once, in order, the processes it started stopped after."""
    root = tmp_path_factory.mktemp("readme")
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "nats-server").symlink_to(nats_server_binary())
    wrapper = bin_dir / "repo-reader"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m worker.cli.main "$@"\n')
    wrapper.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    for name in ("REPO_READER_CACHE", "REPO_READER_CONFIG", "REPO_READER_NATS_URL"):
        env.pop(name, None)
    flask = root / "sources" / "flask"
    make_flasklike(flask)
    walk = Walk(root, env, free_port(), free_port(), flask)
    try:
        env["REPO_READER_NATS_URL"] = walk.nats_url  # for the lines naming no server
        for title in SECTIONS:
            for line in shell_lines(section(title)):
                walk.run(line)
                if line.startswith("nats req"):
                    script = root / "example.py"
                    script.write_text(walk.localized(python_snippet()))
                    walk.ran.append(("python example.py", walk._bash(f"{sys.executable} {script}")))
        yield walk
    finally:
        walk.stop()


def test_the_walkthrough_is_found() -> None:
    """The sections hold the lines this test runs (so it runs something)."""
    lines = [line for title in SECTIONS for line in shell_lines(section(title))]
    assert len(lines) >= 20
    assert sum(line.endswith("&") for line in lines) == 4  # nats-server, serve, mirror, gateway
    assert "asyncio.run(main())" in python_snippet()


def test_every_line_succeeds(walk: Walk) -> None:
    """Each line exits 0, as a reader following the README would see."""
    failed = [(line, r.returncode, r.stdout[-500:], r.stderr[-2000:]) for line, r in walk.ran]
    assert [f for f in failed if f[1] != 0] == []
    assert len(walk.ran) >= 18


def test_the_answers_are_the_promised_ones(walk: Walk) -> None:
    """What the lines print: excerpts of the fixture, its license, the regex's matches."""
    out = {line: r.stdout for line, r in walk.ran}

    def printed(start: str) -> str:
        return next(text for line, text in out.items() if start in line)

    assert "pallets/flask:src/flask/app.py:L" in printed('ask "where are blueprints')
    assert json.loads(printed('ask "request teardown'))["artifacts"]
    assert "sessions.py" in printed("nats req")
    assert "pallets/flask" in printed("python example.py")
    assert "BSD-3-Clause" in printed("python example.py")
    regex = printed("-E 'class")
    assert "NullSession" in regex
    assert "SecureCookieSessionInterface" in regex
    assert "def url_for" in printed('search pallets/flask "def url_for"')
    assert '"result"' in printed("curl -s")
