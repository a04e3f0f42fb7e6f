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
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), **self._env}
        command = [
            sys.executable, "-m", "worker.cli.main", "--cache", str(self.cache),
            "serve", "--nats", self.nats_url, "--ready-file", str(self.ready_file),
            "--concurrency", str(self.concurrency),
        ]  # fmt: skip
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not self.ready_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"worker did not become ready:\n{self.logs()}")
            time.sleep(0.05)
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
        command = [
            sys.executable, "-m", "worker.cli.main", "--cache", str(cache), "mirror", "serve",
            "--nats", url, "--interval", str(interval), "--ready-file", str(self.ready),
        ]  # fmt: skip
        environment = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), **(env or {})}
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command, env=environment, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 60
        while not self.ready.exists():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.05)

    def stop(self) -> int:
        self.process.terminate()
        return self.process.wait(timeout=60)
