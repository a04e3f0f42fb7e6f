"""The README's container stack, run as written: its "Run the stack" and "Ask from the host"
blocks, in one shell, in this checkout, against the built images.

Two things differ from a reader's terminal, neither in a line: the compose project gets a
name of its own (COMPOSE_PROJECT_NAME), so the run stays apart from any stack already up
here, and as root `sudo` runs its command directly when no sudo is installed. What the
blocks make under sandbox/.build (the bare clone, the config) is removed afterwards, and
anything of the same name that was there before is put back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.conftest import COMPOSE_ENV, ProjectImages, unavailable
from tests.sandbox.roles import PROJECT_ROOT

pytestmark = [pytest.mark.container, pytest.mark.slow]

README = PROJECT_ROOT / "README.md"
MADE = ("sandbox/.build/sources", "sandbox/.build/repo-reader.toml")
"""What the blocks make, relative to the checkout."""


def stack_lines() -> list[str]:
    """The shell lines of the README's two blocks that run and ask the stack, continued lines
    joined."""
    text = README.read_text().split("Run the stack.", 1)[1].split("`docker compose --profile", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    assert len(blocks) == 2, "the README's stack and ask blocks moved"
    return [line for block in blocks for line in block.replace("\\\n", " ").splitlines() if line]


@pytest.fixture
def made_aside(tmp_path: Path) -> Iterator[None]:
    """Moves what the blocks make out of the way first, and puts it back after."""
    kept = tmp_path / "kept"
    for relative in MADE:
        if (PROJECT_ROOT / relative).exists():
            (kept / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(PROJECT_ROOT / relative, kept / relative)
    yield
    for relative in MADE:
        made = PROJECT_ROOT / relative
        if made.is_dir():
            shutil.rmtree(made)
        else:
            made.unlink(missing_ok=True)
        if (kept / relative).exists():
            shutil.move(kept / relative, made)


def test_the_readme_runs_the_stack_and_answers_from_it(
    project_images: ProjectImages, docker_client: Any, made_aside: None, tmp_path: Path
) -> None:
    """The lines start NATS, the mirror and two workers on this very repository, the
    orchestrator's question gets an answer citing the sandbox's posture check, and the last
    line takes everything down."""
    if not COMPOSE_ENV.is_file():
        unavailable(f"no {COMPOSE_ENV}: run sandbox/build-images.sh")
    if os.geteuid() != 0:
        pytest.skip("the README's stack block changes owners with sudo; run as root")
    env = {**os.environ, "COMPOSE_PROJECT_NAME": f"rr-readme-{uuid.uuid4().hex[:8]}"}
    if shutil.which("sudo") is None:
        shim = tmp_path / "bin" / "sudo"
        shim.parent.mkdir()
        shim.write_text('#!/bin/sh\nexec "$@"\n')
        shim.chmod(0o755)
        env["PATH"] = f"{shim.parent}{os.pathsep}{env['PATH']}"
    for name in ("REPO_READER_CONFIG", "REPO_READER_NATS_USER", "REPO_READER_NATS_PASSWORD"):
        env.pop(name, None)
    down = "docker compose --env-file sandbox/.build/compose.env down --volumes"
    script = "\n".join(["set -euo pipefail", f"trap '{down} >/dev/null 2>&1' EXIT", *stack_lines()])
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(
        r"^# local/repo-reader @ [0-9a-f]{40} .* license=Apache-2.0$", done.stdout, re.M
    )
    assert "sandbox/posture.py" in done.stdout
    project = env["COMPOSE_PROJECT_NAME"]
    left = docker_client.client.containers.list(
        all=True, filters={"label": f"com.docker.compose.project={project}"}
    )
    assert left == []
