"""Fixtures of the sandbox tests: the project's NATS config on a real server, a Docker engine.

Container tests skip with a one-line reason when no Docker engine (or no project image)
is reachable, unless REPO_READER_REQUIRE_DOCKER=1 (CI), where they fail instead.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.roles import NATS_CONF, PROJECT_ROOT, new_passwords, password_environment
from worker.service.embedded_nats import nats_server_binary, wait_for_port

COMPOSE_ENV = PROJECT_ROOT / "sandbox" / ".build" / "compose.env"


@dataclass(frozen=True, kw_only=True)
class RoleServer:
    """A NATS server running sandbox/nats.conf: where it is and each role's password."""

    url: str
    passwords: dict[str, str]
    monitoring_url: str
    """The server's HTTP monitoring endpoint (what JetStream holds, seen by no NATS user)."""


def monitoring_url(ports_dir: Path, pid: int) -> str:
    """The monitoring URL in the ports file of the nats-server with `pid`."""
    (ports_file,) = ports_dir.glob(f"*_{pid}.ports")
    (url,) = json.loads(ports_file.read_text())["monitoring"]
    return str(url)


@pytest.fixture
def role_server(tmp_path: Path) -> Iterator[RoleServer]:
    """nats-server with sandbox/nats.conf on loopback ports it picks, fresh passwords per test."""
    passwords = new_passwords()
    log_path = tmp_path / "nats.log"
    # Flags override the config's listen ports and store directory, nothing else.
    command = [
        str(nats_server_binary()), "-c", str(NATS_CONF), "-a", "127.0.0.1",
        "-p", "-1", "-m", "-1", "--ports_file_dir", str(tmp_path),
        "-sd", str(tmp_path / "jetstream"),
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            env={**os.environ, **password_environment(passwords)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        port = wait_for_port(process, tmp_path, log_path, timeout=10)
        yield RoleServer(
            url=f"nats://127.0.0.1:{port}",
            passwords=passwords,
            monitoring_url=monitoring_url(tmp_path, process.pid),
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def unavailable(reason: str) -> None:
    """Skip, or fail when CI demands the container tests run."""
    if os.environ.get("REPO_READER_REQUIRE_DOCKER") == "1":
        pytest.fail(f"{reason} (REPO_READER_REQUIRE_DOCKER=1)", pytrace=False)
    pytest.skip(reason)


def image_name(variable: str, default: str) -> str:
    """An image name: the environment, else sandbox/.build/compose.env, else the default."""
    if os.environ.get(variable):
        return os.environ[variable]
    if COMPOSE_ENV.is_file():
        for line in COMPOSE_ENV.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == variable and value.strip():
                return value.strip()
    return default


@dataclass(frozen=True, kw_only=True)
class ProjectImages:
    """The project's images, present on the reachable engine."""

    repo_reader: str
    nats: str


def engine_socket_problem() -> str | None:
    """Why the engine's unix socket does not answer, or None (tcp engines are not probed)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return None
    path = host.removeprefix("unix://")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        try:
            sock.connect(path)
        except OSError as exc:
            return f"no Docker engine at {host}: {exc.strerror or exc}"
    return None


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """A client of a reachable Docker engine (testcontainers' wrapper of docker-py)."""
    problem = engine_socket_problem()
    if problem:
        unavailable(problem)
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.docker_client import DockerClient

    # The reaper is an image pulled from a registry; the fixtures remove what they start.
    testcontainers_config.ryuk_disabled = True
    client = None
    try:
        client = DockerClient()
        client.client.ping()
    except Exception as exc:
        if client is not None:
            client.client.close()
        unavailable(f"no Docker engine answers: {type(exc).__name__}: {exc}".splitlines()[0])
    assert client is not None
    yield client
    client.client.close()


@pytest.fixture(scope="session")
def project_images(docker_client: Any) -> ProjectImages:
    """The repo-reader and NATS images; absent ones skip (or fail in CI)."""
    images = ProjectImages(
        repo_reader=image_name("REPO_READER_IMAGE", "repo-reader:latest"),
        nats=image_name("REPO_READER_NATS_IMAGE", "repo-reader/nats:latest"),
    )
    for name in (images.repo_reader, images.nats):
        try:
            docker_client.client.images.get(name)
        except Exception:
            unavailable(f"image {name} not built: run sandbox/build-images.sh")
    return images
