"""The JSON-RPC gateway for tests: the real `repo-reader gateway` command on a free port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from tests.support.workers import PROJECT_ROOT


def free_port() -> int:
    """A TCP port on loopback nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class GatewayProcess:
    """`python -m worker.cli.main gateway`, ready once its ready file appears."""

    def __init__(self, workdir: Path, nats_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready_file = workdir / f"gateway-{self.port}.ready"
        self.log_file = workdir / f"gateway-{self.port}.log"
        self.nats_url = nats_url
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
        command = [
            sys.executable, "-m", "worker.cli.main", "gateway", "--nats", self.nats_url,
            "--port", str(self.port), "--ready-file", str(self.ready_file),
        ]  # fmt: skip
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not self.ready_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(f"gateway did not start:\n{self.log_file.read_text()}")
            time.sleep(0.05)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
