"""The JSON-RPC gateway for tests: the real `repo-reader gateway` command on a free port."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Self

from tests.support.workers import start_service


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
        self.process = start_service(
            [
                "gateway", "--nats", self.nats_url, "--port", str(self.port),
                "--ready-file", str(self.ready_file),
            ],
            ready_file=self.ready_file,
            log_file=self.log_file,
        )  # fmt: skip
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
