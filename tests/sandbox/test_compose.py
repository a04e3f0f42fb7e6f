"""Tests of compose.yaml as Compose resolves it: confinement, mounts, networks, ordering.

Only `docker compose config` runs (no engine needed); without the compose plugin they
skip, or fail when REPO_READER_REQUIRE_DOCKER=1.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.sandbox.roles import PROJECT_ROOT, new_passwords, password_environment
from tests.sandbox.stack import compose_command, compose_environment

pytestmark = pytest.mark.container

CONFINED_SERVICES = ("worker", "mirror", "nats-setup")


def compose_config(extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`docker compose config --format json` of the project, with fresh passwords set."""
    env = compose_environment(password_environment(new_passwords()) | (extra_env or {}))
    project = ["--project-directory", str(PROJECT_ROOT)]
    return subprocess.run(
        [*compose_command(), *project, "config", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


@pytest.fixture(scope="module")
def stack() -> dict[str, Any]:
    """The resolved compose project."""
    result = compose_config()
    assert result.returncode == 0, result.stderr
    resolved: dict[str, Any] = json.loads(result.stdout)
    return resolved


def volume_mounts(service: dict[str, Any], target: str) -> list[dict[str, Any]]:
    """The mounts of `service` at `target`."""
    return [v for v in service.get("volumes", []) if v["target"] == target]


@pytest.mark.parametrize("service", CONFINED_SERVICES)
def test_repo_reader_services_are_confined(stack: dict[str, Any], service: str) -> None:
    """Worker and mirror: read-only root, no capabilities, no privilege gain, uid 10001, limits."""
    spec = stack["services"][service]
    assert spec["read_only"] is True
    assert spec["cap_drop"] == ["ALL"]
    assert "cap_add" not in spec
    assert spec["security_opt"] == ["no-new-privileges:true"]
    assert spec["user"] == "10001:10001"
    assert int(spec["mem_limit"]) > 0
    assert spec["pids_limit"] > 0
    assert all(t.startswith("/tmp:") for t in spec["tmpfs"])


def test_two_workers_on_the_internal_network_only(stack: dict[str, Any]) -> None:
    """Two workers share the guard's namespace, which is attached to the internal network only."""
    worker, guard = stack["services"]["worker"], stack["services"]["worker-netns"]
    assert worker["deploy"]["replicas"] == 2
    assert worker["network_mode"] == "service:worker-netns"
    assert list(guard["networks"]) == ["internal"]
    assert stack["networks"]["internal"]["internal"] is True
    assert "internal" in stack["services"]["nats"]["networks"]


def test_only_the_mirror_can_write_the_cache(stack: dict[str, Any]) -> None:
    """The cache volume is read-write in the mirror and read-only everywhere else."""
    writable = []
    for name, spec in stack["services"].items():
        for mount in volume_mounts(spec, "/cache"):
            assert mount["source"] == "cache"
            if not mount.get("read_only", False):
                writable.append(name)
    assert writable == ["mirror"]
    assert volume_mounts(stack["services"]["worker"], "/cache")[0]["read_only"] is True


def test_workers_wait_for_mirror_nats_and_guard(stack: dict[str, Any]) -> None:
    """Workers start after mirror and provisioning succeeded, NATS and the guard are healthy."""
    depends = stack["services"]["worker"]["depends_on"]
    assert depends["mirror"]["condition"] == "service_completed_successfully"
    assert depends["nats-setup"]["condition"] == "service_completed_successfully"
    assert depends["nats"]["condition"] == "service_healthy"
    assert depends["worker-netns"]["condition"] == "service_healthy"
    assert stack["services"]["mirror"]["restart"] == "no"


def test_every_long_running_service_has_a_health_check(stack: dict[str, Any]) -> None:
    """NATS, the guard and the workers each declare a health check."""
    for name in ("nats", "worker-netns", "worker"):
        assert stack["services"][name]["healthcheck"]["test"][0] == "CMD", name
    ready = stack["services"]["worker"]["healthcheck"]["test"][-1]
    assert ready in stack["services"]["worker"]["command"]


def test_guard_holds_only_the_capabilities_it_needs(stack: dict[str, Any]) -> None:
    """The netns guard drops everything but NET_ADMIN, SETUID and SETGID."""
    guard = stack["services"]["worker-netns"]
    assert guard["cap_drop"] == ["ALL"]
    assert sorted(guard["cap_add"]) == ["NET_ADMIN", "SETGID", "SETUID"]
    assert guard["read_only"] is True


def test_worker_credentials_come_from_a_secret_file(stack: dict[str, Any]) -> None:
    """The worker reads its NATS password from a mounted secret, not from its environment."""
    worker = stack["services"]["worker"]
    assert worker["environment"]["REPO_READER_NATS_USER"] == "worker"
    assert "REPO_READER_NATS_PASSWORD" not in worker["environment"]
    (secret,) = worker["secrets"]
    assert worker["environment"]["REPO_READER_NATS_PASSWORD_FILE"] == secret["target"]
    assert "file" in stack["secrets"][secret["source"]]


def test_jetstream_is_provisioned_once_as_the_provisioner(stack: dict[str, Any]) -> None:
    """Only nats-setup, a one-shot on the internal network, runs provision as the provisioner."""
    setup = stack["services"]["nats-setup"]
    assert setup["command"] == ["provision"]
    assert setup["environment"]["REPO_READER_NATS_USER"] == "provisioner"
    assert list(setup["networks"]) == ["internal"]
    assert setup["restart"] == "no"
    assert setup["depends_on"]["nats"]["condition"] == "service_healthy"
    holders = [
        name
        for name, spec in stack["services"].items()
        if (spec.get("environment") or {}).get("REPO_READER_NATS_USER") == "provisioner"
    ]
    assert holders == ["nats-setup"]


def test_nats_is_published_on_loopback_only(stack: dict[str, Any]) -> None:
    """The host reaches NATS on 127.0.0.1 only."""
    (port,) = stack["services"]["nats"]["ports"]
    assert (port["host_ip"], port["target"]) == ("127.0.0.1", 4222)


def test_missing_password_stops_compose() -> None:
    """Without the NATS passwords compose refuses to resolve the project."""
    result = compose_config({"REPO_READER_NATS_WORKER_PASSWORD": ""})
    assert result.returncode != 0
    assert "REPO_READER_NATS_WORKER_PASSWORD" in result.stderr
