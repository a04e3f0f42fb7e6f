"""The six agent tools over NATS: a real server, two worker processes, real repositories."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import msgspec
import nats
import pytest

from contracts.code import (
    CodeListRequest,
    CodeListResponse,
    CodeReadRequest,
    CodeReadResponse,
    CodeSearchRequest,
    CodeSearchResponse,
)
from contracts.errors import ErrorCode, ErrorReply
from contracts.git import GitChurnRequest, GitChurnResponse, GitHistoryRequest, GitHistoryResponse
from contracts.graph import GraphRetrieveRequest, GraphRetrieveResponse
from contracts.repo import RepoStatusRequest, RepoStatusResponse
from contracts.research import RepoConstraints, RepoReaderRequest, RepoReaderResponse
from tests.support.toolcalls import ToolCaller
from tests.support.tools import (
    BASE_FILES,
    CORE_PY,
    MAX_BLOB_BYTES,
    NOT_UTF8_SHOWN,
    ToolCache,
    build_tool_cache,
)
from tests.support.workers import WorkerProcess
from worker.service.embedded_nats import EmbeddedNats

REPO = "acme/widgets"


@pytest.fixture(scope="module")
def tool_cache(tmp_path_factory: pytest.TempPathFactory) -> ToolCache:
    """The mirrored repositories every test of this module reads."""
    return build_tool_cache(tmp_path_factory.mktemp("tools"))


@pytest.fixture(scope="module")
def served(tool_cache: ToolCache) -> Iterator[ToolCaller]:
    """A NATS server and two worker processes in one queue group over the tool cache."""
    with (
        EmbeddedNats() as server,
        WorkerProcess(tool_cache.cache.root, server.url, concurrency=2),
        WorkerProcess(tool_cache.cache.root, server.url, concurrency=2),
    ):
        yield ToolCaller(server.url)


# code.search


def test_search_finds_lines_with_context_score_and_license(served: ToolCaller) -> None:
    """Each hit has path, line, matched line, a 3-line context, a score and the MIT license."""
    answer: CodeSearchResponse = served.ask(CodeSearchRequest(repo=REPO, query="handle_request"))
    assert answer.repo == REPO
    assert len(answer.commit) == 40
    assert answer.index == "trigram"
    by_place = {(h.path, h.line_number): h for h in answer.hits}
    hit = by_place[("src/widgets/core.py", 6)]
    assert hit.matched_line == "def handle_request(request):"
    assert (hit.column, hit.match_length) == (5, 14)
    assert hit.context_span == "L5-L7"
    assert hit.context.split("\n")[1] == hit.matched_line
    assert (hit.license, hit.license_source) == ("MIT", "LICENSE")
    assert hit.language == "python"
    assert len(hit.blob) == 40
    assert answer.hits[0] == hit  # a whole-word definition ranks first
    assert [h.score for h in answer.hits] == sorted((h.score for h in answer.hits), reverse=True)
    paths = {h.path for h in answer.hits}
    assert "assets/logo.png" not in paths  # binary
    assert "big/data.txt" not in paths  # above max_blob_bytes
    assert not {"link_inside", "link_outside"} & paths  # symlinks are not searched
    assert ("notes/latin1.txt", 1) in by_place
    assert by_place[("notes/latin1.txt", 1)].encoding == "latin-1"


def test_search_answers_are_deterministic(served: ToolCaller) -> None:
    """The same request against the same commit gives the same hits in the same order."""
    request = CodeSearchRequest(repo=REPO, query="request", max_results=25)
    first, second = served.ask(request), served.ask(request)
    assert msgspec.msgpack.encode(first.hits) == msgspec.msgpack.encode(second.hits)
    keys = [(-h.score, h.path, h.line_number) for h in first.hits]
    assert keys == sorted(keys)


def test_search_filters_by_path_language_and_extension(served: ToolCaller) -> None:
    """Path globs, languages and extensions narrow the files searched."""

    def paths(**filters: object) -> set[str]:
        request = CodeSearchRequest(repo=REPO, query="handle_request", **filters)  # type: ignore[arg-type]
        return {h.path for h in served.ask(request).hits}

    assert paths(path="src") == {"src/widgets/core.py", "src/widgets/util.py"}
    assert paths(path="**/util.py") == {"src/widgets/util.py"}
    assert paths(language="c") == {"lib/legacy.c"}
    assert paths(extensions=(".md", ".txt")) == {"README.md", "notes/latin1.txt"}


def test_regex_search_with_case_folding(served: ToolCaller) -> None:
    """A regular expression matches per line; ignore_case folds case."""
    answer = served.ask(CodeSearchRequest(repo=REPO, query=r"^def \w+\(", regex=True))
    assert {(h.path, h.matched_line) for h in answer.hits} == {
        ("src/widgets/core.py", "def handle_request(request):"),
        ("src/widgets/core.py", "def dispatch(payload):"),
        ("src/widgets/parser.py", "def parse(data=b''):"),
        ("src/widgets/util.py", "def retry(request, attempts=3):"),
        ("tests/test_parser.py", "def test_parse():"),
    }
    assert served.ask(CodeSearchRequest(repo=REPO, query="CAFÉ")).hits == ()
    folded = served.ask(CodeSearchRequest(repo=REPO, query="HANDLE_REQUEST(", ignore_case=True))
    assert {h.path for h in folded.hits} >= {"src/widgets/core.py", "lib/legacy.c"}


def test_a_hostile_regex_answers_promptly(served: ToolCaller) -> None:
    """`(a+)+$` against a 5000-character line answers (RE2 is linear), with cut lines."""
    request = CodeSearchRequest(repo=REPO, query="(a+)+$", regex=True, path="hostile.txt")
    answer = served.ask(request)
    assert answer.index == "scan"
    (hit,) = answer.hits
    assert hit.line_number == 2
    assert hit.line_truncated
    assert len(hit.matched_line) == 400
    assert hit.context_span is None  # the line alone is longer than the context bound


def test_max_results_and_truncation(served: ToolCaller) -> None:
    """max_results bounds the hits; more matches set `truncated`; above the ceiling is refused."""
    answer = served.ask(CodeSearchRequest(repo=REPO, query="line", max_results=5))
    assert len(answer.hits) == 5
    assert answer.truncated
    assert answer.total_count >= 5
    refusal = served.refusal(CodeSearchRequest(repo=REPO, query="line", max_results=31))
    assert refusal.code == ErrorCode.LIMIT_EXCEEDED
    assert refusal.details == {"field": "max_results", "limit": 30, "value": 31}


def test_search_at_an_older_revision_uses_an_on_demand_index(
    served: ToolCaller, tool_cache: ToolCache
) -> None:
    """A pinned revision without a stored index is indexed on demand and searched exactly."""
    older = served.ask(
        CodeSearchRequest(repo=REPO, query="def parse", revision=tool_cache.commits[1])
    )
    assert older.commit == tool_cache.commits[1]
    assert older.index == "on-demand"
    assert [h.matched_line for h in older.hits] == ["def parse():"]
    assert (
        served.ask(
            CodeSearchRequest(repo=REPO, query="def parse", revision=tool_cache.initial)
        ).hits
        == ()
    )


def test_context_grows_to_five_lines(served: ToolCaller) -> None:
    """context_lines 5 gives two lines on each side; outside 3..5 is INVALID_REQUEST."""
    answer = served.ask(CodeSearchRequest(repo=REPO, query="payload = json", context_lines=5))
    (hit,) = answer.hits
    assert hit.context_span == f"L{hit.line_number - 2}-L{hit.line_number + 2}"
    refusal = served.refusal(CodeSearchRequest(repo=REPO, query="x", context_lines=6))
    assert refusal.code == ErrorCode.INVALID_REQUEST
    assert refusal.details["field"] == "context_lines"


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({"query": "(a)\\1", "regex": True}, "query"),
        ({"query": "x", "language": "klingon"}, "language"),
        ({"query": "x", "path": "../outside"}, "path"),
        ({"query": "x", "path": "/etc"}, "path"),
    ],
)
def test_bad_search_requests_name_the_field(
    served: ToolCaller, request_fields: dict[str, object], field: str
) -> None:
    """Invalid patterns, unknown languages and escaping globs are INVALID_REQUEST."""
    refusal = served.refusal(CodeSearchRequest(repo=REPO, **request_fields))  # type: ignore[arg-type]
    assert refusal.code == ErrorCode.INVALID_REQUEST
    assert refusal.details["field"] == field


def test_an_unlicensed_repository_needs_consent(served: ToolCaller) -> None:
    """No license: LICENSE_UNAVAILABLE, unless require_license is false (then NOASSERTION)."""
    request = CodeSearchRequest(repo="acme/unlicensed", query="handle_request")
    assert served.refusal(request).code == ErrorCode.LICENSE_UNAVAILABLE
    answer = served.ask(msgspec.structs.replace(request, require_license=False))
    assert [(h.license, h.license_source) for h in answer.hits] == [("NOASSERTION", "none")]


# code.read


def test_read_returns_an_exact_line_range(served: ToolCaller, tool_cache: ToolCache) -> None:
    """The excerpt is exactly lines start..end, with span, blob, size, encoding and license."""
    answer: CodeReadResponse = served.ask(
        CodeReadRequest(repo=REPO, path="src/widgets/core.py", start_line=6, end_line=9)
    )
    assert answer.commit == tool_cache.head
    assert answer.content == "\n".join(
        ["def handle_request(request):", '    """Answer one request."""',
         "    payload = json.loads(request.body)", "    return dispatch(payload)"]
    )  # fmt: skip
    assert (answer.span, answer.total_lines, answer.next_start_line) == ("L6-L9", 13, 10)
    assert not answer.truncated
    assert (answer.kind, answer.encoding, answer.binary, answer.language) == (
        "file", "utf-8", False, "python"
    )  # fmt: skip
    assert answer.size == len(CORE_PY)
    assert answer.license == "MIT"
    assert answer.swhid is not None
    assert answer.swhid.startswith(f"swh:1:cnt:{answer.blob};")
    assert ";lines=6-9" in answer.swhid


def test_read_is_bounded_and_says_where_to_continue(served: ToolCaller) -> None:
    """Past the character bound the excerpt stops at a line boundary and is truncated."""
    answer = served.ask(CodeReadRequest(repo=REPO, path="long.txt", start_line=1, end_line=50))
    assert answer.truncated
    last = int(answer.span.split("-L")[1])
    assert answer.next_start_line == last + 1
    assert len(answer.content) <= 1000
    assert answer.content.split("\n")[-1].startswith(f"line {last:03d} ")
    default = served.ask(CodeReadRequest(repo=REPO, path="README.md"))
    assert (default.span, default.next_start_line) == ("L1-L3", None)


def test_read_of_binary_large_and_latin1_files(served: ToolCaller) -> None:
    """Binary and over-large blobs give metadata only; Latin-1 text is decoded losslessly."""
    binary = served.ask(CodeReadRequest(repo=REPO, path="assets/logo.png"))
    assert (binary.binary, binary.content) == (True, None)
    assert binary.size == len(BASE_FILES["assets/logo.png"])
    large = served.ask(CodeReadRequest(repo=REPO, path="big/data.txt"))
    assert (large.too_large, large.content) == (True, None)
    assert large.size > MAX_BLOB_BYTES
    latin = served.ask(CodeReadRequest(repo=REPO, path="notes/latin1.txt"))
    assert (latin.encoding, latin.content) == ("latin-1", "café handle_request\nnaïve")


def test_symlinks_give_their_target_never_its_content(served: ToolCaller) -> None:
    """A link inside the tree names its in-tree target; one pointing outside gives no content."""
    inside = served.ask(CodeReadRequest(repo=REPO, path="link_inside"))
    assert (inside.kind, inside.content) == ("symlink", None)
    assert inside.symlink_target == "src/widgets/core.py"
    assert inside.symlink_resolved == "src/widgets/core.py"
    outside = served.ask(CodeReadRequest(repo=REPO, path="link_outside"))
    assert (outside.kind, outside.content, outside.symlink_resolved) == ("symlink", None, None)
    assert outside.symlink_target == "../../../etc/passwd"


@pytest.mark.parametrize(
    "path",
    ["../../etc/passwd", "/etc/passwd", "src/../LICENSE", "./README.md", "src//widgets",
     "README.md\x00"],
)  # fmt: skip
def test_path_traversal_is_refused(served: ToolCaller, path: str) -> None:
    """Paths that could leave the tree are INVALID_REQUEST naming `path`, before any lookup."""
    refusal = served.refusal(CodeReadRequest(repo=REPO, path=path))
    assert refusal.code == ErrorCode.INVALID_REQUEST
    assert refusal.details["field"] == "path"


def test_missing_paths_and_links_inside_paths_are_not_found(served: ToolCaller) -> None:
    """An absent path, or one that goes through a symlink, is NOT_FOUND; a directory is invalid."""
    assert served.refusal(CodeReadRequest(repo=REPO, path="nope.py")).code == ErrorCode.NOT_FOUND
    backslashed = CodeReadRequest(repo=REPO, path="src\\widgets\\core.py")
    assert served.refusal(backslashed).code == ErrorCode.NOT_FOUND  # a name, not a separator
    through_link = served.refusal(CodeReadRequest(repo=REPO, path="link_outside/shadow"))
    assert through_link.code == ErrorCode.NOT_FOUND
    assert through_link.details["blocked_by"] == "symlink"
    directory = served.refusal(CodeReadRequest(repo=REPO, path="src"))
    assert (directory.code, directory.details["kind"]) == (ErrorCode.INVALID_REQUEST, "directory")


def test_read_ranges_are_checked(served: ToolCaller) -> None:
    """Too many lines is LIMIT_EXCEEDED; reversed or out-of-file ranges are INVALID_REQUEST."""
    too_many = served.refusal(
        CodeReadRequest(repo=REPO, path="long.txt", start_line=1, end_line=51)
    )
    assert (too_many.code, too_many.details["limit"]) == (ErrorCode.LIMIT_EXCEEDED, 50)
    reversed_ = served.refusal(
        CodeReadRequest(repo=REPO, path="long.txt", start_line=5, end_line=4)
    )
    assert (reversed_.code, reversed_.details["field"]) == (ErrorCode.INVALID_REQUEST, "end_line")
    past = served.refusal(CodeReadRequest(repo=REPO, path="README.md", start_line=9))
    assert (past.code, past.details["total_lines"]) == (ErrorCode.INVALID_REQUEST, 3)
    zero = served.refusal(CodeReadRequest(repo=REPO, path="README.md", start_line=0))
    assert zero.code == ErrorCode.INVALID_REQUEST


# code.list


def test_list_gives_entries_with_types_and_sizes(served: ToolCaller) -> None:
    """The root's entries come in name order with type and size."""
    answer: CodeListResponse = served.ask(CodeListRequest(repo=REPO, max_entries=50))
    entries = {e.name: e for e in answer.entries}
    assert [e.name for e in answer.entries] == sorted(entries)
    assert entries["src"].type == "directory"
    assert entries["README.md"].type == "file"
    assert entries["README.md"].size == len(str(BASE_FILES["README.md"]))
    assert (entries["link_outside"].type, entries["link_outside"].size) == ("symlink", 19)
    assert not answer.truncated
    assert answer.total == len(answer.entries)


def test_recursive_listing_is_capped(served: ToolCaller) -> None:
    """Recursive listings are depth first and stop at max_entries with `truncated`."""
    answer = served.ask(CodeListRequest(repo=REPO, path="src", recursive=True))
    paths = [e.path for e in answer.entries]
    assert paths[:3] == ["src/widgets", "src/widgets/__init__.py", "src/widgets/core.py"]
    assert "src/widgets/helpers/a.py" in paths
    capped = served.ask(CodeListRequest(repo=REPO, recursive=True, max_entries=5))
    assert (len(capped.entries), capped.truncated) == (5, True)
    over = served.refusal(CodeListRequest(repo=REPO, max_entries=51))
    assert over.code == ErrorCode.LIMIT_EXCEEDED


def test_list_refuses_files_and_traversal(served: ToolCaller) -> None:
    """Listing a file is INVALID_REQUEST; so is a path that leaves the tree."""
    assert served.refusal(CodeListRequest(repo=REPO, path="README.md")).code == (
        ErrorCode.INVALID_REQUEST
    )
    assert served.refusal(CodeListRequest(repo=REPO, path="..")).code == ErrorCode.INVALID_REQUEST
    assert served.refusal(CodeListRequest(repo=REPO, path="no/such")).code == ErrorCode.NOT_FOUND


# git.history and git.churn


def test_history_lists_recent_commits_classified(served: ToolCaller, tool_cache: ToolCache) -> None:
    """The window ends at the pinned commit; commits come newest first, classified, capped."""
    answer: GitHistoryResponse = served.ask(GitHistoryRequest(repo=REPO, since_days=7))
    assert [c.hash for c in answer.commits] == list(reversed(tool_cache.commits[-3:]))
    assert [c.classification for c in answer.commits] == ["refactor", "test", "docs"]
    assert [c.classification_source for c in answer.commits] == [
        "heuristic", "heuristic", "conventional"
    ]  # fmt: skip
    newest = answer.commits[0]
    assert newest.message_truncated
    assert len(newest.message) == 60
    assert (newest.files_touched_total, len(newest.files_touched), newest.files_truncated) == (
        5, 3, True
    )  # fmt: skip
    assert newest.files_touched == ("lib/helpers.h", "src/widgets/helpers/a.py",
                                    "src/widgets/helpers/b.py")  # fmt: skip
    assert answer.window_end is not None
    assert answer.window_start is not None
    assert (answer.window_end - answer.window_start).days == 7


def test_history_limit_and_revision(served: ToolCaller, tool_cache: ToolCache) -> None:
    """`limit` caps the commits with `truncated`; a revision moves the window."""
    capped = served.ask(GitHistoryRequest(repo=REPO, since_days=365, limit=2))
    assert (len(capped.commits), capped.truncated) == (2, True)
    old = served.ask(GitHistoryRequest(repo=REPO, revision=tool_cache.commits[2], since_days=365))
    assert [c.classification for c in old.commits] == ["fix", "feature", "other"]
    assert old.commits[1].scope == "parser"
    assert old.commits[-1].files_touched_total == len(BASE_FILES)
    over = served.refusal(GitHistoryRequest(repo=REPO, limit=201))
    assert (over.code, over.details["field"]) == (ErrorCode.LIMIT_EXCEEDED, "limit")


def test_churn_ranks_modules_by_commits_then_lines(served: ToolCaller) -> None:
    """Modules (directories at `depth`) are ranked by commit count, then lines changed."""
    answer: GitChurnResponse = served.ask(GitChurnRequest(repo=REPO, time_window="1m", depth=2))
    assert answer.commits_examined == 6
    ranked = [(m.path, m.commit_count) for m in answer.modules]
    assert ranked[0] == ("src/widgets", 4)
    assert dict(ranked)["docs"] == 1
    widgets = answer.modules[0]
    assert widgets.lines_changed == widgets.lines_added + widgets.lines_deleted > 0
    week = served.ask(GitChurnRequest(repo=REPO, time_window="7d", lines=False))
    assert week.commits_examined == 3
    assert {m.path: m.commit_count for m in week.modules} == {
        "docs": 1, "tests": 1, "src": 1, "lib": 1
    }  # fmt: skip
    assert all(m.lines_changed == 0 for m in week.modules)


def test_churn_windows_are_checked(served: ToolCaller) -> None:
    """Windows above the ceiling are LIMIT_EXCEEDED; malformed ones INVALID_REQUEST."""
    over = served.refusal(GitChurnRequest(repo=REPO, time_window="2y"))
    assert (over.code, over.details["field"]) == (ErrorCode.LIMIT_EXCEEDED, "time_window")
    bad = served.refusal(GitChurnRequest(repo=REPO, time_window="7 days"))
    assert (bad.code, bad.details["field"]) == (ErrorCode.INVALID_REQUEST, "time_window")
    deep = served.refusal(GitChurnRequest(repo=REPO, depth=4))
    assert (deep.code, deep.details["field"]) == (ErrorCode.LIMIT_EXCEEDED, "depth")


# repo.status


def test_status_reports_the_mirror_state(served: ToolCaller, tool_cache: ToolCache) -> None:
    """Head, sync time, index state and license as the mirror published them; with no mirror
    service running, nothing watches and no next sync is promised."""
    answer: RepoStatusResponse = served.ask(RepoStatusRequest(repo="widgets"))
    assert (answer.repo, answer.head, answer.default_ref) == (
        REPO,
        tool_cache.head,
        "refs/heads/main",
    )
    assert answer.indexed
    assert answer.code_search_indexed
    assert answer.indexed_commit == tool_cache.head
    assert (answer.license, answer.license_source) == ("MIT", "LICENSE")
    assert answer.sync_interval_seconds == 3600
    assert (answer.is_watching, answer.next_sync_in_seconds) == (False, None)
    assert answer.next_regeneration_in_seconds is None
    assert answer.synced_at is not None
    assert (answer.docs_out_of_date, answer.docs_commit) == (5, None)


# names that are not UTF-8


def test_a_name_that_is_not_utf8_is_shown_and_found_by_its_shown_text(served: ToolCaller) -> None:
    """A Latin-1 path is listed, searched, read, in history and churn as U+FFFD text, and the
    path an answer shows reads the file."""
    repo = "acme/names"
    listed: CodeListResponse = served.ask(CodeListRequest(repo=repo, recursive=True))
    assert NOT_UTF8_SHOWN in {e.path for e in listed.entries}
    found: CodeSearchResponse = served.ask(CodeSearchRequest(repo=repo, query="caf("))
    assert [h.path for h in found.hits] == [NOT_UTF8_SHOWN]
    read: CodeReadResponse = served.ask(CodeReadRequest(repo=repo, path=found.hits[0].path))
    assert read.content == "int caf(void) { return 2; }"
    assert read.swhid is not None
    assert ";path=/caf%E9/men%FC.c;" in read.swhid  # the bytes git stores, not U+FFFD
    research: RepoReaderResponse = served.ask(
        RepoReaderRequest(query="caf", repo_constraints=RepoConstraints(allowlist=(repo,)))
    )
    assert [(a.path, ";path=/caf%E9/men%FC.c;" in a.swhid) for a in research.artifacts] == [
        (NOT_UTF8_SHOWN, True)
    ]
    entity: GraphRetrieveResponse = served.ask(
        GraphRetrieveRequest(repo=repo, entity_ids=(f"{NOT_UTF8_SHOWN}:caf",))
    )
    assert entity.entities[0].swhid is not None
    assert ";path=/caf%E9/men%FC.c;" in entity.entities[0].swhid
    history: GitHistoryResponse = served.ask(GitHistoryRequest(repo=repo))
    assert history.commits[0].files_touched == (NOT_UTF8_SHOWN,)
    churn: GitChurnResponse = served.ask(GitChurnRequest(repo=repo, time_window="1y"))
    assert "caf\ufffd" in {m.path for m in churn.modules}
    status: RepoStatusResponse = served.ask(RepoStatusRequest(repo=repo))
    assert status.indexed


# policy shared by every capability

ALL_TOOLS = [
    lambda repo: CodeSearchRequest(repo=repo, query="x"),
    lambda repo: CodeReadRequest(repo=repo, path="README.md"),
    lambda repo: CodeListRequest(repo=repo),
    lambda repo: GitHistoryRequest(repo=repo),
    lambda repo: GitChurnRequest(repo=repo),
    lambda repo: RepoStatusRequest(repo=repo),
]
TOOL_IDS = ["search", "read", "list", "history", "churn", "status"]


@pytest.mark.parametrize("make", ALL_TOOLS, ids=TOOL_IDS)
@pytest.mark.parametrize(
    ("repo", "code", "reason"),
    [
        ("stranger/unknown", ErrorCode.ACCESS_DENIED, "not-registered"),
        ("acme/secret-sauce", ErrorCode.ACCESS_DENIED, "policy"),
        ("dup", ErrorCode.AMBIGUOUS_REPOSITORY, None),
        ("acme/pending", ErrorCode.REPO_NOT_FOUND, None),
    ],
)
def test_only_registered_mirrored_repositories_are_reachable(
    served: ToolCaller, make: object, repo: str, code: ErrorCode, reason: str | None
) -> None:
    """Unregistered or denied repos are ACCESS_DENIED, ambiguous names and unsynced ones refused."""
    refusal = served.refusal(make(repo))  # type: ignore[operator]
    assert refusal.code == code
    if reason is not None:
        assert refusal.details["reason"] == reason


@pytest.mark.parametrize("make", ALL_TOOLS[:5], ids=TOOL_IDS[:5])
def test_unknown_revisions_are_refused(served: ToolCaller, make: object) -> None:
    """A revision that names no commit is REVISION_NOT_FOUND for every pinned tool."""
    request = msgspec.structs.replace(make(REPO), revision="no-such-branch")  # type: ignore[operator]
    assert served.refusal(request).code == ErrorCode.REVISION_NOT_FOUND


@pytest.mark.parametrize(
    ("subject", "payload"),
    [
        ("repo_reader.v1.code.search", b'{"repo": "acme/widgets", "query": "x", "max_result": 3}'),
        ("repo_reader.v1.code.read", b'{"repo": "acme/widgets", "path": "README.md", "lines": 3}'),
        ("repo_reader.v1.code.list", b'{"repo": "acme/widgets", "recursive": "yes"}'),
        ("repo_reader.v1.git.history", b'{"repo": "acme/widgets", "since": 3}'),
        ("repo_reader.v1.git.churn", b'{"repo": "acme/widgets", "window": "7d"}'),
        ("repo_reader.v1.repo.status", b'{"repo": "acme/widgets", "verbose": true}'),
    ],
)
def test_misspelt_fields_are_never_ignored(
    served: ToolCaller, subject: str, payload: bytes
) -> None:
    """A JSON request with an unknown field or a wrong type is INVALID_REQUEST naming the field."""

    async def ask() -> ErrorReply:
        nc = await nats.connect(served.url)
        try:
            reply = await nc.request(subject, payload, timeout=30)
        finally:
            await nc.close()
        return msgspec.json.decode(reply.data, type=ErrorReply)

    (error,) = asyncio.run(ask()).errors
    assert error.code == ErrorCode.INVALID_REQUEST
    assert error.details["field"] in payload.decode()


def test_json_clients_get_json_answers(served: ToolCaller) -> None:
    """The same answer decodes from JSON as from MessagePack."""
    request = CodeReadRequest(repo=REPO, path="README.md")
    as_json, as_msgpack = served.ask(request, json=True), served.ask(request)
    assert msgspec.structs.replace(as_json, request_id="") == msgspec.structs.replace(
        as_msgpack, request_id=""
    )


# configuration: disabled capabilities, shared rate limits, the time budget

LIMITED_CONFIG = """
[capabilities.code_read]
enabled = false

[capabilities.repo_status]
rate_per_minute = 3
"""


@pytest.fixture(scope="module")
def limited(
    tool_cache: ToolCache, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ToolCaller]:
    """Two workers whose config disables code.read, limits repo.status, leaves no time budget."""
    config = tmp_path_factory.mktemp("limited") / "repo-reader.toml"
    base = tool_cache.cache.config_file.read_text()
    assert "[server]\n" in base
    base = base.replace("[server]\n", "[server]\nrequest_timeout_seconds = 0.000001\n")
    config.write_text(LIMITED_CONFIG + "\n" + base)
    env = {"REPO_READER_CONFIG": str(config)}
    with (
        EmbeddedNats() as server,
        WorkerProcess(tool_cache.cache.root, server.url, env=env),
        WorkerProcess(tool_cache.cache.root, server.url, env=env),
    ):
        yield ToolCaller(server.url)


def test_a_disabled_capability_says_so(limited: ToolCaller) -> None:
    """A capability turned off in repo-reader.toml answers CAPABILITY_DISABLED."""
    refusal = limited.refusal(CodeReadRequest(repo=REPO, path="README.md"))
    assert refusal.code == ErrorCode.CAPABILITY_DISABLED
    assert refusal.details["capability"] == "code.read"


def test_two_workers_share_one_rate_limit(limited: ToolCaller) -> None:
    """Thirty concurrent requests to two workers: exactly the budget of 3 is admitted."""
    if time.time() % 60 > 50:  # keep the burst inside one minute
        time.sleep(61 - time.time() % 60)
    results = limited.many([RepoStatusRequest(repo=REPO) for _ in range(30)])
    admitted = [r for r in results if isinstance(r, RepoStatusResponse)]
    refused = [r for r in results if not isinstance(r, RepoStatusResponse)]
    assert len(admitted) == 3
    assert {r.code for r in refused} == {ErrorCode.RATE_LIMITED}
    assert all(0 < r.details["retry_after_seconds"] <= 60 for r in refused)
    served_by = asyncio.run(status_requests_per_worker(limited.url))
    assert len(served_by) == 2
    assert min(served_by.values()) > 0  # both workers took part


async def status_requests_per_worker(url: str) -> dict[str, int]:
    """repo.status requests each worker instance received, from the micro service stats."""
    nc = await nats.connect(url)
    inbox = nc.new_inbox()
    subscription = await nc.subscribe(inbox)
    await nc.publish("$SRV.STATS.repo_reader", b"", reply=inbox)
    counts: dict[str, int] = {}
    try:
        while True:
            stats = json.loads((await subscription.next_msg(timeout=1)).data)
            counts[stats["id"]] = sum(
                e["num_requests"] for e in stats["endpoints"] if e["name"] == "repo_status"
            )
    except nats.errors.TimeoutError:
        pass
    await nc.close()
    return counts


def test_work_past_the_time_budget_is_a_timeout(limited: ToolCaller) -> None:
    """A search that cannot finish within the request's time budget is TIMEOUT with progress."""
    refusal = limited.refusal(CodeSearchRequest(repo=REPO, query=r"\w+", regex=True))
    assert refusal.code == ErrorCode.TIMEOUT
    assert refusal.details["stage"] == "code.search.scan"
    assert refusal.details["files_left"] > 0
