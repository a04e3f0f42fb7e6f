"""Tests of sandbox/nats.conf on a real nats-server: who may publish and subscribe to what."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess

import pytest
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import NoStreamResponseError

from contracts.subjects import ADMIN_SUBJECTS, QUEUE_GROUP, WORKER_SUBJECTS, Subject
from tests.sandbox.conftest import RoleServer
from tests.sandbox.roles import (
    NATS_CONF,
    RoleConnection,
    new_passwords,
    password_environment,
    request_when_served,
)
from worker.service.embedded_nats import nats_server_binary


def connect(server: RoleServer, role: str) -> RoleConnection:
    """A connection as `role` with its password."""
    return RoleConnection(server.url, role, server.passwords[role])


def serving_role(subject: str) -> str:
    """The role that serves `subject`: the mirror for admin subjects, else a worker."""
    return "mirror" if subject in {s.value for s in ADMIN_SUBJECTS} else "worker"


async def orchestrator_request_is_answered(server: RoleServer, subject: str) -> bytes:
    """The orchestrator's request on `subject`, answered by the role that serves it."""
    async with (
        connect(server, serving_role(subject)) as worker,
        connect(server, "orchestrator") as caller,
    ):

        async def answer(msg: Msg) -> None:
            await msg.respond(b"answer to " + msg.data)

        await worker.nc.subscribe(subject, queue=QUEUE_GROUP, cb=answer)
        reply = await request_when_served(caller.nc, subject, b"question")
        assert worker.errors == caller.errors == []
        return reply.data


async def synthesis_request_is_refused(server: RoleServer, subject: str) -> str:
    """The synthesis agent's request on `subject`: the violation, and that none arrived."""
    received: list[bytes] = []
    async with (
        connect(server, serving_role(subject)) as worker,
        connect(server, "synthesis") as synthesis,
    ):

        async def record(msg: Msg) -> None:
            received.append(msg.data)

        await worker.nc.subscribe(subject, queue=QUEUE_GROUP, cb=record)
        await worker.settled()
        async with synthesis.refused() as refusal:
            with pytest.raises((NatsTimeoutError, NoRespondersError)):
                await synthesis.nc.request(subject, b"question", timeout=0.5)
        await worker.settled()
        assert received == []
        return refusal.message


def test_config_is_valid() -> None:
    """`nats-server -t` accepts the config once the password variables are set."""
    result = subprocess.run(
        [str(nats_server_binary()), "-c", str(NATS_CONF), "-t"],
        env={**os.environ, **password_environment(new_passwords())},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_config_without_passwords_is_refused() -> None:
    """A missing password variable stops the server instead of leaving a user open."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPO_READER_NATS_")}
    result = subprocess.run(
        [str(nats_server_binary()), "-c", str(NATS_CONF), "-t"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "REPO_READER_NATS_ORCHESTRATOR_PASSWORD" in result.stderr + result.stdout


@pytest.mark.parametrize("subject", list(Subject))
def test_orchestrator_may_request_every_subject(role_server: RoleServer, subject: Subject) -> None:
    """The orchestrator may request every repo_reader.v1 subject and gets the answer."""
    reply = asyncio.run(orchestrator_request_is_answered(role_server, subject.value))
    assert reply == b"answer to question"


@pytest.mark.parametrize("subject", list(Subject))
def test_synthesis_agent_may_not_request_any_subject(
    role_server: RoleServer, subject: Subject
) -> None:
    """Seed 001: the synthesis agent cannot invoke the Repo Reader on any subject."""
    violation = asyncio.run(synthesis_request_is_refused(role_server, subject.value))
    assert f'publish to "{subject.value}"' in violation.lower()


@pytest.mark.parametrize("subject", ["repo_reader.>", "repo_reader.v1.research", "$JS.API.>"])
def test_synthesis_agent_may_not_listen(role_server: RoleServer, subject: str) -> None:
    """The synthesis agent can neither watch requests nor reach JetStream."""

    async def scenario() -> str:
        async with connect(role_server, "synthesis") as synthesis:
            async with synthesis.refused() as refusal:
                await synthesis.nc.subscribe(subject)
            return refusal.message

    assert f'subscription to "{subject.lower()}"' in asyncio.run(scenario()).lower()


def test_synthesis_agent_may_not_touch_rate_limit_counters(role_server: RoleServer) -> None:
    """The synthesis agent cannot write the workers' KV bucket directly."""

    async def scenario() -> str:
        async with connect(role_server, "synthesis") as synthesis:
            async with synthesis.refused() as refusal:
                await synthesis.nc.publish("$KV.repo_reader_rate.orchestrator", b"0")
            return refusal.message

    assert '"$kv.repo_reader_rate.orchestrator"' in asyncio.run(scenario()).lower()


def test_orchestrator_may_not_impersonate_a_worker(role_server: RoleServer) -> None:
    """The orchestrator cannot subscribe to request subjects and answer in a worker's place."""

    async def scenario() -> str:
        async with connect(role_server, "orchestrator") as caller:
            async with caller.refused() as refusal:
                await caller.nc.subscribe(Subject.RESEARCH.value, queue=QUEUE_GROUP)
            return refusal.message

    assert "subscription" in asyncio.run(scenario()).lower()


@pytest.mark.parametrize(
    ("role", "allowed", "refused"),
    [
        ("worker", WORKER_SUBJECTS, ADMIN_SUBJECTS),
        ("mirror", ADMIN_SUBJECTS, WORKER_SUBJECTS),
    ],
)
def test_servers_subscribe_only_to_their_subjects(
    role_server: RoleServer,
    role: str,
    allowed: tuple[Subject, ...],
    refused: tuple[Subject, ...],
) -> None:
    """Workers serve the capability subjects, the mirror the admin ones, neither the other's."""

    async def scenario() -> list[str]:
        async with connect(role_server, role) as server:
            refusals = []
            for subject in refused:
                async with server.refused() as refusal:
                    await server.nc.subscribe(subject.value, queue=QUEUE_GROUP)
                refusals.append(refusal.message)
            for subject in allowed:
                await server.nc.subscribe(subject.value, queue=QUEUE_GROUP)
            # A later refusal proves the server has processed every allowed SUB before it.
            async with server.refused():
                await server.nc.subscribe("repo_reader.v2.probe")
            assert len(server.violations()) == len(refused) + 1
            return refusals

    refusals = asyncio.run(scenario())
    assert len(refusals) == len(refused)
    for subject, refusal in zip(refused, refusals, strict=True):
        assert subject.value in refusal


def test_worker_may_not_call_other_workers(role_server: RoleServer) -> None:
    """A worker may reply to requests but not publish requests of its own."""

    async def scenario() -> str:
        async with connect(role_server, "worker") as worker:
            async with worker.refused() as refusal:
                await worker.nc.publish(Subject.RESEARCH.value, b"question")
            return refusal.message

    assert Subject.RESEARCH.value in asyncio.run(scenario())


def test_worker_answers_service_discovery(role_server: RoleServer) -> None:
    """nats micro discovery: the orchestrator pings $SRV.PING and a worker answers."""

    async def scenario() -> bytes:
        async with (
            connect(role_server, "worker") as worker,
            connect(role_server, "orchestrator") as caller,
        ):

            async def pong(msg: Msg) -> None:
                await msg.respond(b'{"name": "repo_reader"}')

            await worker.nc.subscribe("$SRV.PING.repo_reader", cb=pong)
            reply = await request_when_served(caller.nc, "$SRV.PING.repo_reader", b"")
            assert worker.errors == caller.errors == []
            return reply.data

    assert asyncio.run(scenario()) == b'{"name": "repo_reader"}'


def test_worker_shares_counters_in_its_kv_bucket(role_server: RoleServer) -> None:
    """Workers create and update the repo_reader_rate KV bucket over JetStream."""

    async def scenario() -> bytes:
        async with connect(role_server, "worker") as first, connect(role_server, "worker") as other:
            bucket = await first.nc.jetstream().create_key_value(bucket="repo_reader_rate")
            revision = await bucket.put("orchestrator", b"1")
            await bucket.update("orchestrator", b"2", last=revision)
            seen = await (await other.nc.jetstream().key_value("repo_reader_rate")).get(
                "orchestrator"
            )
            assert first.errors == other.errors == []
            assert seen.value is not None
            return seen.value

    assert asyncio.run(scenario()) == b"2"


def test_worker_may_not_write_other_kv_buckets(role_server: RoleServer) -> None:
    """Outside repo_reader_rate a worker's KV writes are refused."""

    async def scenario() -> str:
        async with connect(role_server, "worker") as worker:
            bucket = await worker.nc.jetstream(timeout=0.5).create_key_value(bucket="other")
            async with worker.refused() as refusal:
                with pytest.raises((NatsTimeoutError, NoStreamResponseError)):
                    await bucket.put("key", b"1")
            return refusal.message

    assert '"$kv.other.key"' in asyncio.run(scenario()).lower()


def raw_connect(url: str, credentials: dict[str, str]) -> str:
    """The server's first answer to a protocol-level CONNECT (and PING) with `credentials`."""
    host, _, port = url.removeprefix("nats://").rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        stream = sock.makefile("rwb")
        assert stream.readline().startswith(b"INFO ")
        connect_options = {"verbose": False, "pedantic": False, **credentials}
        stream.write(b"CONNECT " + json.dumps(connect_options).encode() + b"\r\nPING\r\n")
        stream.flush()
        answer = stream.readline().decode().strip()
        stream.close()
        return answer


@pytest.mark.parametrize(
    "credentials",
    [{}, {"user": "worker", "pass": "wrong-password"}, {"user": "nobody", "pass": "x"}],
)
def test_unknown_clients_are_rejected(role_server: RoleServer, credentials: dict[str, str]) -> None:
    """Anonymous connections, wrong passwords and unknown users do not get in."""
    assert raw_connect(role_server.url, credentials) == "-ERR 'Authorization Violation'"


def test_known_client_gets_in_at_protocol_level(role_server: RoleServer) -> None:
    """The same exchange with a role's real password is answered with PONG."""
    credentials = {"user": "orchestrator", "pass": role_server.passwords["orchestrator"]}
    assert raw_connect(role_server.url, credentials) == "PONG"
