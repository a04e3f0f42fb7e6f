"""The whole stack of compose.yaml on a Docker engine, driven from the host.

One compose project per module (a unique name, its own volumes, torn down even on
failure): NATS with the project's users, the one-shot mirror filling the cache from a
pygit2 fixture repository, the netns guard and two confined workers. The host talks to
NATS on its loopback port as the orchestrator does; the containers are otherwise only
inspected (`docker inspect`, `docker exec`) — no test sends traffic anywhere else.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import nats
import pygit2
import pytest
from nats.errors import TimeoutError as NatsTimeoutError

from contracts import RepoConstraints, RepoReaderRequest, SyncRequest, SyncResponse
from contracts.subjects import SERVICE_NAME, Subject, inbox_prefix_for
from tests.sandbox.conftest import ProjectImages
from tests.sandbox.probes import WRITE_PROBE, posture_rules, usable_default_routes, write_outcomes
from tests.sandbox.roles import NATS_CONF, new_passwords, password_environment
from tests.sandbox.stack import (
    APP_UID,
    ComposeStack,
    StackSettings,
    chown_tree,
    exec_in,
    wait_for,
)
from tests.support.cache import SAMPLE_FILES
from tests.support.gitrepos import commit, init_repo
from worker.client import RepoReaderClient, ResearchResult
from worker.errors import AccessDenied

pytestmark = [pytest.mark.container, pytest.mark.slow]

REPO = "octo/sample"
ORIGIN = "file:///sources/octo/sample.git"
QUERIES = (
    "register a route handler",
    "load the TOML configuration file",
    "error raised when the configuration is invalid",
    "dispatch a request to the handler registered for a path",
    "tiny package that parses configuration files",
)
READY_FILE = "/tmp/repo-reader.ready"


@dataclass(frozen=True, kw_only=True)
class Stack:
    """A running compose project and what the tests need to talk to it and check it."""

    compose: ComposeStack
    docker: Any
    url: str
    passwords: dict[str, str]
    source: pygit2.Repository
    head: str

    def workers(self) -> list[Any]:
        """The two worker containers."""
        return self.compose.containers(self.docker, "worker")

    def service(self, name: str) -> Any:
        """The single container of a service."""
        (container,) = self.compose.containers(self.docker, name)
        return container


@pytest.fixture(scope="module")
def stack(
    project_images: ProjectImages, docker_client: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """compose.yaml up (healthy) with a fixture repository mirrored; down with volumes after."""
    workdir = tmp_path_factory.mktemp("stack")
    sources = workdir / "sources"
    # Opened before the chown: libgit2 would not open it for this user afterwards.
    source = init_repo(sources / f"{REPO}.git", bare=True)
    head = commit(source, SAMPLE_FILES, message="initial")
    # libgit2 in the mirror refuses a repository owned by another user (compose.yaml).
    chown_tree(sources, APP_UID, APP_UID, image=project_images.repo_reader)
    config = workdir / "repo-reader.toml"
    config.write_text(f'[[repos]]\nname = "{REPO}"\nurl = "{ORIGIN}"\n')
    passwords = new_passwords()
    secrets = workdir / "secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "nats_worker_password").write_text(passwords["worker"])
    (secrets / "nats_worker_password").chmod(0o644)
    settings = StackSettings(
        repo_reader_image=project_images.repo_reader,
        nats_image=project_images.nats,
        passwords=passwords,
        config=config,
        sources=sources,
        secrets=secrets,
    )
    compose = ComposeStack(settings, workdir)
    try:
        compose.up()
        yield Stack(
            compose=compose,
            docker=docker_client.client,
            url=compose.nats_url(),
            passwords=passwords,
            source=source,
            head=head,
        )
    finally:
        compose.down()
        if os.geteuid() != 0:
            chown_tree(sources, os.getuid(), os.getgid(), image=project_images.repo_reader)


def research_request(query: str) -> RepoReaderRequest:
    """A research request scoped to the fixture repository."""
    return RepoReaderRequest(query=query, repo_constraints=RepoConstraints(allowlist=(REPO,)))


async def connect(stack: Stack, role: str = "orchestrator", **options: Any) -> RepoReaderClient:
    """A client on the published NATS port as `role`."""
    return await RepoReaderClient.connect(
        stack.url, user=role, password=stack.passwords[role], max_reconnect_attempts=2, **options
    )


def answer_of(result: ResearchResult) -> bytes:
    """What must not depend on which worker answered: resolved commits and artifacts."""
    return msgspec.json.encode((result.resolved, result.artifacts))


@dataclass(frozen=True)
class Outcome:
    """One request of a load: its query, its answer, and when it finished."""

    request_id: str
    query: str
    answer: bytes
    seconds: float
    finished: float


async def load(
    stack: Stack,
    total: int,
    *,
    concurrency: int,
    timeout: float = 30.0,
    attempts: int = 2,
    pace: float = 0.0,
    midway: asyncio.Event | None = None,
) -> list[Outcome]:
    """`total` research requests, `concurrency` at a time, the n-th sent no earlier than
    n * `pace` seconds after the first; `midway` is set when a quarter are answered."""
    semaphore = asyncio.Semaphore(concurrency)
    answered = 0
    begin = time.monotonic()

    async def one(client: RepoReaderClient, index: int) -> Outcome:
        nonlocal answered
        query = QUERIES[index % len(QUERIES)]
        await asyncio.sleep(max(begin + index * pace - time.monotonic(), 0))
        async with semaphore:
            started = time.monotonic()
            result = await client.research(research_request(query))
        answered += 1
        if midway is not None and answered == total // 4:
            midway.set()
        finished = time.monotonic()
        return Outcome(result.request_id, query, answer_of(result), finished - started, finished)

    async with await connect(stack, timeout=timeout, attempts=attempts) as client:
        return await asyncio.gather(*(one(client, i) for i in range(total)))


async def requests_handled(stack: Stack, instances: int) -> dict[str, int]:
    """Requests handled so far by each worker instance, from `$SRV.STATS` (as the orchestrator)."""
    nc = await nats.connect(
        stack.url, user="orchestrator", password=stack.passwords["orchestrator"],
        inbox_prefix=inbox_prefix_for("orchestrator"), allow_reconnect=False,
    )  # fmt: skip
    handled: dict[str, int] = {}
    try:
        inbox = nc.new_inbox()
        replies = await nc.subscribe(inbox)
        await nc.publish(f"$SRV.STATS.{SERVICE_NAME}", b"", reply=inbox)
        deadline = time.monotonic() + 5
        while len(handled) < instances and time.monotonic() < deadline:
            try:
                message = await replies.next_msg(timeout=max(deadline - time.monotonic(), 0.01))
            except NatsTimeoutError:
                break
            stats = json.loads(message.data)
            handled[stats["id"]] = sum(e["num_requests"] for e in stats["endpoints"])
    finally:
        await nc.close()
    return handled


def answers_logged(stack: Stack, request_ids: list[str]) -> dict[str, dict[str, int]]:
    """How many times each worker container logged answering each request, by request id."""
    answered: dict[str, dict[str, int]] = {rid: {} for rid in request_ids}
    for worker in stack.workers():
        for line in worker.logs().decode().splitlines():
            if "request.answered" not in line:
                continue
            rid = json.loads(line).get("request_id")
            if rid in answered:
                answered[rid][worker.name] = answered[rid].get(worker.name, 0) + 1
    return answered


def instance_id(worker: Any) -> str:
    """The micro service id a worker container serves under (its ready file's first field)."""
    code, output = exec_in(worker, ["cat", READY_FILE])
    assert code == 0, output
    return output.split()[0]


def restore(worker: Any) -> None:
    """Start a stopped worker again and wait until its health check passes."""
    worker.reload()
    if worker.status != "running":
        worker.start()

    def healthy() -> bool:
        worker.reload()
        return bool(worker.attrs["State"].get("Health", {}).get("Status") == "healthy")

    wait_for(healthy, f"{worker.name} to be healthy again", timeout=90)


@pytest.fixture(scope="module")
def calm_answers(stack: Stack) -> dict[str, bytes]:
    """Each query's answer with both workers up and one request at a time."""

    async def ask_each() -> dict[str, bytes]:
        async with await connect(stack) as client:
            return {q: answer_of(await client.research(research_request(q))) for q in QUERIES}

    return asyncio.run(ask_each())


def test_research_request_is_answered_with_verifiable_artifacts(stack: Stack) -> None:
    """From the host, the orchestrator's request gets excerpts that check against the repository."""

    async def ask() -> ResearchResult:
        async with await connect(stack) as client:
            return await client.research(research_request("register a route handler"))

    result = asyncio.run(ask())
    ((resolved),) = result.resolved
    assert (resolved.repo, resolved.commit, resolved.license) == (REPO, stack.head, "MIT")
    assert result.artifacts
    assert "sample/routing.py" in {a.path for a in result.artifacts}
    source = stack.source
    tree = source.revparse_single(stack.head).peel(pygit2.Tree)
    for artifact in result.artifacts:
        assert (artifact.repo, artifact.commit, artifact.license) == (REPO, stack.head, "MIT")
        blob = source[tree[artifact.path].id].peel(pygit2.Blob)
        assert artifact.blob == str(blob.id)
        first, last = (int(n) for n in artifact.excerpt_span.lstrip("L").split("-L"))
        lines = blob.data.decode().split("\n")
        assert artifact.excerpt == "\n".join(lines[first - 1 : last])
        span = f"{first}" if first == last else f"{first}-{last}"
        assert artifact.swhid == (
            f"swh:1:cnt:{artifact.blob};origin={ORIGIN};anchor=swh:1:rev:{stack.head};"
            f"path=/{artifact.path};lines={span}"
        )


def test_two_hundred_requests_are_spread_over_both_workers(
    stack: Stack, calm_answers: dict[str, bytes]
) -> None:
    """200 concurrent requests are all answered, as calmly, and both workers handle some."""
    names = {instance_id(w): w.name for w in stack.workers()}
    assert len(names) == 2
    before = asyncio.run(requests_handled(stack, 2))
    outcomes = asyncio.run(load(stack, 200, concurrency=16))
    after = asyncio.run(requests_handled(stack, 2))
    assert set(before) == set(after) == set(names)
    handled = {names[i]: after[i] - before[i] for i in names}
    assert sum(handled.values()) == 200, handled
    assert all(count > 0 for count in handled.values()), handled
    assert all(o.answer == calm_answers[o.query] for o in outcomes)


def test_synthesis_request_is_refused_by_the_server(stack: Stack) -> None:
    """The synthesis user's research request is a NATS permissions refusal no worker sees."""

    async def ask_as_synthesis() -> None:
        async with await connect(stack, "synthesis", timeout=10) as client:
            await client.research(research_request("register a route handler"))

    before = asyncio.run(requests_handled(stack, 2))
    with pytest.raises(AccessDenied) as refused:
        asyncio.run(ask_as_synthesis())
    assert refused.value.details["reason"] == "nats-permissions"
    assert asyncio.run(requests_handled(stack, 2)) == before
    violations = [
        line
        for line in stack.service("nats").logs().decode().splitlines()
        if "user:synthesis" in line and "Publish Violation" in line
    ]
    assert violations
    assert all(f'Subject "{Subject.RESEARCH.value}"' in line for line in violations)


def test_worker_cannot_write_its_root_filesystem_or_the_cache(stack: Stack) -> None:
    """In each worker, creating a file in / or /cache fails with EROFS; only /tmp is writable."""
    targets = ["/probe", "/cache/probe", "/tmp/probe"]
    for worker in stack.workers():
        code, output = exec_in(worker, ["python", "-c", WRITE_PROBE, *targets])
        assert code == 0, output
        assert write_outcomes(output) == {
            "/probe": "EROFS",
            "/cache/probe": "EROFS",
            "/tmp/probe": "ok",
        }, worker.name


def test_posture_check_inside_each_worker_finds_no_violation(stack: Stack) -> None:
    """`python -m sandbox.posture` run in each worker reports no violated rule."""
    for worker in stack.workers():
        code, output = exec_in(worker, ["python", "-m", "sandbox.posture", "--cache", "/cache"])
        assert (code, posture_rules(output)) == (0, set()), output
        assert "no violation" in output


def test_workers_are_attached_through_the_internal_network_only(stack: Stack) -> None:
    """By inspection: workers have no network of their own; the guard's only one is internal."""
    guard = stack.service("worker-netns")
    internal = f"{stack.compose.project}_internal"
    for worker in stack.workers():
        assert worker.attrs["HostConfig"]["NetworkMode"] == f"container:{guard.id}"
        assert not worker.attrs["NetworkSettings"]["Networks"]
    assert set(guard.attrs["NetworkSettings"]["Networks"]) == {internal}
    assert stack.docker.networks.get(internal).attrs["Internal"] is True
    assert set(stack.service("nats").attrs["NetworkSettings"]["Networks"]) == {
        internal,
        f"{stack.compose.project}_edge",
    }


def route_tables(container: Any, shell: list[str]) -> tuple[str, str]:
    """The container's /proc/net/route and /proc/net/ipv6_route (empty when IPv6 is off)."""
    tables = []
    for path in ("/proc/net/route", "/proc/net/ipv6_route"):
        code, output = exec_in(container, [*shell, path])
        tables.append(output if code == 0 else "")
    return tables[0], tables[1]


def test_worker_namespace_has_no_default_route(stack: Stack) -> None:
    """By inspection of the kernel's tables: no usable default route where the workers run,
    while NATS (also on the edge network) has one, so the reading would see it."""
    for worker in stack.workers():
        assert usable_default_routes(*route_tables(worker, ["cat"])) == [], worker.name
    assert usable_default_routes(*route_tables(stack.service("nats"), ["busybox", "cat"]))


@pytest.mark.parametrize(
    ("mistake", "named"),
    [
        ("[limits]\nmax_total_excerpt = 5\n", "unknown field `max_total_excerpt` - at `$.limits`"),
        ("[server]\nrequest_timeout_seconds = 0\n", "`$.server.request_timeout_seconds`"),
        ("[defaults]\nmax_repos = 50\n", "defaults.max_repos = 50 is above limits.max_repos"),
        ('[[repos]]\nname = "octo/sample"\nurl = \n', "not valid TOML"),
    ],
    ids=["unknown-key", "impossible-value", "default-above-ceiling", "invalid-toml"],
)
def test_worker_with_a_config_mistake_exits_naming_it(
    stack: Stack, tmp_path: Path, mistake: str, named: str
) -> None:
    """A worker started as compose runs it, with a broken repo-reader.toml, exits 2 naming it."""
    broken = tmp_path / "repo-reader.toml"
    broken.write_text(mistake)
    broken.chmod(0o644)
    env_file = tmp_path / "compose.env"
    env_file.write_text(stack.compose.settings.env_file_text(config=broken))
    result = stack.compose.run(
        "run", "--rm", "--no-deps", "-T", "worker", env_file=env_file, check=False, timeout=60
    )
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "repo-reader: config error: /etc/repo-reader/repo-reader.toml:" in output
    assert named in output


def nats_conf_with(edit: Callable[[str], str], tmp_path: Path) -> Path:
    """A copy of sandbox/nats.conf changed by `edit`, readable by the NATS image's user."""
    path = tmp_path / "nats.conf"
    path.write_text(edit(NATS_CONF.read_text()))
    path.chmod(0o644)
    return path


@dataclass(frozen=True)
class NatsMistake:
    """A broken NATS setup: the config edited, a password variable left unset, the error."""

    edit: Callable[[str], str]
    unset: str
    expected: str


@pytest.mark.parametrize(
    "mistake",
    [
        NatsMistake(
            lambda text: text.replace("max_payload: 1MB", "max_payload: 1MB\nmax_paylod: 2MB"),
            "",
            'unknown field "max_paylod"',
        ),
        NatsMistake(
            lambda text: text,
            "REPO_READER_NATS_WORKER_PASSWORD",
            "variable reference for 'REPO_READER_NATS_WORKER_PASSWORD'",
        ),
        NatsMistake(lambda text: text + "\nauthorization {\n", "", "Unexpected EOF processing map"),
    ],
    ids=["misspelt-field", "password-unset", "unclosed-block"],
)
def test_nats_with_a_config_mistake_exits_with_its_error(
    project_images: ProjectImages, docker_client: Any, tmp_path: Path, mistake: NatsMistake
) -> None:
    """nats-server started as compose starts it, on a broken config, exits 1 with its error."""
    environment = password_environment(new_passwords())
    environment.pop(mistake.unset, None)
    config = nats_conf_with(mistake.edit, tmp_path)
    server = docker_client.client.containers.run(
        project_images.nats,
        command=["--config", "/etc/nats/nats.conf", "--store_dir", "/data/jetstream"],
        volumes={str(config): {"bind": "/etc/nats/nats.conf", "mode": "ro"}},
        environment=environment,
        tmpfs={"/data": "size=16m,uid=10002,gid=10002,mode=0700"},
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges:true"],
        network_mode="none",
        detach=True,
    )
    try:
        status = server.wait(timeout=60)
        logs = server.logs().decode()
    finally:
        server.remove(force=True)
    assert status["StatusCode"] == 1, logs
    assert mistake.expected in logs


def test_docker_stop_mid_load_loses_no_request(
    stack: Stack, calm_answers: dict[str, bytes]
) -> None:
    """A worker stopped (SIGTERM, drain) in the middle of a load: every request is answered,
    as in a calm run, and the stopped worker exits 0 having drained."""
    victim = stack.workers()[0]
    total = 600  # paced over 6 s: it goes on after the stopped worker is gone

    async def scenario() -> tuple[list[Outcome], float, float]:
        midway = asyncio.Event()
        running = asyncio.create_task(
            load(stack, total, concurrency=16, timeout=5, pace=0.01, midway=midway)
        )
        await midway.wait()
        stopping = time.monotonic()
        await asyncio.to_thread(victim.stop, timeout=30)
        stopped = time.monotonic()
        return await running, stopping, stopped

    try:
        outcomes, stopping, stopped = asyncio.run(scenario())
        victim.reload()
        assert victim.attrs["State"]["ExitCode"] == 0
        logs = victim.logs().decode()
        assert "worker.draining" in logs
        assert "worker.drained" in logs
    finally:
        restore(victim)
    assert len(outcomes) == total
    assert sum(o.finished < stopping for o in outcomes) >= total // 4
    assert any(o.finished > stopped for o in outcomes), "the load ended before the worker did"
    # Drained, not lost: what the stopped worker had taken it answered, so nothing waited
    # for the client's timeout and a retry. The message says which worker answered a slow
    # request, and how often: twice means an answer sent and lost, once a request never taken.
    slow = [o.request_id for o in outcomes if o.seconds >= 5]
    assert not slow, answers_logged(stack, slow)
    assert all(o.answer == calm_answers[o.query] for o in outcomes)


def test_docker_kill_mid_load_loses_no_request(
    stack: Stack, calm_answers: dict[str, bytes]
) -> None:
    """A worker killed (SIGKILL) in the middle of a load: what it held is retried with the same
    request id after the client's timeout, and every answer is the calm one."""
    victim = stack.workers()[1]
    timeout = 3.0
    # Unpaced, 16 at a time, long enough to outlast the kill.
    total = 2000

    def exited() -> bool:
        victim.reload()
        return bool(victim.status == "exited")

    def kill() -> None:
        # Stopped first, the victim keeps being sent requests it cannot answer: it dies holding
        # some. Killed outright, it once held none (between two answers), and nothing was retried.
        victim.kill(signal="SIGSTOP")
        time.sleep(0.5)
        victim.kill()
        wait_for(exited, "the killed worker to exit", timeout=30, interval=0.02)

    async def scenario() -> tuple[list[Outcome], float, float]:
        midway = asyncio.Event()
        running = asyncio.create_task(
            load(stack, total, concurrency=16, timeout=timeout, attempts=3, midway=midway)
        )
        await midway.wait()
        killing = time.monotonic()
        await asyncio.to_thread(kill)
        dead = time.monotonic()
        return await running, killing, dead

    try:
        outcomes, killing, dead = asyncio.run(scenario())
        assert victim.attrs["State"]["ExitCode"] == 137
    finally:
        restore(victim)
    assert len(outcomes) == total
    assert sum(o.finished < killing for o in outcomes) >= total // 4
    assert sum(o.finished > dead for o in outcomes) >= total // 10, "the load ended too soon"
    retried = [o for o in outcomes if o.seconds >= timeout]
    assert retried, "no request was held by the killed worker: the retry path did not run"
    assert all(o.answer == calm_answers[o.query] for o in outcomes)


def test_scheduled_mirror_service_syncs_on_request(stack: Stack) -> None:
    """The optional mirror service answers admin.sync from the host; workers then serve the new
    head. Runs last: it moves the mirrored head the other tests compare against."""
    stack.compose.run(
        "--profile", "scheduled", "up", "--detach", "--wait", "--no-deps", "--no-build",
        "--pull", "never", "mirror-service", timeout=240,
    )  # fmt: skip
    try:
        # The service syncs every repository once as it starts: committed before that sync
        # fetched, the new head would already be the mirror's when the request came.
        service = stack.service("mirror-service")
        wait_for(
            lambda: "mirror.synced" in service.logs().decode(),
            "the mirror service's first scheduled sync",
            timeout=120,
        )
        newer = commit(
            stack.source, {"sample/fresh.py": "def freshly_added_feature():\n    return 'fresh'\n"}
        )

        async def scenario() -> None:
            async with await connect(stack, timeout=120) as client:
                request = SyncRequest(repos=(REPO,))
                (synced,) = await client.call(Subject.ADMIN_SYNC, request, SyncResponse)
                ((result,),) = (synced.results,)
                assert (result.previous_head, result.head) == (stack.head, newer)
                answer = await client.research(research_request("freshly added feature"))
                assert answer.resolved[0].commit == newer
                assert "sample/fresh.py" in {a.path for a in answer.artifacts}

        asyncio.run(scenario())
    finally:
        stack.compose.run(
            "--profile", "scheduled", "rm", "--stop", "--force", "mirror-service", check=False
        )
