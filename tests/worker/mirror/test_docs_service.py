"""docs.regenerate end to end: a real NATS server, `mirror serve`, `repo-reader serve`, the CLI
and the JSON-RPC gateway, over a fixture repository."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import nats
import pygit2
import pytest

from contracts.code import CodeListRequest, CodeReadRequest
from contracts.docs import DOC_TYPES, DOCS_REF, DocsRegenerateRequest, DocsRegenerateResponse
from contracts.errors import ErrorCode
from contracts.repo import RepoStatusRequest
from contracts.subjects import Subject
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gateways import GatewayProcess
from tests.support.toolcalls import ToolCaller
from tests.support.workers import PROJECT_ROOT, MirrorProcess, WorkerProcess
from tests.worker.docs.conftest import REPO, SHOP_FILES
from worker.client import RepoReaderClient
from worker.errors import RepoReaderFailure
from worker.service.embedded_nats import EmbeddedNats


@pytest.fixture
def stack(
    nats_server: EmbeddedNats, cache: MirroredCache, make_source: SourceFactory
) -> Iterator[tuple[EmbeddedNats, MirroredCache, Path]]:
    """The shop mirrored; `mirror serve` on a schedule and one worker over it."""
    source, _ = make_source("shop", SHOP_FILES)
    cache.add(REPO, source)
    cache.set_config(
        "[capabilities.docs_regenerate]\nrate_per_minute = 4\n"
        '[docs]\ntypes = ["repo_map", "api_index", "license_report", "architecture"]\n'
    )
    mirror = MirrorProcess(cache.root, nats_server.url, interval=3600)
    try:
        with WorkerProcess(cache.root, nats_server.url):
            yield nats_server, cache, source
    finally:
        mirror.stop()


async def regenerate(url: str, request: DocsRegenerateRequest) -> DocsRegenerateResponse:
    async with await RepoReaderClient.connect(url, timeout=120, attempts=1) as client:
        (answer,) = await client.call(Subject.DOCS_REGENERATE, request, DocsRegenerateResponse)
        return answer


def refusal(url: str, request: DocsRegenerateRequest) -> RepoReaderFailure:
    with pytest.raises(RepoReaderFailure) as failure:
        asyncio.run(regenerate(url, request))
    return failure.value


def cache_files(root: Path) -> dict[str, int]:
    """Every file of the cache but the mirror's heartbeat, with its size."""
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and p.name != "service.json"
    }


def test_regenerated_documents_are_served_at_the_docs_ref(
    stack: tuple[EmbeddedNats, MirroredCache, Path],
) -> None:
    """The engine answers seed 002's shape; code.list and code.read serve the documents at
    refs/repo-reader/docs at once, licensed; repo.status counts what is out of date."""
    server, _, _ = stack
    tools = ToolCaller(server.url)
    before = tools.ask(RepoStatusRequest(repo=REPO))
    assert before.is_watching
    assert 3500 < before.next_sync_in_seconds <= 3600
    assert (before.docs_out_of_date, before.docs_commit) == (4, None)
    assert before.next_regeneration_in_seconds is None  # nothing scheduled
    done = asyncio.run(regenerate(server.url, DocsRegenerateRequest(repo="shop")))
    assert (done.success, done.repo, done.reason_skipped) == (True, REPO, None)
    assert done.docs_regenerated == ("repo_map", "api_index", "license_report", "architecture")
    listed = tools.ask(CodeListRequest(repo=REPO, revision=DOCS_REF))
    assert listed.commit == done.docs_commit
    assert [e.path for e in listed.entries] == [
        "LICENSE",  # the repository's, as the documents quote its code
        "api-index.md",
        "architecture.md",
        "license-report.spdx",
        "repo-map.md",
    ]
    read = tools.ask(CodeReadRequest(repo=REPO, revision=DOCS_REF, path="api-index.md"))
    assert (read.license, read.license_source) == ("MIT", "spdx-header")
    assert "**Order.total**" in (read.content or "")
    after = tools.ask(RepoStatusRequest(repo=REPO, doc_types=("repo_map", "churn_report")))
    assert (after.docs_out_of_date, after.docs_out_of_date_types) == (1, ("churn_report",))
    assert after.docs_commit == done.docs_commit
    again = asyncio.run(regenerate(server.url, DocsRegenerateRequest(repo=REPO)))
    assert (again.docs_regenerated, again.docs_commit) == ((), done.docs_commit)
    assert again.reason_skipped is not None


def test_refused_requests_write_nothing(stack: tuple[EmbeddedNats, MirroredCache, Path]) -> None:
    """Unregistered repositories, paths, unknown or disallowed types and a spent budget are
    refused with their codes, and the cache is as it was."""
    server, cache, _ = stack
    before = cache_files(cache.root)
    cases = [
        (DocsRegenerateRequest(repo="acme/other"), ErrorCode.ACCESS_DENIED),
        (DocsRegenerateRequest(repo="shop", doc_types=("churn_report",)), "CAPABILITY_DISABLED"),
    ]
    for request, code in cases:
        assert refusal(server.url, request).code == code
    for raw in (
        {"repo": "../../etc/passwd"},
        {"repo": "/tmp/x"},
        {"repo": REPO, "doc_types": ["readme"]},
        {"repo": REPO, "output_path": "/tmp/x"},
    ):
        assert call_json(server.url, raw)["code"] == ErrorCode.INVALID_REQUEST
    assert cache_files(cache.root) == before
    for _ in range(2):  # the budget is 4 a minute: two went already
        asyncio.run(regenerate(server.url, DocsRegenerateRequest(repo=REPO)))
    limited = refusal(server.url, DocsRegenerateRequest(repo=REPO))
    assert limited.code == ErrorCode.RATE_LIMITED
    assert 0 < limited.details["retry_after_seconds"] <= 60


def call_json(url: str, body: dict[str, object]) -> dict[str, object]:
    """The error of a raw JSON request, as a shell's `nats req` would send it."""

    async def send() -> dict[str, object]:
        nc = await nats.connect(url)
        try:
            reply = await nc.request(
                Subject.DOCS_REGENERATE.value,
                json.dumps(body).encode(),
                timeout=30,
                headers={"Content-Type": "application/json"},
            )
        finally:
            await nc.close()
        (error,) = json.loads(reply.data)["errors"]
        return error  # type: ignore[no-any-return]

    return asyncio.run(send())


def test_status_without_a_mirror_service_promises_nothing(
    nats_server: EmbeddedNats, cache: MirroredCache, make_source: SourceFactory
) -> None:
    """When the mirror service stops, nothing watches: no next sync, no next regeneration."""
    source, _ = make_source("shop", SHOP_FILES)
    cache.add(REPO, source)
    cache.set_config('[docs]\nscheduled = ["repo_map"]\n')
    mirror = MirrorProcess(cache.root, nats_server.url, interval=3600)
    with WorkerProcess(cache.root, nats_server.url):
        tools = ToolCaller(nats_server.url)
        watched = tools.ask(RepoStatusRequest(repo=REPO, doc_types=("repo_map",)))
        assert mirror.stop() == 0
        alone = tools.ask(RepoStatusRequest(repo=REPO, doc_types=("repo_map",)))
    assert watched.is_watching
    assert watched.next_regeneration_in_seconds == watched.next_sync_in_seconds
    assert (alone.is_watching, alone.next_sync_in_seconds) == (False, None)
    assert alone.next_regeneration_in_seconds is None


def test_the_cli_and_the_gateway_ask_the_engine(
    stack: tuple[EmbeddedNats, MirroredCache, Path], tmp_path: Path
) -> None:
    """`repo-reader docs regenerate|show` and JSON-RPC trigger_doc_regeneration /
    get_repo_status (seed 002's names and shapes)."""
    server, _, source = stack
    env = {"PYTHONPATH": str(PROJECT_ROOT), "PATH": "/usr/bin:/bin"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "worker.cli.main", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )

    made = cli("docs", "regenerate", REPO, "--nats", server.url, "--type", "repo_map")
    assert made.returncode == 0, made.stderr
    assert "regenerated  repo_map" in made.stdout
    shown = cli("docs", "show", REPO, "repo_map", "--nats", server.url)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("<!-- SPDX-License-Identifier: MIT -->\n# Repository map")
    missing = cli("docs", "show", REPO, "api_index", "--nats", server.url)
    assert missing.returncode == 3  # NOT_FOUND: never generated
    commit(source, {"shop/prices.py": "def sum_prices(items):\n    return 0\n"})
    with (
        GatewayProcess(tmp_path, server.url) as gateway,
        httpx.Client(base_url=gateway.url, timeout=120) as client,
    ):
        status = rpc(client, "get_repo_status", {"repo_path": REPO})
        assert status["is_watching"] is True
        assert status["uncommitted_files"] == 3  # api_index, license_report, architecture
        assert status["next_commit_in_seconds"] is None
        answer = rpc(
            client, "trigger_doc_regeneration", {"repo_path": REPO, "doc_types": ["api_index"]}
        )
        assert list(answer)[:2] == ["success", "docs_regenerated"]
        assert (answer["success"], answer["docs_regenerated"]) == (True, ["api_index"])
        denied = client.post(
            "/v1/rpc",
            json={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "trigger_doc_regeneration",
                "params": {"repo_path": "acme/elsewhere"},
            },
        ).json()
        assert denied["error"]["data"]["code"] == ErrorCode.ACCESS_DENIED


def commit(source: Path, files: dict[str, str]) -> None:
    from tests.support.gitrepos import commit as git_commit

    git_commit(pygit2.Repository(str(source)), files)


def rpc(client: httpx.Client, method: str, params: dict[str, object]) -> dict[str, object]:
    body = client.post(
        "/v1/rpc", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    ).json()
    assert "result" in body, body
    return body["result"]  # type: ignore[no-any-return]


assert DOC_TYPES  # the module's subject: every type is a wire value
