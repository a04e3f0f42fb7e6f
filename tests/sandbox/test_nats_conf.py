"""Tests of sandbox/nats.conf on a real nats-server: each role may do its job and nothing else.

Every refusal is the server's own permissions violation, reported to the connection that
tried; what exists in JetStream afterwards is read from the server's monitoring endpoint,
which no NATS user can reach.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StreamConfig

from contracts.admin import SyncRequest, SyncResponse
from contracts.code import (
    CodeListRequest,
    CodeListResponse,
    CodeReadRequest,
    CodeReadResponse,
    CodeSearchRequest,
    CodeSearchResponse,
)
from contracts.docs import DocsRegenerateRequest, DocsRegenerateResponse
from contracts.repo import RepoStatusRequest, RepoStatusResponse
from contracts.research import RepoReaderRequest, RepoReaderResponse
from contracts.subjects import (
    MIRROR_SUBJECTS,
    QUEUE_GROUP,
    REQUEST_STREAM,
    WORKER_CONSUMER,
    WORKER_SUBJECTS,
    Subject,
    inbox_prefix_for,
)
from tests.sandbox.conftest import RoleServer
from tests.sandbox.roles import (
    NATS_CONF,
    PROJECT_ROOT,
    ROLES,
    RoleConnection,
    jetstream_inventory,
    new_passwords,
    password_environment,
    request_when_served,
)
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.workers import MirrorProcess, WorkerProcess
from worker.client import RepoReaderClient
from worker.config import parse_config
from worker.errors import AccessDenied, ConfigError, RateLimited
from worker.mirror.service import MIRROR_QUEUE_GROUP
from worker.service.admission import BUCKET, RateLimiter
from worker.service.embedded_nats import nats_server_binary
from worker.service.provision import provision
from worker.service.replay import recorded_requests

BUCKET_STREAM = f"KV_{BUCKET}"


def connect(server: RoleServer, role: str) -> RoleConnection:
    """A connection as `role` with its password."""
    return RoleConnection(server.url, role, server.passwords[role])


def inbox(role: str) -> str:
    """Every inbox subject of `role`."""
    return f"{inbox_prefix_for(role)}.>"


def serving(subject: str) -> tuple[str, str]:
    """The role that serves `subject` and its queue group: the mirror for its own subjects."""
    if subject in {s.value for s in MIRROR_SUBJECTS}:
        return "mirror", MIRROR_QUEUE_GROUP
    return "worker", QUEUE_GROUP


@dataclass(frozen=True)
class Sub:
    """Subscribing to `subject`, in `queue` when given."""

    subject: str
    queue: str = ""

    async def attempt(self, connection: RoleConnection) -> None:
        await connection.nc.subscribe(self.subject, queue=self.queue)

    def violation(self) -> str:
        """How the server names the refusal (as nats-py reports it, in lower case)."""
        queue = f' using queue "{self.queue}"' if self.queue else ""
        return f'nats: permissions violation for subscription to "{self.subject}"{queue}'.lower()


@dataclass(frozen=True)
class Pub:
    """Publishing a message on `subject`."""

    subject: str

    async def attempt(self, connection: RoleConnection) -> None:
        await connection.nc.publish(self.subject, b"probe")

    def violation(self) -> str:
        """How the server names the refusal (as nats-py reports it, in lower case)."""
        return f'nats: permissions violation for publish to "{self.subject}"'.lower()


Action = Sub | Pub

# What each role must be refused: wildcards and inboxes that carry others' answers, the
# subjects of other roles, and every JetStream operation but using its own resources.
REFUSED: dict[str, tuple[Action, ...]] = {
    "orchestrator": (
        Sub(">"),
        Sub("_INBOX.>"),
        Sub(inbox("synthesis")),
        Sub(inbox("worker")),
        Sub(Subject.RESEARCH.value, QUEUE_GROUP),  # answering in a worker's place
        Sub(Subject.RESEARCH.value),
        Sub(Subject.DOCS_REGENERATE.value, MIRROR_QUEUE_GROUP),  # in the engine's place
        Sub("synthesis.>"),
        Sub("$JS.API.>"),
        Sub(f"$KV.{BUCKET}.>"),
        Pub("repo_reader.v2.research"),
        Pub("synthesis.task"),
        Pub(f"{inbox_prefix_for('synthesis')}.forged"),
        Pub("$JS.API.STREAM.NAMES"),
        Pub(f"$JS.API.STREAM.DELETE.{BUCKET_STREAM}"),
        Pub(f"$KV.{BUCKET}.research.1"),
    ),
    "synthesis": (
        Sub(">"),
        Sub("*.>"),
        Sub("_INBOX.>"),
        Sub(inbox("orchestrator")),
        Sub(f"{inbox_prefix_for('orchestrator')}.*.*"),
        Sub(inbox("worker")),
        Sub(inbox("mirror")),
        Sub("repo_reader.>"),
        Sub(Subject.RESEARCH.value, QUEUE_GROUP),
        Sub("$JS.API.>"),
        Sub("$JS.ACK.>"),
        Sub(f"$KV.{BUCKET}.>"),
        Sub("$SRV.>"),
        Pub(Subject.RESEARCH.value),
        Pub(f"{inbox_prefix_for('orchestrator')}.forged"),
        Pub("$JS.API.STREAM.NAMES"),
        Pub(f"$KV.{BUCKET}.research.1"),
        Pub("$SRV.PING"),
    ),
    "worker": (
        Sub(">"),
        Sub("_INBOX.>"),
        Sub(inbox("orchestrator")),
        Sub(Subject.RESEARCH.value),  # outside the queue group: a copy of every request
        Sub(Subject.RESEARCH.value, "spies"),
        *(Sub(s.value, QUEUE_GROUP) for s in MIRROR_SUBJECTS),
        Sub(Subject.DOCS_REGENERATE.value, MIRROR_QUEUE_GROUP),
        Sub("$SRV.PING.repo_reader_mirror"),
        Sub("$JS.API.>"),
        Sub(f"$KV.{BUCKET}.>"),
        Sub("synthesis.>"),
        Pub(Subject.RESEARCH.value),
        Pub(Subject.DOCS_REGENERATE.value),  # no worker may ask the engine to write
        # (It may publish to the orchestrator's inbox: answers to durable requests go there.)
        Pub(f"{inbox_prefix_for('synthesis')}.unsolicited"),
        Pub("synthesis.leak"),
        Pub(f"$JS.API.STREAM.CREATE.{BUCKET_STREAM}"),
        Pub(f"$JS.API.STREAM.CREATE.{REQUEST_STREAM}"),
        Pub(f"$JS.API.STREAM.UPDATE.{BUCKET_STREAM}"),
        Pub(f"$JS.API.STREAM.DELETE.{BUCKET_STREAM}"),
        Pub(f"$JS.API.STREAM.PURGE.{BUCKET_STREAM}"),
        Pub("$JS.API.STREAM.NAMES"),
        Pub(f"$JS.API.STREAM.MSG.GET.{BUCKET_STREAM}.x"),
        Pub(f"$JS.API.CONSUMER.CREATE.{REQUEST_STREAM}.SPY"),
        Pub(f"$JS.API.CONSUMER.DURABLE.CREATE.{REQUEST_STREAM}.{WORKER_CONSUMER}"),
        Pub(f"$JS.API.CONSUMER.DELETE.{REQUEST_STREAM}.{WORKER_CONSUMER}"),
        Pub(f"$JS.API.CONSUMER.MSG.NEXT.{REQUEST_STREAM}.SPY"),
        Pub("$KV.other.key"),
    ),
    "mirror": (
        Sub(">"),
        Sub("_INBOX.>"),
        Sub(inbox("orchestrator")),
        *(Sub(s.value, MIRROR_QUEUE_GROUP) for s in WORKER_SUBJECTS),
        Sub(Subject.ADMIN_SYNC.value),
        Sub(Subject.DOCS_REGENERATE.value),  # outside its queue group
        Sub("$SRV.PING.repo_reader"),
        Sub("$JS.API.>"),
        Pub(Subject.RESEARCH.value),
        Pub(Subject.DOCS_REGENERATE.value),
        Pub(f"{inbox_prefix_for('orchestrator')}.unsolicited"),
        Pub("$JS.API.INFO"),
        Pub(f"$JS.API.STREAM.CREATE.{BUCKET_STREAM}"),
        Pub(f"$JS.API.STREAM.MSG.GET.{REQUEST_STREAM}"),
        Pub(f"$JS.API.DIRECT.GET.{BUCKET_STREAM}.$KV.{BUCKET}.research.1"),
        Pub(f"$KV.{BUCKET}.research.1"),  # only docs.regenerate's budget is its to count
    ),
    "provisioner": (
        Sub(">"),
        Sub("_INBOX.>"),
        Sub(inbox("orchestrator")),
        Sub(Subject.RESEARCH.value, QUEUE_GROUP),
        Sub("$JS.API.>"),
        Pub(Subject.RESEARCH.value),
        Pub(Subject.DOCS_REGENERATE.value),
        Pub(f"{inbox_prefix_for('orchestrator')}.forged"),
        Pub("$JS.API.STREAM.CREATE.OTHER"),
        Pub(f"$JS.API.STREAM.UPDATE.{BUCKET_STREAM}"),
        Pub(f"$JS.API.STREAM.DELETE.{BUCKET_STREAM}"),
        Pub(f"$JS.API.CONSUMER.CREATE.{REQUEST_STREAM}.SPY"),
        Pub(f"$KV.{BUCKET}.research.1"),
    ),
}

# The subscriptions each role's job needs (its publications are shown at work below).
ALLOWED_SUBSCRIPTIONS: dict[str, tuple[Sub, ...]] = {
    "orchestrator": (Sub(inbox("orchestrator")),),
    "synthesis": (Sub("synthesis.>"), Sub(inbox("synthesis"))),
    "worker": (
        *(Sub(s.value, QUEUE_GROUP) for s in WORKER_SUBJECTS),
        Sub("$SRV.PING"),
        Sub("$SRV.STATS.repo_reader"),
        Sub("$SRV.INFO.repo_reader.a1b2c3"),
        Sub(inbox("worker")),
    ),
    "mirror": (
        *(Sub(s.value, MIRROR_QUEUE_GROUP) for s in MIRROR_SUBJECTS),
        Sub("$SRV.PING"),
        Sub("$SRV.PING.repo_reader_mirror"),
        Sub(inbox("mirror")),  # replies to its rate-limit bucket requests
    ),
    "provisioner": (Sub(inbox("provisioner")),),
}

SENTINEL = Pub("repo_reader.v2.probe")
"""Refused to every role: its violation, arriving after the allowed subscriptions, proves the
server processed them without one."""


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


@pytest.mark.parametrize("role", ROLES)
def test_each_role_is_refused_everything_but_its_job(role_server: RoleServer, role: str) -> None:
    """The server refuses each act outside the role's job, naming it; its subscriptions pass."""

    async def scenario() -> list[str]:
        async with connect(role_server, role) as connection:
            refusals = []
            for action in REFUSED[role]:
                async with connection.refused() as refusal:
                    await action.attempt(connection)
                refusals.append(refusal.message)
            for allowed in ALLOWED_SUBSCRIPTIONS[role]:
                await allowed.attempt(connection)
            async with connection.refused() as last:
                await SENTINEL.attempt(connection)
            assert last.message == SENTINEL.violation()
            assert len(connection.violations()) == len(REFUSED[role]) + 1, connection.errors
            return refusals

    refusals = asyncio.run(scenario())
    for action, refusal in zip(REFUSED[role], refusals, strict=True):
        assert refusal == action.violation(), action


async def orchestrator_request_is_answered(server: RoleServer, subject: str) -> bytes:
    """The orchestrator's request on `subject`, answered by the role that serves it."""
    role, queue = serving(subject)
    async with connect(server, role) as responder, connect(server, "orchestrator") as caller:

        async def answer(msg: Msg) -> None:
            await msg.respond(b"answer to " + msg.data)

        await responder.nc.subscribe(subject, queue=queue, cb=answer)
        reply = await request_when_served(caller.nc, subject, b"question")
        assert responder.errors == caller.errors == []
        return reply.data


@pytest.mark.parametrize("subject", list(Subject))
def test_orchestrator_may_request_every_subject(role_server: RoleServer, subject: Subject) -> None:
    """The orchestrator may request every repo_reader.v1 subject and reads the answer."""
    reply = asyncio.run(orchestrator_request_is_answered(role_server, subject.value))
    assert reply == b"answer to question"


async def synthesis_request_is_refused(server: RoleServer, subject: str) -> str:
    """The synthesis agent's request on `subject`: the violation, and that none arrived."""
    received: list[bytes] = []
    role, queue = serving(subject)
    async with connect(server, role) as responder, connect(server, "synthesis") as synthesis:

        async def record(msg: Msg) -> None:
            received.append(msg.data)

        await responder.nc.subscribe(subject, queue=queue, cb=record)
        await responder.settled()
        async with synthesis.refused() as refusal:
            with pytest.raises((NatsTimeoutError, NoRespondersError)):
                await synthesis.nc.request(subject, b"question", timeout=0.5)
        await responder.settled()
        assert received == []
        return refusal.message


@pytest.mark.parametrize("subject", list(Subject))
def test_synthesis_agent_may_not_request_any_subject(
    role_server: RoleServer, subject: Subject
) -> None:
    """Seed 001: the synthesis agent cannot invoke the Repo Reader on any subject."""
    violation = asyncio.run(synthesis_request_is_refused(role_server, subject.value))
    assert f'publish to "{subject.value}"' in violation.lower()


def test_synthesis_agent_works_in_its_own_subjects(role_server: RoleServer) -> None:
    """The synthesis agent may ask and answer on synthesis.>, replies coming to its inbox."""

    async def scenario() -> Msg:
        async with (
            connect(role_server, "synthesis") as helper,
            connect(role_server, "synthesis") as asker,
        ):

            async def answer(msg: Msg) -> None:
                await msg.respond(b"draft for " + msg.data)

            await helper.nc.subscribe("synthesis.draft", cb=answer)
            reply = await request_when_served(asker.nc, "synthesis.draft", b"provenance records")
            assert helper.errors == asker.errors == []
            return reply

    reply = asyncio.run(scenario())
    assert reply.data == b"draft for provenance records"
    assert reply.subject.startswith(inbox_prefix_for("synthesis") + ".")


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


class FixedClock:
    """A wall clock that stays 15 s into one minute, so a test's requests share a window."""

    def __call__(self) -> float:
        return 6_000_000.0 + 15


RATE_LIMITED = parse_config("[capabilities.code_search]\nrate_per_minute = 5\n").capabilities


def test_workers_share_counters_in_the_provisioned_bucket(role_server: RoleServer) -> None:
    """Two workers' limiters admit exactly the budget in the (twice) provisioned bucket."""

    async def scenario() -> tuple[list[str], list[bool]]:
        async with connect(role_server, "provisioner") as provisioner:
            made = await provision(provisioner.nc)
            assert await provision(provisioner.nc) == made
            assert provisioner.errors == []
        async with (
            connect(role_server, "worker") as first,
            connect(role_server, "worker") as second,
        ):
            limiters = [
                await RateLimiter.connect(
                    w.nc, RATE_LIMITED, [Subject.CODE_SEARCH], clock=FixedClock()
                )
                for w in (first, second)
            ]

            async def admitted(limiter: RateLimiter) -> bool:
                try:
                    await limiter(Subject.CODE_SEARCH)
                except RateLimited:
                    return False
                return True

            outcomes = await asyncio.gather(*(admitted(limiters[i % 2]) for i in range(8)))
            assert first.errors == second.errors == []
            return made, list(outcomes)

    made, outcomes = asyncio.run(scenario())
    assert made == PROVISIONED
    assert outcomes.count(True) == 5
    assert set(jetstream_inventory(role_server.monitoring_url)) == {BUCKET_STREAM, REQUEST_STREAM}


PROVISIONED = [
    f"key-value bucket {BUCKET}",
    f"durable request stream {REQUEST_STREAM} and its consumer {WORKER_CONSUMER}",
]


def test_provision_command_runs_as_the_provisioner(role_server: RoleServer) -> None:
    """`repo-reader provision` as the provisioner (as nats-setup runs it) makes the bucket and
    the durable request stream."""
    environment = {
        **os.environ,
        "PYTHONPATH": str(PROJECT_ROOT),
        "REPO_READER_NATS_USER": "provisioner",
        "REPO_READER_NATS_PASSWORD": role_server.passwords["provisioner"],
    }
    result = subprocess.run(
        [sys.executable, "-m", "worker.cli.main", "provision", "--nats", role_server.url],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "".join(f"ready: {line}\n" for line in PROVISIONED)
    assert set(jetstream_inventory(role_server.monitoring_url)) == {BUCKET_STREAM, REQUEST_STREAM}


def test_worker_may_not_create_the_rate_limit_bucket(role_server: RoleServer) -> None:
    """A worker may not create the missing bucket; it stops naming `repo-reader provision`."""

    async def scenario() -> tuple[str, str]:
        async with connect(role_server, "worker") as worker:
            async with worker.refused() as refusal:
                with pytest.raises(ConfigError) as stopped:
                    await RateLimiter.connect(worker.nc, RATE_LIMITED, [Subject.CODE_SEARCH])
            return refusal.message, str(stopped.value)

    refusal, error = asyncio.run(scenario())
    assert refusal == Pub(f"$JS.API.STREAM.CREATE.{BUCKET_STREAM}").violation()
    assert "repo-reader provision" in error
    assert jetstream_inventory(role_server.monitoring_url) == {}


def worker_environment(server: RoleServer) -> dict[str, str]:
    """The environment of `repo-reader serve` as the worker role."""
    return {
        "REPO_READER_NATS_USER": "worker",
        "REPO_READER_NATS_PASSWORD": server.passwords["worker"],
    }


def test_unprovisioned_rate_limited_worker_stops_naming_provision(
    role_server: RoleServer, cache: MirroredCache, make_source: SourceFactory
) -> None:
    """`serve` as the worker with no bucket logs the refusal and exits 2 naming provision."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    cache.set_config("[capabilities.code_search]\nrate_per_minute = 5\n")
    worker = WorkerProcess(cache.root, role_server.url, env=worker_environment(role_server))
    with pytest.raises(RuntimeError, match="did not become ready"):
        worker.start()
    assert worker.process is not None
    assert worker.process.returncode == 2
    logs = worker.logs()
    assert "repo-reader provision" in logs
    events = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    errors = [e["error"].lower() for e in events if e["event"] == "nats.error"]
    assert errors == [Pub(f"$JS.API.STREAM.CREATE.{BUCKET_STREAM}").violation()]


def test_worker_may_neither_create_nor_delete_a_stream(role_server: RoleServer) -> None:
    """D5: a worker's stream create, delete, purge are refused; only the bucket exists, intact."""

    async def scenario() -> list[str]:
        async with connect(role_server, "provisioner") as provisioner:
            await provision(provisioner.nc)
        async with connect(role_server, "worker") as worker:
            bucket = await worker.nc.jetstream().key_value(BUCKET)
            await bucket.create("research.1", b"1")
            js = worker.nc.jetstream(timeout=0.5)
            attempts: list[Any] = [
                lambda: js.add_stream(StreamConfig(name="SCRATCH", subjects=["scratch.>"])),
                lambda: js.delete_stream(BUCKET_STREAM),
                lambda: js.purge_stream(BUCKET_STREAM),
                lambda: js.delete_key_value(BUCKET),
            ]
            refusals = []
            for attempt in attempts:
                async with worker.refused() as refusal:
                    with pytest.raises(NatsTimeoutError):
                        await attempt()
                refusals.append(refusal.message)
            entry = await bucket.get("research.1")
            assert entry.value == b"1"
            return refusals

    refusals = asyncio.run(scenario())
    assert refusals == [
        Pub(f"$JS.API.STREAM.{verb}.{stream}").violation()
        for verb, stream in [
            ("CREATE", "SCRATCH"),
            ("DELETE", BUCKET_STREAM),
            ("PURGE", BUCKET_STREAM),
            ("DELETE", BUCKET_STREAM),
        ]
    ]
    assert jetstream_inventory(role_server.monitoring_url) == {
        BUCKET_STREAM: (1, ()),
        REQUEST_STREAM: (0, (WORKER_CONSUMER,)),  # as provisioned, untouched
    }


DURABLE_SUBJECT = "repo_reader.v1.durable.research"
"""This test's subject for a durable request; the stream's subjects are the durable design's
to choose (the config names only the stream and the consumer)."""


def test_worker_fetches_and_acks_only_from_its_consumer(role_server: RoleServer) -> None:
    """A worker fetches and acks a durable request from WORKERS and may touch no other consumer."""

    async def scenario() -> tuple[int, bytes, list[str]]:
        async with connect(role_server, "provisioner") as provisioner:
            js = provisioner.nc.jetstream()
            await js.add_stream(
                StreamConfig(
                    name=REQUEST_STREAM,
                    subjects=["repo_reader.v1.durable.>"],
                    retention=RetentionPolicy.WORK_QUEUE,
                )
            )
            await js.add_consumer(
                REQUEST_STREAM,
                ConsumerConfig(durable_name=WORKER_CONSUMER, ack_policy=AckPolicy.EXPLICIT),
            )
            assert provisioner.errors == []
        async with (
            connect(role_server, "orchestrator") as caller,
            connect(role_server, "worker") as worker,
        ):
            ack = await caller.nc.jetstream().publish(
                DURABLE_SUBJECT, b"question", headers={"Nats-Msg-Id": "request-1"}
            )
            pulled = await worker.nc.jetstream().pull_subscribe_bind(
                durable=WORKER_CONSUMER, stream=REQUEST_STREAM
            )
            (message,) = await pulled.fetch(1, timeout=10)
            await message.ack_sync()
            js = worker.nc.jetstream(timeout=0.5)
            spy = await js.pull_subscribe_bind(durable="SPY", stream=REQUEST_STREAM)
            attempts: list[Any] = [
                lambda: js.add_consumer(REQUEST_STREAM, ConsumerConfig(durable_name="SPY")),
                lambda: spy.fetch(1, timeout=0.5),
                lambda: js.delete_consumer(REQUEST_STREAM, WORKER_CONSUMER),
            ]
            refusals = []
            for attempt in attempts:
                async with worker.refused() as refusal:
                    with pytest.raises(NatsTimeoutError):
                        await attempt()
                refusals.append(refusal.message)
            assert caller.errors == []
            return ack.seq, message.data, refusals

    sequence, data, refusals = asyncio.run(scenario())
    assert (sequence, data) == (1, b"question")
    assert refusals == [
        Pub(f"$JS.API.CONSUMER.DURABLE.CREATE.{REQUEST_STREAM}.SPY").violation(),
        Pub(f"$JS.API.CONSUMER.MSG.NEXT.{REQUEST_STREAM}.SPY").violation(),
        Pub(f"$JS.API.CONSUMER.DELETE.{REQUEST_STREAM}.{WORKER_CONSUMER}").violation(),
    ]
    inventory = jetstream_inventory(role_server.monitoring_url)
    assert inventory == {REQUEST_STREAM: (0, (WORKER_CONSUMER,))}  # acked: the queue is empty


def test_mirror_service_answers_the_orchestrators_admin_sync(
    role_server: RoleServer, cache: MirroredCache, make_source: SourceFactory
) -> None:
    """`mirror serve` as the mirror answers the orchestrator's admin.sync, with no refusal."""
    source, head = make_source("sample")
    cache.add("acme/sample", source)
    asyncio.run(provisioned(role_server))  # docs.regenerate's budget lives in the bucket
    env = {
        "REPO_READER_NATS_USER": "mirror",
        "REPO_READER_NATS_PASSWORD": role_server.passwords["mirror"],
    }
    mirror = MirrorProcess(cache.root, role_server.url, interval=0, env=env)

    async def sync() -> SyncResponse:
        async with await RepoReaderClient.connect(
            role_server.url,
            user="orchestrator",
            password=role_server.passwords["orchestrator"],
            timeout=60,
        ) as orchestrator:
            (answer,) = await orchestrator.call(
                Subject.ADMIN_SYNC, SyncRequest(repos=("acme/sample",)), SyncResponse
            )
            return answer

    try:
        answer = asyncio.run(sync())
    finally:
        assert mirror.stop() == 0
    assert [(r.repo, r.head) for r in answer.results] == [("acme/sample", head)]
    assert "permissions violation" not in mirror.log.read_text().lower()


def test_only_the_orchestrator_triggers_the_docs_engine(
    role_server: RoleServer, cache: MirroredCache, make_source: SourceFactory
) -> None:
    """`mirror serve` as the mirror answers the orchestrator's docs.regenerate, counting its
    per-minute budget in the provisioned bucket (the next call is RATE_LIMITED), with no
    permission refused; the synthesis role's request never reaches it."""
    source, head = make_source("sample")
    cache.add("acme/sample", source)
    cache.set_config("[capabilities.docs_regenerate]\nrate_per_minute = 1\n")
    asyncio.run(provisioned(role_server))
    env = {
        "REPO_READER_NATS_USER": "mirror",
        "REPO_READER_NATS_PASSWORD": role_server.passwords["mirror"],
    }
    mirror = MirrorProcess(cache.root, role_server.url, interval=0, env=env)
    request = DocsRegenerateRequest(repo="acme/sample", doc_types=("repo_map",))

    async def regenerate(role: str) -> DocsRegenerateResponse:
        async with await RepoReaderClient.connect(
            role_server.url, user=role, password=role_server.passwords[role], timeout=60
        ) as client:
            (answer,) = await client.call(Subject.DOCS_REGENERATE, request, DocsRegenerateResponse)
            return answer

    async def refusals(count: int) -> int:
        refused = 0
        for _ in range(count):
            try:
                await regenerate("orchestrator")
            except RateLimited:
                refused += 1
        return refused

    try:
        answer = asyncio.run(regenerate("orchestrator"))
        # Budgets are per wall-clock minute and the mirror runs on the real clock: of two more
        # calls at most one can fall into the next minute, so at least one is refused.
        assert asyncio.run(refusals(2)) >= 1
        with pytest.raises(AccessDenied):
            asyncio.run(regenerate("synthesis"))
    finally:
        assert mirror.stop() == 0
    assert (answer.success, answer.commit, answer.docs_regenerated) == (True, head, ("repo_map",))
    assert "permissions violation" not in mirror.log.read_text().lower()


EAVESDROPPING = (">", "*.>", "_INBOX.>", inbox("orchestrator"), inbox("worker"), "repo_reader.>")

LOAD: list[tuple[Subject, msgspec.Struct, type[msgspec.Struct]]] = [
    *[
        (Subject.RESEARCH, RepoReaderRequest(query=query), RepoReaderResponse)
        for query in ("register a route handler", "load the configuration file") * 10
    ],
    *[
        (Subject.CODE_SEARCH, CodeSearchRequest(repo="acme/sample", query=q), CodeSearchResponse)
        for q in ("routes", "config", "handler", "path", "toml") * 2
    ],
    *[
        (
            Subject.CODE_READ,
            CodeReadRequest(repo="acme/sample", path=path, start_line=1, end_line=8),
            CodeReadResponse,
        )
        for path in ("sample/routing.py", "sample/config.py") * 5
    ],
    *[(Subject.CODE_LIST, CodeListRequest(repo="acme/sample"), CodeListResponse)] * 5,
    *[(Subject.REPO_STATUS, RepoStatusRequest(repo="acme/sample"), RepoStatusResponse)] * 5,
]


@dataclass
class Overheard:
    """What reached the synthesis agent's connection during the load."""

    refusals: list[str]
    messages: list[tuple[str, int]]
    in_msgs: int
    in_bytes: int
    denied: AccessDenied


async def provisioned(server: RoleServer) -> None:
    """What `repo-reader provision` does, as the provisioner."""
    async with connect(server, "provisioner") as provisioner:
        await provision(provisioner.nc)


async def orchestrate_load(server: RoleServer) -> tuple[list[Any], AccessDenied]:
    """The LOAD as the orchestrator, and meanwhile a research request as the synthesis agent."""
    async with (
        await RepoReaderClient.connect(
            server.url,
            user="orchestrator",
            password=server.passwords["orchestrator"],
            timeout=120,
        ) as orchestrator,
        await RepoReaderClient.connect(
            server.url, user="synthesis", password=server.passwords["synthesis"], timeout=10
        ) as intruder,
    ):

        async def ask(subject: Subject, request: Any, response: Any) -> Any:
            if subject is Subject.RESEARCH:
                return await orchestrator.research(request)
            return (await orchestrator.call(subject, request, response))[0]

        async def intrude() -> AccessDenied:
            with pytest.raises(AccessDenied) as denied:
                await intruder.research(RepoReaderRequest(query="register a route"))
            return denied.value

        *answers, denied = await asyncio.gather(*(ask(*call) for call in LOAD), intrude())
    return answers, denied


async def eavesdrop_during_load(server: RoleServer) -> tuple[list[Any], Overheard]:
    """The synthesis agent tries every EAVESDROPPING subscription, listens on its own inbox,
    and counts what reaches its connection while the orchestrator's load is answered."""
    heard: list[tuple[str, int]] = []
    own = asyncio.Event()

    async def listen(msg: Msg) -> None:
        heard.append((msg.subject, len(msg.data)))

    async def mine(msg: Msg) -> None:
        own.set()

    async with connect(server, "synthesis") as synthesis:
        refusals = []
        for subject in EAVESDROPPING:
            async with synthesis.refused() as refusal:
                await synthesis.nc.subscribe(subject, cb=listen)
            refusals.append(refusal.message)
        await synthesis.nc.subscribe(inbox("synthesis"), cb=listen)
        await synthesis.nc.subscribe("synthesis.after-load", cb=mine)
        await synthesis.settled()
        answers, denied = await orchestrate_load(server)
        # Published after every answer arrived: anything routed to this connection during
        # the load reached it before this does.
        await synthesis.nc.publish("synthesis.after-load", b"done")
        await asyncio.wait_for(own.wait(), timeout=10)
        assert synthesis.violations() == refusals
        overheard = Overheard(
            refusals=refusals,
            messages=heard,
            in_msgs=synthesis.nc.stats["in_msgs"],
            in_bytes=synthesis.nc.stats["in_bytes"],
            denied=denied,
        )
    return answers, overheard


def answered(subject: Subject, answer: Any) -> bool:
    """Whether `answer` carries what `subject` is asked for."""
    match subject:
        case Subject.RESEARCH:
            return bool(answer.artifacts)
        case Subject.CODE_SEARCH:
            return bool(answer.hits)
        case Subject.CODE_READ:
            return bool(answer.content)
        case Subject.CODE_LIST:
            return bool(answer.entries)
        case _:
            return bool(answer.repo == "acme/sample")


def test_synthesis_hears_nothing_while_a_worker_answers_the_orchestrator(
    role_server: RoleServer, cache: MirroredCache, make_source: SourceFactory
) -> None:
    """D4: while a worker answers 50 orchestrator requests, synthesis receives 0 bytes of any."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    cache.set_config(
        "[capabilities.research]\nrate_per_minute = 1000\n"
        "[capabilities.code_search]\nrate_per_minute = 1000\n"
    )
    asyncio.run(provisioned(role_server))
    env = worker_environment(role_server)
    with WorkerProcess(cache.root, role_server.url, concurrency=2, env=env) as worker:
        answers, overheard = asyncio.run(eavesdrop_during_load(role_server))
    assert len(answers) == len(LOAD) == 50
    assert [s for (s, _, _), a in zip(LOAD, answers, strict=True) if not answered(s, a)] == []
    assert overheard.refusals == [Sub(s).violation() for s in EAVESDROPPING]
    assert overheard.messages == []
    assert (overheard.in_msgs, overheard.in_bytes) == (1, len(b"done"))
    assert overheard.denied.details["subject"] == Subject.RESEARCH.value
    assert "permissions violation" not in worker.logs().lower()
    messages, _ = jetstream_inventory(role_server.monitoring_url)[BUCKET_STREAM]
    assert messages > 0  # the worker counted requests in its bucket


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


def test_the_roles_are_the_configs_users() -> None:
    """Every role the tests know has a user in the config, and no other user exists."""
    users = [
        line.split(":", 1)[1].strip()
        for line in NATS_CONF.read_text().splitlines()
        if line.strip().startswith("user:")
    ]
    assert sorted(users) == sorted(ROLES)


def test_durable_requests_work_within_the_roles(
    role_server: RoleServer, cache: MirroredCache, make_source: SourceFactory
) -> None:
    """Provisioned stream; the orchestrator's durable request is answered by a worker (in the
    orchestrator's inbox), replayable by the orchestrator, with no permission violation."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    asyncio.run(provisioned(role_server))

    async def ask() -> tuple[str, int]:
        async with await RepoReaderClient.connect(
            role_server.url,
            user="orchestrator",
            password=role_server.passwords["orchestrator"],
            timeout=60,
        ) as client:
            (status,) = await client.durable_call(
                Subject.REPO_STATUS, RepoStatusRequest(repo="acme/sample"), RepoStatusResponse
            )
        async with connect(role_server, "orchestrator") as orchestrator:
            recorded = await recorded_requests(orchestrator.nc)
            assert orchestrator.errors == []
        return status.repo, len(recorded)

    with WorkerProcess(cache.root, role_server.url, env=worker_environment(role_server)) as worker:
        repo, recorded = asyncio.run(ask())
    assert (repo, recorded) == ("acme/sample", 1)
    assert "permissions violation" not in worker.logs().lower()
