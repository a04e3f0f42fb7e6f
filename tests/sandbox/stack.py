"""The project's compose stack under a throwaway project name, driven with `docker compose`."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.sandbox.conftest import unavailable
from tests.sandbox.roles import PROJECT_ROOT, password_environment

COMPOSE_FILE = PROJECT_ROOT / "compose.yaml"
APP_UID = 10001  # the image's user (Containerfile APP_UID)


def compose_command() -> list[str]:
    """`docker compose`, when the CLI and its Compose v2 plugin are installed."""
    docker = shutil.which("docker")
    if docker is None:
        unavailable("no docker CLI for `docker compose`")
    assert docker is not None
    version = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, check=False, timeout=30
    )
    if version.returncode != 0:
        unavailable("no Docker Compose v2 plugin (sandbox/install-docker.sh installs it)")
    return [docker, "compose"]


def compose_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without REPO_READER_*/COMPOSE_* (they would override
    the env file), plus `extra`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("REPO_READER_", "COMPOSE_"))
    }
    return env | dict(extra or {})


class StackError(AssertionError):
    """A compose command failed; the message carries its output."""


@dataclass(frozen=True, kw_only=True)
class StackSettings:
    """What a compose project of the stack is made of: images, passwords, host paths."""

    repo_reader_image: str
    nats_image: str
    passwords: dict[str, str]
    config: Path
    sources: Path
    secrets: Path

    def env_file_text(self, *, config: Path | None = None) -> str:
        """The `--env-file` contents; `config` replaces the repo-reader.toml mounted."""
        values = {
            "REPO_READER_IMAGE": self.repo_reader_image,
            "REPO_READER_NATS_IMAGE": self.nats_image,
            "REPO_READER_CONFIG": str(config or self.config),
            "REPO_READER_SOURCES": str(self.sources),
            "REPO_READER_SECRETS": str(self.secrets),
            **password_environment(self.passwords),
        }
        return "".join(f"{key}={value}\n" for key, value in values.items())


class ComposeStack:
    """One compose project of compose.yaml, under a unique name, with its own env file."""

    def __init__(self, settings: StackSettings, workdir: Path) -> None:
        self.settings = settings
        self.project = f"repo-reader-test-{uuid.uuid4().hex[:10]}"
        self.workdir = workdir
        self.env_file = workdir / "compose.env"
        self.env_file.write_text(settings.env_file_text())
        self.env_file.chmod(0o600)
        self._compose = compose_command()

    def command(self, *args: str, env_file: Path | None = None) -> list[str]:
        """A `docker compose` command line for this project."""
        return [
            *self._compose,
            "--project-name", self.project,
            "--project-directory", str(PROJECT_ROOT),
            "--file", str(COMPOSE_FILE),
            "--env-file", str(env_file or self.env_file),
            *args,
        ]  # fmt: skip

    def run(
        self, *args: str, env_file: Path | None = None, check: bool = True, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        """Run a compose command; with `check`, a failure raises StackError with its output."""
        result = subprocess.run(
            self.command(*args, env_file=env_file),
            capture_output=True,
            text=True,
            env=compose_environment(),
            check=False,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise StackError(
                f"docker compose {' '.join(args)} exited {result.returncode}:\n"
                f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
            )
        return result

    def up(self) -> None:
        """Start everything and wait for health; never builds or pulls (images are local)."""
        try:
            self.run("up", "--detach", "--wait", "--wait-timeout", "150", "--no-build",
                     "--pull", "never", timeout=240)  # fmt: skip
        except StackError as exc:
            logs = self.run("logs", "--no-color", "--tail", "40", check=False)
            raise StackError(f"{exc}\n--- logs ---\n{logs.stdout[-6000:]}") from None

    def down(self) -> None:
        """Remove the project's containers, networks and volumes."""
        self.run("down", "--volumes", "--remove-orphans", "--timeout", "10", check=False)

    def nats_url(self) -> str:
        """The URL of NATS as published on the host's loopback."""
        address = self.run("port", "nats", "4222").stdout.strip()
        return f"nats://{address}"

    def containers(self, docker: Any, service: str) -> list[Any]:
        """The service's containers (docker-py objects, running or not) in replica order;
        one-off `compose run` containers are left out."""
        labels = [
            f"com.docker.compose.project={self.project}",
            f"com.docker.compose.service={service}",
            "com.docker.compose.oneoff=False",
        ]
        found = docker.containers.list(all=True, filters={"label": labels})
        return sorted(found, key=lambda c: int(c.labels["com.docker.compose.container-number"]))


def chown_tree(path: Path, uid: int, gid: int, *, image: str) -> None:
    """Give `path` and everything under it to uid:gid (as root here, else in a container)."""
    if os.geteuid() == 0:
        for directory, dirnames, filenames in os.walk(path):
            os.chown(directory, uid, gid)
            for name in (*dirnames, *filenames):
                os.chown(os.path.join(directory, name), uid, gid, follow_symlinks=False)
        return
    subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--user", "0:0",
         "--volume", f"{path}:/target", "--entrypoint", "chown", image,
         "-R", f"{uid}:{gid}", "/target"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def wait_for(predicate: Any, what: str, timeout: float = 60.0, interval: float = 0.25) -> None:
    """Poll `predicate` until true, else fail naming `what`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def exec_in(container: Any, command: Sequence[str]) -> tuple[int, str]:
    """Exit code and output of `command` run inside a running container (`docker exec`)."""
    result = container.exec_run(list(command), demux=False)
    return int(result.exit_code), (result.output or b"").decode()
