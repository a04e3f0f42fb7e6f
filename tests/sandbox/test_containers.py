"""Tests of the project's images on a Docker engine: NATS roles, and the posture check inside.

They inspect (routes, mounts, capabilities) and talk only to their own containers.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contracts.subjects import QUEUE_GROUP, Subject
from tests.sandbox.conftest import ProjectImages
from tests.sandbox.probes import posture_rules
from tests.sandbox.roles import (
    NATS_CONF,
    RoleConnection,
    new_passwords,
    password_environment,
    request_when_served,
)

pytestmark = pytest.mark.container

CONFINED: dict[str, Any] = {
    "read_only": True,
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges:true"],
    "user": "10001:10001",
    "mem_limit": "512m",
    "pids_limit": 128,
}
ALL_RULES = {
    "root-filesystem-writable",
    "cache-writable",
    "running-as-root",
    "capabilities-effective",
    "default-route-present",
}


def container(image: str) -> Any:
    """A testcontainers container of `image` (imported late: only with an engine)."""
    from testcontainers.core.container import DockerContainer

    return DockerContainer(image)


def wait_until(predicate: Any, what: str, timeout: float = 30.0) -> None:
    """Poll `predicate` until true, else fail naming `what`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def run_to_exit(started: Any) -> tuple[int, str]:
    """Exit code and output of a started one-shot container."""
    code = int(started.wait())
    out, err = started.get_logs()
    return code, (out + err).decode()


@pytest.fixture
def nats_container(project_images: ProjectImages) -> Iterator[tuple[Any, dict[str, str]]]:
    """The NATS image with sandbox/nats.conf, confined like compose runs it."""
    passwords = new_passwords()
    nats = (
        container(project_images.nats)
        .with_command(["--config", "/etc/nats/nats.conf", "--store_dir", "/data/jetstream"])
        .with_volume_mapping(str(NATS_CONF), "/etc/nats/nats.conf", "ro")
        .with_envs(**password_environment(passwords))
        .with_exposed_ports(4222)
        # testcontainers passes this string as the tmpfs mount's options.
        .with_tmpfs_mount("/data", "size=64m,uid=10002,gid=10002,mode=0700")
        .with_kwargs(read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges:true"])
    )
    with nats as started:
        host, port = started.get_container_host_ip(), int(started.get_exposed_port(4222))

        def answers_info() -> bool:
            try:
                with socket.create_connection((host, port), timeout=1) as sock:
                    return sock.recv(5) == b"INFO "
            except OSError:
                return False

        wait_until(answers_info, "the NATS container to accept clients")
        yield started, {"url": f"nats://{host}:{port}", **passwords}


def test_nats_image_health_check_passes(nats_container: tuple[Any, dict[str, str]]) -> None:
    """The compose health check (wget on /healthz with JetStream) succeeds in the NATS image."""
    started, _ = nats_container
    probe = ["wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8222/healthz?js-enabled-only=true"]
    wait_until(lambda: started.exec(probe).exit_code == 0, "the NATS health check")


def test_nats_container_lets_orchestrator_in_and_keeps_synthesis_out(
    nats_container: tuple[Any, dict[str, str]],
) -> None:
    """In the container, the orchestrator's research request is answered; the synthesis
    agent's is refused as a permissions violation and never reaches a worker."""
    _, stack = nats_container
    url, subject = stack["url"], Subject.RESEARCH.value

    async def scenario() -> tuple[bytes, str, list[bytes]]:
        received: list[bytes] = []
        async with (
            RoleConnection(url, "worker", stack["worker"]) as worker,
            RoleConnection(url, "orchestrator", stack["orchestrator"]) as caller,
            RoleConnection(url, "synthesis", stack["synthesis"]) as synthesis,
        ):

            async def answer(msg: Any) -> None:
                received.append(msg.data)
                await msg.respond(b"answer to " + msg.data)

            await worker.nc.subscribe(subject, queue=QUEUE_GROUP, cb=answer)
            reply = await request_when_served(caller.nc, subject, b"orchestrator")
            async with synthesis.refused() as refusal:
                await synthesis.nc.publish(subject, b"synthesis")
            await worker.settled()
            return reply.data, refusal.message, received

    reply, refusal, received = asyncio.run(scenario())
    assert reply == b"answer to orchestrator"
    assert f'publish to "{subject}"' in refusal.lower()
    assert received == [b"orchestrator"]


@pytest.fixture
def internal_network() -> Iterator[Any]:
    """A Docker network with `internal: true`, as compose makes for the workers."""
    from testcontainers.core.network import Network

    with Network(docker_network_kw={"internal": True}) as network:
        yield network


@pytest.fixture
def netns_guard(project_images: ProjectImages, internal_network: Any) -> Iterator[Any]:
    """The worker-netns container of compose.yaml, ready (default routes gone)."""
    guard = (
        container(project_images.repo_reader)
        .with_network(internal_network)
        .with_command(["--ready-file", "/tmp/netns-guard.ready"])
        .with_tmpfs_mount("/tmp", "size=1m,mode=1777")
        .with_kwargs(
            entrypoint=["python", "-m", "sandbox.netns_guard"],
            user="0:0",
            read_only=True,
            cap_drop=["ALL"],
            cap_add=["NET_ADMIN", "SETUID", "SETGID"],
            security_opt=["no-new-privileges:true"],
        )
    )
    with guard as started:
        ready = ["test", "-f", "/tmp/netns-guard.ready"]
        wait_until(lambda: started.exec(ready).exit_code == 0, "the netns guard")
        yield started


def test_network_is_internal(docker_client: Any, internal_network: Any, netns_guard: Any) -> None:
    """The workers' network is internal, and its only member here is the guard."""
    attrs = docker_client.client.networks.get(internal_network.name).attrs
    assert attrs["Internal"] is True
    assert list(attrs["Containers"]) == [netns_guard.get_wrapped_container().id]


def test_confined_worker_container_violates_no_rule(
    project_images: ProjectImages, netns_guard: Any, tmp_path: Path
) -> None:
    """Run as compose runs a worker, the posture check inside finds no violation."""
    worker = (
        container(project_images.repo_reader)
        .with_command(["-m", "sandbox.posture", "--cache", "/cache"])
        .with_volume_mapping(str(tmp_path), "/cache", "ro")
        .with_tmpfs_mount("/tmp", "size=16m,mode=1777")
        .with_kwargs(
            entrypoint=["python"],
            network_mode=f"container:{netns_guard.get_wrapped_container().id}",
            **CONFINED,
        )
    )
    with worker as started:
        code, output = run_to_exit(started)
    assert (code, posture_rules(output)) == (0, set()), output
    assert '"detail": "no violation"' in output


def test_default_docker_run_as_root_violates_every_rule(project_images: ProjectImages) -> None:
    """A plain `docker run --user 0` (writable, capabilities, bridge network) breaks all five."""
    plain = (
        container(project_images.repo_reader)
        .with_command(["-m", "sandbox.posture", "--cache", "/cache"])
        .with_kwargs(entrypoint=["python"], user="0:0")
    )
    with plain as started:
        code, output = run_to_exit(started)
    assert code == 1, output
    assert posture_rules(output) == ALL_RULES


def test_image_default_command_refuses_an_unconfined_run(project_images: ProjectImages) -> None:
    """`repo-reader serve --require-sandbox` (the image's default) stops, naming the rules."""
    plain = container(project_images.repo_reader).with_env("REPO_READER_NATS_URL", "nats://x:1")
    with plain as started:
        code, output = run_to_exit(started)
    assert code != 0, output
    for rule in ("root-filesystem-writable", "cache-writable", "default-route-present"):
        assert rule in output
    assert "running-as-root" not in output  # the image's user is 10001


def test_image_runs_as_unprivileged_user_without_pip(project_images: ProjectImages) -> None:
    """The image's user is 10001 and nothing in it can install packages."""
    probe = (
        "import importlib.util, os; "
        "print(os.getuid(), os.getgid(), importlib.util.find_spec('pip') is None)"
    )
    run = (
        container(project_images.repo_reader)
        .with_command(["-c", probe])
        .with_kwargs(entrypoint=["python"])
    )
    with run as started:
        code, output = run_to_exit(started)
    assert (code, output.strip()) == (0, "10001 10001 True")
