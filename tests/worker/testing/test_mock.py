"""The mock Repo Reader on its own: no NATS server, no git, answers and refusals as configured."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

import msgspec
import pytest

from contracts import (
    CodeListRequest,
    CodeListResponse,
    CodeReadRequest,
    CodeReadResponse,
    CodeSearchHit,
    CodeSearchRequest,
    CodeSearchResponse,
    DirectoryEntry,
    ErrorCode,
    GitChurnRequest,
    GitChurnResponse,
    GraphDiffRequest,
    GraphDiffResponse,
    ModuleChurn,
    RepoReaderRequest,
    RepoReaderResponse,
    RepoStatusRequest,
    RepoStatusResponse,
    SyncRequest,
)
from contracts.subjects import Subject
from worker.calls import RepoReaderAPI, ResearchResult
from worker.client import RepoReaderClient
from worker.config import parse_config
from worker.errors import (
    AccessDenied,
    CapabilityDisabled,
    InternalError,
    InvalidRequest,
    LicenseNotAllowed,
    LicenseUnavailable,
    LimitExceeded,
    NoResponders,
    NotFound,
    RateLimited,
    RepoNotFound,
    RepoReaderFailure,
    RevisionNotFound,
    UnknownFailure,
    failure_from_error,
)
from worker.testing import MockConfigurationError, MockRepo, MockRepoReader, fake_sha

T = TypeVar("T")
FLASK = "pallets/flask"
SIGN = "def sign(value):\n    return hmac(value)"


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def research(reader: MockRepoReader, request: object, **options: Any) -> ResearchResult:
    """A research answer from a fresh client of `reader`; `request` may be a plain dict."""

    async def ask() -> ResearchResult:
        async with reader.client(**options) as client:
            if isinstance(request, RepoReaderRequest):
                return await client.research(request)
            batches = await client.call(Subject.RESEARCH, request, RepoReaderResponse)
            return ResearchResult(
                request_id=batches[0].request_id,
                resolved=batches[0].resolved,
                artifacts=tuple(a for b in batches for a in b.artifacts),
                omitted=batches[0].omitted,
            )

    return run(ask())


def call(reader: MockRepoReader, subject: Subject, request: object, response_type: type[T]) -> T:
    """The first message of the answer to `request` on `subject`."""

    async def ask() -> T:
        async with reader.client() as client:
            return (await client.call(subject, request, response_type))[0]

    return run(ask())


def refusal(reader: MockRepoReader, subject: Subject, request: object) -> RepoReaderFailure:
    """The failure `request` raises."""
    response_type = RepoReaderResponse if subject is Subject.RESEARCH else CodeSearchResponse
    with pytest.raises(RepoReaderFailure) as raised:
        call(reader, subject, request, response_type)
    return raised.value


@pytest.fixture
def reader() -> MockRepoReader:
    """Flask (MIT) and a repository not mirrored yet; the server's default limits."""
    return MockRepoReader(repos=[FLASK, MockRepo("acme/later", mirrored=False)])


# The client's API


def test_the_mock_client_has_the_real_clients_api() -> None:
    """research, call, close, handle_error and the context manager take the same arguments."""
    mock_client = MockRepoReader().client()
    assert isinstance(mock_client, RepoReaderAPI)
    assert issubclass(RepoReaderClient, RepoReaderAPI)
    for name in ("research", "call", "close", "handle_error", "__aenter__", "__aexit__"):
        real = inspect.signature(getattr(RepoReaderClient, name))
        mocked = inspect.signature(getattr(type(mock_client), name))
        assert mocked == real, name


def test_importing_the_mock_loads_neither_nats_nor_git() -> None:
    """`import worker.testing` pulls in msgspec and contracts, not the transport nor pygit2."""
    heavy = ("nats", "pygit2", "numpy", "pyarrow", "re2", "Stemmer", "license_expression")
    code = (
        "import sys, worker.testing; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# Research


def test_research_answers_with_the_configured_artifacts(reader: MockRepoReader) -> None:
    """An excerpt added for a repository in scope comes back attributed, pinned and echoed."""
    added = reader.add_excerpt(FLASK, "src/flask/sessions.py", SIGN, start_line=10)
    result = research(
        reader,
        {"query": "session signing", "repo_constraints": {"allowlist": ["flask"]}},
    )
    assert result.artifacts == (added,)
    (resolved,) = result.resolved
    assert (resolved.repo, resolved.commit, resolved.ref, resolved.license) == (
        FLASK,
        fake_sha(FLASK),
        "refs/heads/main",
        "MIT",
    )
    assert added.commit == resolved.commit
    assert added.excerpt_span == "L10-L11"
    assert added.language == "python"
    assert added.swhid.endswith(";path=/src/flask/sessions.py;lines=10-11")


def test_research_echoes_the_request_id(reader: MockRepoReader) -> None:
    """The id the caller gives is the id of every batch and of the result."""

    async def ask() -> ResearchResult:
        async with reader.client() as client:
            return await client.research(
                RepoReaderRequest(query="session signing"), request_id="orchestrator:42"
            )

    assert run(ask()).request_id == "orchestrator:42"
    assert reader.calls[-1].request_id == "orchestrator:42"


def test_a_long_answer_comes_in_batches(reader: MockRepoReader) -> None:
    """Under a small max payload the answer is several ordered batches, joined by research()."""
    small = MockRepoReader(repos=[FLASK], max_payload=2048)
    for n in range(8):
        small.add_excerpt(FLASK, f"src/m{n}.py", f"def sign_{n}(value):\n" + "    x = 1\n" * 20)
    request = {"query": "sign", "file_constraints": {"max_excerpts_per_repo": 8}}

    async def ask() -> list[RepoReaderResponse]:
        async with small.client() as client:
            return await client.call(Subject.RESEARCH, request, RepoReaderResponse)

    batches = run(ask())
    assert len(batches) > 1
    assert [b.batch for b in batches] == list(range(len(batches)))
    assert [b.last for b in batches] == [False] * (len(batches) - 1) + [True]
    assert batches[0].resolved
    assert not any(b.resolved for b in batches[1:])
    assert len(research(small, request).artifacts) == 8


def test_research_keeps_to_the_request_bounds(reader: MockRepoReader) -> None:
    """Per-repository and total caps, extensions, and best score first, as the service does."""
    for n, path in enumerate(["a.py", "b.py", "c.md", "d.py", "e.py", "f.py", "g.py"]):
        reader.add_excerpt(FLASK, path, f"sign {n}", score=n / 10)
    default = research(reader, {"query": "sign"})
    assert [a.path for a in default.artifacts] == ["g.py", "f.py", "e.py", "d.py", "c.md"]
    fewer = research(reader, {"query": "sign", "result_limits": {"max_total_excerpts": 2}})
    assert [a.path for a in fewer.artifacts] == ["g.py", "f.py"]
    only_md = research(
        reader, {"query": "sign", "file_constraints": {"allowed_extensions": [".MD"]}}
    )
    assert [a.path for a in only_md.artifacts] == ["c.md"]


def test_research_finds_artifacts_only_in_scope_at_the_resolved_commit() -> None:
    """Artifacts of a repository out of scope, or at another commit, are not found."""
    old = "1" * 40
    reader = MockRepoReader(repos=[MockRepo(FLASK, refs={"2.0.0": old}), "acme/other"])
    head = reader.add_excerpt(FLASK, "new.py", "sign new")
    pinned = reader.add_excerpt(FLASK, "old.py", "sign old", commit=old)
    reader.add_excerpt("acme/other", "other.py", "sign other")
    flask_only = {"query": "sign", "repo_constraints": {"allowlist": [FLASK]}}
    assert research(reader, flask_only).artifacts == (head,)
    at_tag = {
        "query": "sign",
        "repo_constraints": {"allowlist": [FLASK], "revisions": {FLASK: "2.0.0"}},
    }
    result = research(reader, at_tag)
    assert result.artifacts == (pinned,)
    assert (result.resolved[0].commit, result.resolved[0].ref) == (old, "2.0.0")
    denied = {"query": "sign", "repo_constraints": {"denylist": [FLASK]}}
    assert {a.repo for a in research(reader, denied).artifacts} == {"acme/other"}


def test_research_cuts_excerpts_to_the_requested_size(reader: MockRepoReader) -> None:
    """An excerpt above max_excerpt_chars is cut to whole lines, its span and SWHID with it."""
    text = "\n".join(f"line {n} " + "x" * 30 for n in range(1, 11))
    reader.add_excerpt(FLASK, "long.py", text, start_line=100)
    result = research(reader, {"query": "line", "file_constraints": {"max_excerpt_chars": 100}})
    (artifact,) = result.artifacts
    assert artifact.truncated
    assert len(artifact.excerpt) <= 100
    start, end = (int(x) for x in artifact.excerpt_span[1:].split("-L"))
    assert artifact.excerpt == "\n".join(text.split("\n")[start - 100 : end - 99])
    assert artifact.swhid.endswith(f";lines={start}-{end}")


def test_license_rules_hold() -> None:
    """No root license: left out (and named) among others, refused alone unless accepted;
    only refused licenses: LICENSE_NOT_ALLOWED."""
    reader = MockRepoReader(repos=[FLASK, MockRepo("acme/bare", license=None)])
    everywhere = research(reader, {"query": "sign"})
    assert [r.repo for r in everywhere.resolved] == [FLASK]
    assert [(o.repo, o.code) for o in everywhere.omitted] == [("acme/bare", "LICENSE_UNAVAILABLE")]
    bare = {"query": "sign", "repo_constraints": {"allowlist": ["acme/bare"]}}
    assert isinstance(refusal(reader, Subject.RESEARCH, bare), LicenseUnavailable)
    unlicensed = reader.add_excerpt("acme/bare", "x.py", "sign")
    assert unlicensed.license == "NOASSERTION"
    accepted = bare | {"license_constraints": {"require_license": False}}
    assert research(reader, accepted).artifacts == (unlicensed,)
    reader.add_excerpt(FLASK, "y.py", "sign")
    gpl_only = {
        "query": "sign",
        "repo_constraints": {"allowlist": [FLASK]},
        "license_constraints": {"allowed_licenses": ["GPL-3.0-only"]},
    }
    failure = refusal(reader, Subject.RESEARCH, gpl_only)
    assert isinstance(failure, LicenseNotAllowed)
    assert failure.details == {"licenses": ["MIT"]}


# Validation


@pytest.mark.parametrize(
    ("request_fields", "exception", "field"),
    [
        ({"query": "sign", "result_limit": {}}, InvalidRequest, "result_limit"),
        ({"query": ""}, InvalidRequest, "query"),
        ({"query": ["sign"]}, InvalidRequest, "query"),
        ({"query": "sign", "repo_constraints": {"allowlist": ["../x"]}}, InvalidRequest,
         "repo_constraints.allowlist[0]"),
        ({"query": "sign", "result_limits": {"max_total_excerpts": 201}}, LimitExceeded,
         "result_limits.max_total_excerpts"),
        ({"query": "sign", "repo_constraints": {"allowlist": ["acme/nope"]}}, AccessDenied,
         "repo_constraints.allowlist[0]"),
        ({"query": "sign", "repo_constraints": {"allowlist": ["acme/later"]}}, RepoNotFound,
         None),
        ({"query": "sign", "repo_constraints": {"allowlist": [FLASK], "revisions": {FLASK: "v9"}}},
         RevisionNotFound, None),
    ],
)  # fmt: skip
def test_research_requests_are_validated_as_the_service_does(
    reader: MockRepoReader, request_fields: dict[str, Any], exception: type, field: str | None
) -> None:
    """Unknown fields, wrong types, bad names, limits above ceilings and unknown repositories
    raise the service's exception naming the field."""
    failure = refusal(reader, Subject.RESEARCH, request_fields)
    assert type(failure) is exception
    assert failure.details.get("field") == field


def test_the_query_must_say_something(reader: MockRepoReader) -> None:
    """A query of stop words only is REQUEST_TOO_BROAD, as the service's tokenizer decides."""
    assert (
        refusal(reader, Subject.RESEARCH, {"query": "of the"}).code == ErrorCode.REQUEST_TOO_BROAD
    )


def test_ceilings_and_switches_come_from_the_config() -> None:
    """A lower ceiling, a tool limit and a disabled capability of the config are enforced."""
    config = parse_config(
        "[limits]\nmax_total_excerpts = 3\n[defaults]\nmax_total_excerpts = 3\n"
        "[tools]\nsearch_max_results = 7\nsearch_default_results = 7\n"
        "[capabilities.code_list]\nenabled = false\n"
    )
    reader = MockRepoReader(config, repos=[FLASK])
    too_many = {"query": "sign", "result_limits": {"max_total_excerpts": 4}}
    assert refusal(reader, Subject.RESEARCH, too_many).details == {
        "field": "result_limits.max_total_excerpts",
        "limit": 3,
        "value": 4,
    }
    failure = refusal(reader, Subject.CODE_SEARCH, {"repo": FLASK, "query": "x", "max_results": 8})
    assert failure.details == {"field": "max_results", "limit": 7, "value": 8}
    assert isinstance(refusal(reader, Subject.CODE_LIST, {"repo": FLASK}), CapabilityDisabled)


def test_the_policy_and_bare_names_of_the_config_apply() -> None:
    """A repository the policy denies is ACCESS_DENIED; a bare name of two is ambiguous."""
    config = parse_config('[policy]\ndeny = ["acme/secret*"]\n')
    reader = MockRepoReader(config, repos=["acme/secret-sauce", "acme/dup", "other/dup"])
    status = RepoStatusRequest(repo="acme/secret-sauce")
    assert refusal(reader, Subject.REPO_STATUS, status).details["reason"] == "policy"
    failure = refusal(reader, Subject.REPO_STATUS, RepoStatusRequest(repo="dup"))
    assert failure.code == ErrorCode.AMBIGUOUS_REPOSITORY
    assert failure.details["candidates"] == ["acme/dup", "other/dup"]


def test_a_bad_request_id_is_refused(reader: MockRepoReader) -> None:
    """A request id with a space is INVALID_REQUEST naming the header."""

    async def ask() -> None:
        async with reader.client() as client:
            await client.research(RepoReaderRequest(query="sign"), request_id="not ok")

    with pytest.raises(InvalidRequest) as raised:
        run(ask())
    assert raised.value.details["header"] == "Repo-Reader-Request-Id"


def test_revisions_resolve_as_the_catalog_resolves_them() -> None:
    """The default branch, a registered tag and a sha prefix resolve; anything else does not."""
    head, tag = "a" * 40, "b" * 40
    reader = MockRepoReader(repos=[MockRepo(FLASK, head=head, refs={"3.0.0": tag})])

    def commit(revision: str) -> str:
        request = CodeListRequest(repo=FLASK, revision=revision)
        return call(reader, Subject.CODE_LIST, request, CodeListResponse).commit

    assert commit("main") == head
    assert commit("3.0.0") == tag
    assert commit("bbbb") == tag
    failure = refusal(reader, Subject.CODE_LIST, CodeListRequest(repo=FLASK, revision="3.1.0"))
    assert isinstance(failure, RevisionNotFound)


# Tools


def test_a_tool_answers_with_an_empty_shaped_response_by_default(reader: MockRepoReader) -> None:
    """Unconfigured, a tool answers an empty response naming the resolved repository."""
    answer = call(
        reader, Subject.CODE_READ, CodeReadRequest(repo="flask", path="a.py"), CodeReadResponse
    )
    assert (answer.repo, answer.commit, answer.ref, answer.path) == (
        FLASK,
        fake_sha(FLASK),
        "refs/heads/main",
        "a.py",
    )
    status = call(reader, Subject.REPO_STATUS, RepoStatusRequest(repo=FLASK), RepoStatusResponse)
    assert (status.head, status.license) == (fake_sha(FLASK), "MIT")


def test_a_tool_answer_is_filled_in_and_capped(reader: MockRepoReader) -> None:
    """A configured response gets the request id and resolved commit, and at most max_results."""
    hit = CodeSearchHit(
        path="a.py", line_number=1, column=1, match_length=1, matched_line="x", context="x",
        score=1.0, blob="0" * 40, license="MIT", license_source="LICENSE",
    )  # fmt: skip
    reader.on(Subject.CODE_SEARCH, CodeSearchResponse(request_id="", hits=(hit,) * 30))
    answer = call(
        reader,
        Subject.CODE_SEARCH,
        CodeSearchRequest(repo=FLASK, query="x", max_results=5),
        CodeSearchResponse,
    )
    assert len(answer.hits) == 5
    assert answer.truncated
    assert answer.commit == fake_sha(FLASK)
    assert answer.request_id == reader.calls[-1].request_id


def test_capped_lists_keep_their_own_meaning(reader: MockRepoReader) -> None:
    """A listing cut to max_entries counts what it holds; churn's `truncated` stays about
    commits, so cutting modules leaves it alone."""
    entry = DirectoryEntry(name="a", path="a", type="file")
    reader.on(Subject.CODE_LIST, CodeListResponse(request_id="", entries=(entry,) * 9, total=9))
    listing = call(
        reader, Subject.CODE_LIST, CodeListRequest(repo=FLASK, max_entries=4), CodeListResponse
    )
    assert (len(listing.entries), listing.total, listing.truncated) == (4, 4, True)
    module = ModuleChurn(path="src", commit_count=1)
    reader.on(Subject.GIT_CHURN, GitChurnResponse(request_id="", modules=(module,) * 9))
    churn = call(reader, Subject.GIT_CHURN, GitChurnRequest(repo=FLASK, limit=2), GitChurnResponse)
    assert (len(churn.modules), churn.truncated) == (2, False)


def test_a_function_answers_from_the_request(reader: MockRepoReader) -> None:
    """A function of the decoded request answers; a failure it raises is the caller's."""

    def listing(request: CodeListRequest) -> CodeListResponse:
        if request.path == "missing":
            raise NotFound("path: 'missing' does not exist", field="path")
        entry = DirectoryEntry(name="a.py", path=f"{request.path}/a.py", type="file", size=3)
        return CodeListResponse(request_id="", entries=(entry,), total=1)

    reader.on(Subject.CODE_LIST, listing)
    answer = call(
        reader, Subject.CODE_LIST, CodeListRequest(repo=FLASK, path="src"), CodeListResponse
    )
    assert [e.path for e in answer.entries] == ["src/a.py"]
    failure = refusal(reader, Subject.CODE_LIST, CodeListRequest(repo=FLASK, path="missing"))
    assert (type(failure), failure.details) == (NotFound, {"field": "path"})


def test_a_responders_own_bug_is_internal_and_recorded(reader: MockRepoReader) -> None:
    """An unexpected exception is INTERNAL, as from the service; the mock keeps it for the test."""

    def broken(request: CodeListRequest) -> CodeListResponse:
        raise RuntimeError("boom")

    reader.on(Subject.CODE_LIST, broken)
    assert isinstance(
        refusal(reader, Subject.CODE_LIST, CodeListRequest(repo=FLASK)), InternalError
    )
    assert isinstance(reader.calls[-1].exception, RuntimeError)


def test_a_wrong_answer_type_is_the_tests_mistake(reader: MockRepoReader) -> None:
    """A response of another subject's type is refused at once, not sent."""
    with pytest.raises(MockConfigurationError):
        reader.on(Subject.CODE_SEARCH, CodeReadResponse(request_id=""))
    reader.on(Subject.CODE_READ, lambda request: CodeSearchResponse(request_id=""))
    with pytest.raises(MockConfigurationError):
        call(reader, Subject.CODE_READ, CodeReadRequest(repo=FLASK, path="a"), CodeReadResponse)
    with pytest.raises(MockConfigurationError):
        reader.add_excerpt("acme/unregistered", "a.py", "x")


def test_graph_diff_names_both_commits() -> None:
    """graph.diff resolves base and head and names their commits."""
    old = "c" * 40
    reader = MockRepoReader(repos=[MockRepo(FLASK, commits=(old,))])
    request = GraphDiffRequest(repo=FLASK, base="cccccc", head="main")
    answer = call(reader, Subject.GRAPH_DIFF, request, GraphDiffResponse)
    assert (answer.base_commit, answer.head_commit) == (old, fake_sha(FLASK))


def test_admin_subjects_have_no_responders_unless_answered(reader: MockRepoReader) -> None:
    """No worker serves admin subjects: NoResponders, as the real client ends up raising."""
    with pytest.raises(NoResponders):
        call(reader, Subject.ADMIN_SYNC, SyncRequest(), CodeSearchResponse)


# Simulated errors


@pytest.mark.parametrize("code", list(ErrorCode))
def test_every_error_code_can_be_simulated(reader: MockRepoReader, code: ErrorCode) -> None:
    """A simulated error raises the exception the real client raises for it, details kept."""
    reader.fail(Subject.CODE_SEARCH, code, "simulated", retry_after_seconds=3, hint="x")
    failure = refusal(reader, Subject.CODE_SEARCH, CodeSearchRequest(repo=FLASK, query="x"))
    expected = failure_from_error(code.value, "simulated", {"retry_after_seconds": 3, "hint": "x"})
    assert type(failure) is type(expected)
    assert (failure.code, failure.message, failure.details) == (
        code,
        "simulated",
        {"retry_after_seconds": 3, "hint": "x"},
    )
    if code is ErrorCode.RATE_LIMITED:
        assert isinstance(failure, RateLimited)
        assert failure.retry_after_seconds == 3.0


def test_an_error_a_newer_server_might_send(reader: MockRepoReader) -> None:
    """A code this client does not know is UnknownFailure with the wire code."""
    reader.fail(Subject.RESEARCH, "QUOTA_EXHAUSTED", "no more")
    failure = refusal(reader, Subject.RESEARCH, {"query": "sign"})
    assert isinstance(failure, UnknownFailure)
    assert failure.wire_code == "QUOTA_EXHAUSTED"


def test_a_simulated_error_can_pass(reader: MockRepoReader) -> None:
    """`times` fails that many requests; the next one is answered."""
    reader.fail(Subject.RESEARCH, ErrorCode.TIMEOUT, times=2)
    for _ in range(2):
        assert refusal(reader, Subject.RESEARCH, {"query": "sign"}).code == ErrorCode.TIMEOUT
    assert research(reader, {"query": "sign"}).artifacts == ()
    assert [c.error.code if c.error else None for c in reader.calls] == ["TIMEOUT", "TIMEOUT", None]


def test_a_simulated_error_never_hides_a_bad_request(reader: MockRepoReader) -> None:
    """The service's checks come first: an invalid request is refused as invalid."""
    reader.fail(Subject.RESEARCH, ErrorCode.INTERNAL)
    failure = refusal(reader, Subject.RESEARCH, {"query": "sign", "max_repos": 3})
    assert failure.code == ErrorCode.INVALID_REQUEST


def test_json_clients_see_the_same(reader: MockRepoReader) -> None:
    """A JSON client gets the same answers and refusals as a MessagePack one."""
    reader.add_excerpt(FLASK, "a.py", SIGN)
    request = RepoReaderRequest(query="sign")
    assert research(reader, request, json=True).artifacts == research(reader, request).artifacts
    assert reader.calls[-2].request == reader.calls[-1].request == request


def test_clear_forgets_what_was_configured(reader: MockRepoReader) -> None:
    """After clear(), no artifact, answer or simulated error remains."""
    reader.add_excerpt(FLASK, "a.py", SIGN)
    reader.fail(Subject.CODE_LIST, ErrorCode.INTERNAL)
    reader.clear()
    assert research(reader, {"query": "sign"}).artifacts == ()
    assert (
        call(reader, Subject.CODE_LIST, CodeListRequest(repo=FLASK), CodeListResponse).entries == ()
    )


def test_encoded_requests_round_trip(reader: MockRepoReader) -> None:
    """The mock decodes exactly what the client encoded (msgspec, strict)."""
    request = RepoReaderRequest(query="sign")
    research(reader, request)
    assert msgspec.msgpack.encode(reader.calls[-1].request) == msgspec.msgpack.encode(request)
