"""Service processes for tests: the real `repo-reader serve` and `mirror serve` commands, run as
in production."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Self

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def launch(
    arguments: list[str], *, log_file: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`python -m worker.cli.main ARGUMENTS`, its output in `log_file`."""
    environment = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), **(env or {})}
    with log_file.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "worker.cli.main", *arguments],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def wait_ready(
    process: subprocess.Popen[bytes], ready_file: Path, log_file: Path, timeout: float = 60.0
) -> None:
    """Return once `process` wrote `ready_file`; if it exits or is not ready in time, stop it
    and raise RuntimeError with its output."""
    deadline = time.monotonic() + timeout
    while not ready_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            if process.poll() is None:
                process.kill()
                process.wait()
            output = log_file.read_text(errors="replace")
            command = " ".join(str(a) for a in list(process.args)[3:7])
            raise RuntimeError(f"repo-reader {command} ... did not become ready:\n{output}")
        time.sleep(0.05)


def start_service(
    arguments: list[str],
    *,
    ready_file: Path,
    log_file: Path,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> subprocess.Popen[bytes]:
    """`launch`, then `wait_ready`."""
    process = launch(arguments, log_file=log_file, env=env)
    wait_ready(process, ready_file, log_file, timeout)
    return process


class WorkerProcess:
    """`python -m worker.cli.main serve` on a cache, ready once its ready file appears."""

    def __init__(
        self, cache: Path, nats_url: str, *, concurrency: int = 1, env: dict[str, str] | None = None
    ) -> None:
        self.cache = cache
        self.nats_url = nats_url
        self.concurrency = concurrency
        self.ready_file = cache.parent / f"ready-{id(self)}"
        self.log_file = cache.parent / f"worker-{id(self)}.log"
        self._env = env or {}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> Self:
        """Start the worker and wait until it has subscribed."""
        self.process = launch(
            [
                "--cache", str(self.cache), "serve", "--nats", self.nats_url,
                "--ready-file", str(self.ready_file), "--concurrency", str(self.concurrency),
            ],
            log_file=self.log_file,
            env=self._env,
        )  # fmt: skip
        wait_ready(self.process, self.ready_file, self.log_file, timeout)
        return self

    def terminate(self) -> None:
        """Send SIGTERM (the worker drains)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = 60.0) -> int:
        """Wait for the process to exit and return its exit code."""
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def stop(self) -> int | None:
        """Terminate and reap the worker if it still runs."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def logs(self) -> str:
        """Everything the worker printed."""
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class MirrorProcess:
    """`python -m worker.cli.main mirror serve` on a cache."""

    def __init__(
        self, cache: Path, url: str, interval: float, *, env: dict[str, str] | None = None
    ) -> None:
        self.ready = cache.parent / "mirror.ready"
        self.log = cache.parent / "mirror.log"
        self.process = start_service(
            [
                "--cache", str(cache), "mirror", "serve", "--nats", url,
                "--interval", str(interval), "--ready-file", str(self.ready),
            ],
            ready_file=self.ready,
            log_file=self.log,
            env=env,
        )  # fmt: skip

    def stop(self) -> int:
        self.process.terminate()
        return self.process.wait(timeout=60)
