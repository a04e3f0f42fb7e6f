"""The mock Repo Reader beside the real service: the same requests, the same refusals and shapes.

One real NATS server (a small max payload, so that answers come in several batches) and one
worker over the agent-tool cache; a mock built from that cache's config and mirror states.
Each request goes to both: a refusal must carry the same code, message and details; an
answer the same types, batches, request id and resolved commits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import msgspec
import nats
import pytest

from contracts.errors import ErrorCode, ErrorReply
from contracts.registry import BATCHED, MESSAGES
from contracts.research import RepoReaderRequest
from contracts.subjects import CONTENT_TYPE_JSON, HEADER_CONTENT_TYPE, HEADER_REQUEST_ID, Subject
from tests.support.tools import ToolCache, build_tool_cache
from tests.support.workers import WorkerProcess
from worker.calls import RepoReaderAPI
from worker.client import RepoReaderClient
from worker.errors import RepoReaderFailure
from worker.repos.layout import CacheLayout
from worker.service.embedded_nats import EmbeddedNats
from worker.service.replies import join_batches
from worker.testing import MockRepo, MockRepoReader

REPO = "acme/widgets"
MAX_PAYLOAD = 4096
"""Small enough that research, search and listing answers take several messages."""
MAX_QUERY_CHARS = 2000
"""The research query ceiling, lowered so that a query above it still fits a message."""


@pytest.fixture(scope="module")
def tool_cache(tmp_path_factory: pytest.TempPathFactory) -> ToolCache:
    """The mirrored repositories of the agent-tool tests, with a lower query ceiling."""
    built = build_tool_cache(tmp_path_factory.mktemp("parity"))
    built.cache.set_config(f"[limits]\nmax_query_chars = {MAX_QUERY_CHARS}\n")
    return built


@pytest.fixture(scope="module")
def service_url(tool_cache: ToolCache) -> Iterator[str]:
    """A NATS server with a small max payload and one worker over the tool cache."""
    with (
        EmbeddedNats(max_payload=MAX_PAYLOAD) as server,
        WorkerProcess(tool_cache.cache.root, server.url, concurrency=2),
    ):
        yield server.url


def mock_of(tool_cache: ToolCache) -> MockRepoReader:
    """A mock with the cache's config, each repository as its mirror state describes it."""
    layout = CacheLayout(tool_cache.cache.root)
    config = tool_cache.cache.config
    repos = []
    for entry in config.repos:
        state = layout.read_state(entry.name)
        if state is None:
            repos.append(MockRepo(entry.name, mirrored=False))
            continue
        repos.append(
            MockRepo(
                entry.name,
                head=state.head,
                default_ref=state.default_ref,
                commits=tool_cache.commits if entry.name == REPO else (),
                license=state.license,
                license_source=state.license_source or "none",
            )
        )
    return MockRepoReader(config, repos=repos, max_payload=MAX_PAYLOAD)


def both(
    service_url: str,
    mock: MockRepoReader,
    subject: Subject,
    request: Any,
    *,
    request_id: str,
    json: bool = False,
) -> tuple[list[Any] | RepoReaderFailure, list[Any] | RepoReaderFailure]:
    """The batches (or the failure) `request` gets from the service, then from the mock."""
    response_type = MESSAGES[subject][1]

    async def ask(client: RepoReaderAPI) -> list[Any] | RepoReaderFailure:
        try:
            return await client.call(subject, request, response_type, request_id=request_id)
        except RepoReaderFailure as failure:
            return failure

    async def run() -> tuple[list[Any] | RepoReaderFailure, list[Any] | RepoReaderFailure]:
        async with await RepoReaderClient.connect(service_url, json=json, timeout=60) as real:
            served = await ask(real)
        async with mock.client(json=json) as double:
            mocked = await ask(double)
        return served, mocked

    return asyncio.run(run())


def research(query: str = "handle request", **fields: Any) -> dict[str, Any]:
    return {"query": query, **fields}


def allow(*repos: str, **fields: Any) -> dict[str, Any]:
    return research(repo_constraints={"allowlist": list(repos), **fields})


def tool(**fields: Any) -> dict[str, Any]:
    return {"repo": REPO, **fields}


REFUSED: list[tuple[Subject, dict[str, Any], ErrorCode]] = [
    # research: decoding
    (Subject.RESEARCH, research(result_limit={"max_total_excerpts": 3}), ErrorCode.INVALID_REQUEST),
    (Subject.RESEARCH, research(""), ErrorCode.INVALID_REQUEST),
    (Subject.RESEARCH, {"query": 42}, ErrorCode.INVALID_REQUEST),
    (Subject.RESEARCH, allow("not a repo"), ErrorCode.INVALID_REQUEST),
    (Subject.RESEARCH, research(license_constraints={"allowed_licenses": ["MIT; rm"]}),
     ErrorCode.INVALID_REQUEST),
    # research: the request's own checks
    (Subject.RESEARCH, research("of the"), ErrorCode.REQUEST_TOO_BROAD),
    (Subject.RESEARCH, research("*"), ErrorCode.REQUEST_TOO_BROAD),
    (Subject.RESEARCH, research("x" * (MAX_QUERY_CHARS + 1)), ErrorCode.LIMIT_EXCEEDED),
    (Subject.RESEARCH, research(result_limits={"max_total_excerpts": 201}),
     ErrorCode.LIMIT_EXCEEDED),
    (Subject.RESEARCH, research(file_constraints={"max_excerpt_chars": 4001}),
     ErrorCode.LIMIT_EXCEEDED),
    (Subject.RESEARCH, research(repo_constraints={"max_repos": 21}), ErrorCode.LIMIT_EXCEEDED),
    (Subject.RESEARCH, research(license_constraints={"allowed_licenses": ["Not-A-License"]}),
     ErrorCode.INVALID_REQUEST),
    # research: the repositories in scope
    (Subject.RESEARCH, allow("acme/nope"), ErrorCode.ACCESS_DENIED),
    (Subject.RESEARCH, allow("acme/secret-sauce"), ErrorCode.ACCESS_DENIED),
    (Subject.RESEARCH, allow("dup"), ErrorCode.AMBIGUOUS_REPOSITORY),
    (Subject.RESEARCH, allow("acme/pending"), ErrorCode.REPO_NOT_FOUND),
    (Subject.RESEARCH, allow("acme/unlicensed"), ErrorCode.LICENSE_UNAVAILABLE),
    (Subject.RESEARCH, research(repo_constraints={"max_repos": 1}), ErrorCode.REQUEST_TOO_BROAD),
    (Subject.RESEARCH, allow(REPO, denylist=[REPO]), ErrorCode.INVALID_REQUEST),
    (Subject.RESEARCH, allow(REPO, revisions={REPO: "no-such-branch"}),
     ErrorCode.REVISION_NOT_FOUND),
    (Subject.RESEARCH, allow(REPO, revisions={"acme/unlicensed": "main"}),
     ErrorCode.INVALID_REQUEST),
    (Subject.RESEARCH, allow(REPO) | {"license_constraints": {"allowed_licenses": ["GPL-3.0"]}},
     ErrorCode.LICENSE_NOT_ALLOWED),
    # code.search
    (Subject.CODE_SEARCH, tool(query="line", max_results=31), ErrorCode.LIMIT_EXCEEDED),
    (Subject.CODE_SEARCH, tool(query="x" * 1001), ErrorCode.LIMIT_EXCEEDED),
    (Subject.CODE_SEARCH, tool(query="(a)\\1", regex=True), ErrorCode.INVALID_REQUEST),
    (Subject.CODE_SEARCH, tool(query="a\nb"), ErrorCode.INVALID_REQUEST),
    (Subject.CODE_SEARCH, tool(query="x", language="klingon"), ErrorCode.INVALID_REQUEST),
    (Subject.CODE_SEARCH, tool(query="x", path="../outside"), ErrorCode.INVALID_REQUEST),
    (Subject.CODE_SEARCH, tool(query="x", context_lines=6), ErrorCode.INVALID_REQUEST),
    (Subject.CODE_SEARCH, tool(query=""), ErrorCode.INVALID_REQUEST),
    (Subject.CODE_SEARCH, tool(query="x", max_result=3), ErrorCode.INVALID_REQUEST),
    (Subject.CODE_SEARCH, {"repo": "a b", "query": "x"}, ErrorCode.INVALID_REQUEST),
    (Subject.CODE_SEARCH, {"repo": "acme/nope", "query": "x"}, ErrorCode.ACCESS_DENIED),
    (Subject.CODE_SEARCH, {"repo": "acme/unlicensed", "query": "x"},
     ErrorCode.LICENSE_UNAVAILABLE),
    (Subject.CODE_SEARCH, tool(query="x", revision="v9"), ErrorCode.REVISION_NOT_FOUND),
    # code.read and code.list
    (Subject.CODE_READ, tool(path="/etc/passwd"), ErrorCode.INVALID_REQUEST),
    (Subject.CODE_READ, tool(path="src//core.py"), ErrorCode.INVALID_REQUEST),
    (Subject.CODE_READ, tool(path="long.txt", start_line=10, end_line=5),
     ErrorCode.INVALID_REQUEST),
    (Subject.CODE_READ, tool(path="long.txt", start_line=1, end_line=51),
     ErrorCode.LIMIT_EXCEEDED),
    (Subject.CODE_READ, {"repo": "acme/pending", "path": "x.py"}, ErrorCode.REPO_NOT_FOUND),
    (Subject.CODE_LIST, tool(max_entries=51), ErrorCode.LIMIT_EXCEEDED),
    (Subject.CODE_LIST, tool(path="src/../.."), ErrorCode.INVALID_REQUEST),
    # git.* and repo.status
    (Subject.GIT_HISTORY, tool(limit=201), ErrorCode.LIMIT_EXCEEDED),
    (Subject.GIT_HISTORY, tool(since_days=3661), ErrorCode.LIMIT_EXCEEDED),
    (Subject.GIT_HISTORY, tool(since_days=0), ErrorCode.INVALID_REQUEST),
    (Subject.GIT_CHURN, tool(time_window="2y"), ErrorCode.LIMIT_EXCEEDED),
    (Subject.GIT_CHURN, tool(time_window="1h"), ErrorCode.INVALID_REQUEST),
    (Subject.GIT_CHURN, tool(depth=4), ErrorCode.LIMIT_EXCEEDED),
    (Subject.GIT_CHURN, tool(limit=201), ErrorCode.LIMIT_EXCEEDED),
    (Subject.REPO_STATUS, {"repo": "dup"}, ErrorCode.AMBIGUOUS_REPOSITORY),
    (Subject.REPO_STATUS, {"repo": "acme/secret-sauce"}, ErrorCode.ACCESS_DENIED),
    (Subject.REPO_STATUS, {"repo": "acme/pending"}, ErrorCode.REPO_NOT_FOUND),
    # graph.*
    (Subject.GRAPH_SEARCH, tool(query="handle", limit=101), ErrorCode.INVALID_REQUEST),
    (Subject.GRAPH_SEARCH, {"repo": "acme/unlicensed", "query": "x"},
     ErrorCode.LICENSE_UNAVAILABLE),
    (Subject.GRAPH_TRAVERSE, tool(start_entities=["src"], max_nodes=1001),
     ErrorCode.LIMIT_EXCEEDED),
    (Subject.GRAPH_RETRIEVE, tool(entity_ids=[]), ErrorCode.INVALID_REQUEST),
    (Subject.GRAPH_DIFF, tool(base="nope", head="main"), ErrorCode.REVISION_NOT_FOUND),
    (Subject.GRAPH_DIFF, {"repo": "acme/nope", "base": "a", "head": "b"},
     ErrorCode.ACCESS_DENIED),
]  # fmt: skip


@pytest.fixture(scope="module")
def mock(tool_cache: ToolCache, service_url: str) -> MockRepoReader:
    """The mock, holding the service's own answer to one research question as its artifacts."""
    double = mock_of(tool_cache)
    request = msgspec.convert(
        allow(REPO) | {"file_constraints": {"max_excerpts_per_repo": 10}}, RepoReaderRequest
    )

    async def record() -> None:
        async with await RepoReaderClient.connect(service_url, timeout=60) as client:
            double.add_artifacts(*(await client.research(request)).artifacts)

    asyncio.run(record())
    return double


@pytest.mark.parametrize(
    ("subject", "request_fields", "code"),
    REFUSED,
    ids=[f"{s.capability}-{c.value}-{i}" for i, (s, _, c) in enumerate(REFUSED)],
)
def test_the_mock_refuses_what_the_service_refuses(
    service_url: str,
    mock: MockRepoReader,
    subject: Subject,
    request_fields: dict[str, Any],
    code: ErrorCode,
) -> None:
    """An invalid or refused request gets the same code, message and details from both."""
    served, mocked = both(service_url, mock, subject, request_fields, request_id="refused-1")
    assert isinstance(served, RepoReaderFailure), served
    assert isinstance(mocked, RepoReaderFailure), mocked
    assert served.code == code
    assert (type(mocked), mocked.message, mocked.details) == (
        type(served),
        served.message,
        served.details,
    )


def test_a_bad_request_id_is_refused_alike(service_url: str, mock: MockRepoReader) -> None:
    """A request id the service cannot echo is INVALID_REQUEST from both, with the same details."""
    served, mocked = both(service_url, mock, Subject.RESEARCH, allow(REPO), request_id="bad id!")
    assert isinstance(served, RepoReaderFailure)
    assert isinstance(mocked, RepoReaderFailure)
    assert served.code == ErrorCode.INVALID_REQUEST
    assert (mocked.code, mocked.message, mocked.details) == (
        served.code,
        served.message,
        served.details,
    )


def test_research_answers_alike(service_url: str, mock: MockRepoReader) -> None:
    """Holding the service's artifacts, the mock answers a research request with the same
    batches: the same split, request id, resolved commit and artifacts, in the same order."""
    request = allow(REPO, max_repos=1) | {
        "file_constraints": {"max_excerpts_per_repo": 10},
        "result_limits": {"max_total_excerpts": 10},
    }
    served, mocked = both(service_url, mock, Subject.RESEARCH, request, request_id="research-1")
    assert isinstance(served, list)
    assert len(served) > 1  # several batches under the small max payload
    assert mocked == served


def test_research_within_tighter_bounds_alike(service_url: str, mock: MockRepoReader) -> None:
    """Fewer excerpts per repository and an extension filter choose the same artifacts."""
    request = research(
        repo_constraints={"allowlist": [REPO]},
        file_constraints={"max_excerpts_per_repo": 2, "allowed_extensions": [".py"]},
    )
    served, mocked = both(
        service_url, mock, Subject.RESEARCH, request, request_id="research-2", json=True
    )
    assert isinstance(served, list)
    assert isinstance(mocked, list)
    assert [a.path for b in mocked for a in b.artifacts] == [
        a.path for b in served for a in b.artifacts
    ]
    assert [b.resolved for b in mocked] == [b.resolved for b in served]


VALID: list[tuple[Subject, dict[str, Any]]] = [
    (Subject.CODE_SEARCH, tool(query="handle_request")),
    (Subject.CODE_SEARCH, tool(query="line", max_results=25)),
    (Subject.CODE_READ, tool(path="src/widgets/core.py", start_line=6, end_line=9)),
    (Subject.CODE_LIST, tool(recursive=True)),
    (Subject.CODE_LIST, tool(path="src", recursive=True, max_entries=3)),
    (Subject.GIT_HISTORY, tool(since_days=60, limit=3)),
    (Subject.GIT_CHURN, tool(time_window="1m", depth=2)),
    (Subject.REPO_STATUS, {"repo": "widgets"}),
    (Subject.GRAPH_SEARCH, tool(query="handle_request")),
    (Subject.GRAPH_TRAVERSE, tool(start_entities=["src/widgets/core.py"], depth=2)),
    (Subject.GRAPH_RETRIEVE, tool(entity_ids=["src/widgets/core.py:handle_request"])),
]


@pytest.mark.parametrize(
    ("subject", "request_fields"),
    VALID,
    ids=[f"{s.capability}-{i}" for i, (s, _) in enumerate(VALID)],
)
def test_tool_answers_alike(
    service_url: str,
    tool_cache: ToolCache,
    subject: Subject,
    request_fields: dict[str, Any],
) -> None:
    """Told the service's answer, the mock gives it back in the same batches; told nothing,
    it answers with the same type, repository and resolved commit."""
    mock = mock_of(tool_cache)
    unconfigured = both(service_url, mock, subject, request_fields, request_id="tool-1")
    served, mocked = unconfigured
    assert isinstance(served, list), served
    assert isinstance(mocked, list), mocked
    assert [type(b) for b in mocked] == [type(served[0])]
    for name in ("repo", "commit", "ref"):
        if name in type(served[0]).__struct_fields__:
            assert getattr(mocked[0], name) == getattr(served[0], name)
    field = BATCHED.get(subject)
    mock.on(subject, join_batches(served, field) if field else served[0])
    _, replayed = both(service_url, mock, subject, request_fields, request_id="tool-1")
    assert replayed == served


def test_graph_diff_resolves_both_revisions_alike(service_url: str, tool_cache: ToolCache) -> None:
    """graph.diff between two pinned commits names the same two commits from both."""
    mock = mock_of(tool_cache)
    request = tool(base=tool_cache.initial[:10], head="main")
    served, mocked = both(service_url, mock, Subject.GRAPH_DIFF, request, request_id="diff-1")
    assert isinstance(served, list)
    assert isinstance(mocked, list)
    assert (mocked[0].base_commit, mocked[0].head_commit) == (
        served[0].base_commit,
        served[0].head_commit,
    )
    assert (served[0].base_commit, served[0].head_commit) == (tool_cache.initial, tool_cache.head)


RAW: list[tuple[Subject, bytes, dict[str, str]]] = [
    (Subject.REPO_STATUS, b'{"repo": "\xff"}', {HEADER_CONTENT_TYPE: CONTENT_TYPE_JSON}),
    (Subject.REPO_STATUS, b"\x81\xa4repo\xa1\xff", {}),
    (Subject.RESEARCH, b"{not json", {}),
    (Subject.RESEARCH, b"", {}),
    (Subject.RESEARCH, b'["query"]', {HEADER_CONTENT_TYPE: CONTENT_TYPE_JSON}),
    (Subject.CODE_READ, b'{"repo": "acme/widgets", "path": "a", "path2": 1}', {}),
]


@pytest.mark.parametrize(("subject", "data", "headers"), RAW)
def test_raw_messages_are_refused_alike(
    service_url: str,
    tool_cache: ToolCache,
    subject: Subject,
    data: bytes,
    headers: dict[str, str],
) -> None:
    """Bytes no client would send (invalid UTF-8, broken JSON, an empty body, an unknown field)
    get the same error message from the mock's wire entry as from a worker."""
    mock = mock_of(tool_cache)
    headers = {**headers, HEADER_REQUEST_ID: "raw-1"}

    async def served() -> tuple[dict[str, str], bytes]:
        nc = await nats.connect(service_url)
        try:
            reply = await nc.request(subject.value, data, timeout=30, headers=headers)
        finally:
            await nc.close()
        return dict(reply.headers or {}), reply.data

    real_headers, real_body = asyncio.run(served())
    wire = mock.answer(subject, data, headers=headers)
    assert wire.messages == [real_body]
    assert wire.headers == real_headers
    json = real_headers[HEADER_CONTENT_TYPE] == CONTENT_TYPE_JSON
    decode = msgspec.json.decode if json else msgspec.msgpack.decode
    (error,) = decode(real_body, type=ErrorReply).errors
    assert error.code == ErrorCode.INVALID_REQUEST
