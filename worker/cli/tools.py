"""The agent-tool subcommands of `repo-reader`: search, read, list, history, churn, status.

Each sends one request over NATS and prints the answer readably, or as JSON with `--json`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Final

import msgspec

from contracts.code import (
    CodeListRequest,
    CodeListResponse,
    CodeReadRequest,
    CodeReadResponse,
    CodeSearchRequest,
    CodeSearchResponse,
)
from contracts.docs import DOC_TYPES
from contracts.git import GitChurnRequest, GitChurnResponse, GitHistoryRequest, GitHistoryResponse
from contracts.registry import BATCHED, MESSAGES
from contracts.repo import RepoStatusRequest, RepoStatusResponse
from contracts.subjects import Subject
from worker.cli.exits import ExitCode
from worker.cli.options import wire_text
from worker.client import shown_path
from worker.service.replies import join_batches

TOOL_COMMANDS: Final = ("search", "read", "list", "history", "churn", "status")


def add_tool_commands(commands: Any) -> None:
    """Add the six tool subcommands to `commands` (an argparse subparsers object)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--timeout", type=float, default=30.0)
    pinned = argparse.ArgumentParser(add_help=False, parents=[common])
    pinned.add_argument("repo", metavar="OWNER/NAME", type=wire_text)
    pinned.add_argument(
        "--revision", type=wire_text, help="commit sha, tag or branch (default: mirrored head)"
    )

    search = commands.add_parser("search", parents=[pinned], help="search code at a revision")
    search.add_argument("query", type=wire_text)
    search.add_argument("--regex", "-E", action="store_true", help="QUERY is an RE2 pattern")
    search.add_argument("--ignore-case", "-i", action="store_true")
    search.add_argument("--path", type=wire_text, help="directory, file or glob (`src/**/*.py`)")
    search.add_argument("--language")
    search.add_argument("--ext", action="append", dest="extensions", metavar=".EXT")
    search.add_argument("--max-results", type=int)
    search.add_argument("--context", type=int, default=3, help="context lines, 3 to 5")
    search.add_argument("--no-require-license", action="store_true")

    read = commands.add_parser("read", parents=[pinned], help="read lines of a file")
    read.add_argument("path", type=wire_text)
    read.add_argument("--start", type=int, help="first line (default 1)")
    read.add_argument("--end", type=int, help="last line, inclusive")
    read.add_argument("--no-require-license", action="store_true")

    listing = commands.add_parser("list", parents=[pinned], help="list a directory")
    listing.add_argument("path", nargs="?", default="", type=wire_text)
    listing.add_argument("--recursive", "-r", action="store_true")
    listing.add_argument("--max-entries", type=int)

    history = commands.add_parser("history", parents=[pinned], help="recent commits")
    history.add_argument("--since-days", type=int)
    history.add_argument("--limit", type=int)

    churn = commands.add_parser("churn", parents=[pinned], help="most active modules")
    churn.add_argument("--window", default="30d", help="e.g. 7d, 2w, 1m, 1y")
    churn.add_argument("--depth", type=int, default=1)
    churn.add_argument("--limit", type=int)
    churn.add_argument("--no-lines", action="store_true", help="count commits only (faster)")

    status = commands.add_parser("status", parents=[common], help="mirror state of a repository")
    status.add_argument("repo", metavar="OWNER/NAME", type=wire_text)
    status.add_argument(
        "--doc-type",
        action="append",
        dest="doc_types",
        choices=DOC_TYPES,
        help="documents whose freshness to report, repeatable (default: all allowed)",
    )


_SUBJECTS: Final[dict[str, Subject]] = {
    "search": Subject.CODE_SEARCH,
    "read": Subject.CODE_READ,
    "list": Subject.CODE_LIST,
    "history": Subject.GIT_HISTORY,
    "churn": Subject.GIT_CHURN,
    "status": Subject.REPO_STATUS,
}


def tool_request(args: argparse.Namespace) -> msgspec.Struct:
    """The request a tool subcommand's arguments describe."""
    match args.command:
        case "search":
            return CodeSearchRequest(
                repo=args.repo,
                revision=args.revision,
                query=args.query,
                regex=args.regex,
                ignore_case=args.ignore_case,
                path=args.path,
                language=args.language,
                extensions=tuple(args.extensions) if args.extensions else None,
                max_results=args.max_results,
                context_lines=args.context,
                require_license=not args.no_require_license,
            )
        case "read":
            return CodeReadRequest(
                repo=args.repo,
                revision=args.revision,
                path=args.path,
                start_line=args.start,
                end_line=args.end,
                require_license=not args.no_require_license,
            )
        case "list":
            return CodeListRequest(
                repo=args.repo,
                revision=args.revision,
                path=args.path,
                recursive=args.recursive,
                max_entries=args.max_entries,
            )
        case "history":
            return GitHistoryRequest(
                repo=args.repo, revision=args.revision, since_days=args.since_days, limit=args.limit
            )
        case "churn":
            return GitChurnRequest(
                repo=args.repo,
                revision=args.revision,
                time_window=args.window,
                depth=args.depth,
                limit=args.limit,
                lines=not args.no_lines,
            )
        case "status":
            doc_types = tuple(args.doc_types) if args.doc_types else None
            return RepoStatusRequest(repo=args.repo, doc_types=doc_types)
    raise AssertionError(args.command)


async def run_tool_command(args: argparse.Namespace) -> int:
    """Send the subcommand's request, print the answer; failures raise RepoReaderFailure."""
    from worker.cli.connection import connect

    subject = _SUBJECTS[args.command]
    response_type, items = MESSAGES[subject][1], BATCHED[subject]
    request = tool_request(args)
    async with await connect(args.nats, timeout=args.timeout) as client:
        batches = await client.call(subject, request, response_type)
    answer = join_batches(batches, items) if items else batches[0]
    if args.json:
        print(msgspec.json.format(msgspec.json.encode(answer)).decode())
    else:
        print(_PRINTERS[args.command](answer))
    empty = items is not None and not getattr(answer, items)
    return ExitCode.NO_RESULTS if empty and args.command != "list" else ExitCode.SUCCESS


def _search_text(answer: Any) -> str:
    assert isinstance(answer, CodeSearchResponse)
    more = " (more exist)" if answer.truncated else ""
    lines = [
        f"# {answer.repo} @ {answer.commit} ({answer.ref})",
        f"# {len(answer.hits)} hits of {answer.total_count} found{more}; index={answer.index}, "
        f"scanned {answer.files_scanned} of {answer.candidate_files} candidate files",
    ]
    for hit in answer.hits:
        lines.append("")
        where = f"{shown_path(hit.path)}:{hit.line_number}:{hit.column}"
        lines.append(f"{where}  [{hit.license}]  score={hit.score:g}")
        if hit.context_span is None:
            lines.append(f"  > {hit.matched_line}")
            continue
        first = int(hit.context_span[1:].split("-")[0])
        for offset, text in enumerate(hit.context.split("\n")):
            number = first + offset
            mark = ">" if number == hit.line_number else " "
            lines.append(f"{mark}{number:>6}  {text}")
    return "\n".join(lines)


def _read_text(answer: Any) -> str:
    assert isinstance(answer, CodeReadResponse)
    head = (
        f"# {answer.repo}:{shown_path(answer.path)} @ {answer.commit}  {answer.kind} "
        f"blob={answer.blob} size={answer.size}"
    )
    if answer.license:
        head += f"  [{answer.license} from {answer.license_source}]"
    lines = [head]
    if answer.kind == "symlink":
        inside = f" (in the tree: {answer.symlink_resolved})" if answer.symlink_resolved else ""
        lines.append(f"symlink -> {answer.symlink_target}{inside}")
    elif answer.binary:
        lines.append("binary file: metadata only")
    elif answer.too_large:
        lines.append("larger than the server excerpts: metadata only")
    elif answer.content is not None and answer.span is not None:
        first = int(answer.span[1:].split("-")[0])
        for offset, text in enumerate(answer.content.split("\n")):
            lines.append(f"{first + offset:>6}  {text}")
        if answer.next_start_line is not None:
            lines.append(f"# continue with --start {answer.next_start_line}")
    return "\n".join(lines)


def _list_text(answer: Any) -> str:
    assert isinstance(answer, CodeListResponse)
    lines = [f"# {answer.repo}:{shown_path(answer.path) or '/'} @ {answer.commit}"]
    lines += [f"{e.type:<10} {e.size:>10}  {shown_path(e.path)}" for e in answer.entries]
    if answer.truncated:
        lines.append(f"# truncated after {answer.total} entries")
    return "\n".join(lines)


def _history_text(answer: Any) -> str:
    assert isinstance(answer, GitHistoryResponse)
    lines = [f"# {answer.repo} @ {answer.commit} ({answer.window_start} .. {answer.window_end})"]
    for c in answer.commits:
        lines.append(
            f"{c.hash[:12]}  {c.committed_at:%Y-%m-%d}  {c.classification:<9} {c.summary}"
            f"  ({c.files_touched_total} files)"
        )
    if answer.truncated:
        lines.append("# more commits in the window; raise --limit")
    return "\n".join(lines)


def _churn_text(answer: Any) -> str:
    assert isinstance(answer, GitChurnResponse)
    cut = " (newest only)" if answer.truncated else ""
    lines = [
        f"# {answer.repo} @ {answer.commit}, {answer.time_window}: "
        f"{answer.commits_examined} commits{cut}, {answer.total_modules} modules",
        f"{'commits':>8} {'lines':>9} {'files':>6}  module",
    ]
    lines += [
        f"{m.commit_count:>8} {m.lines_changed:>9} {m.files_changed:>6}  {shown_path(m.path)}"
        for m in answer.modules
    ]
    return "\n".join(lines)


def _status_text(answer: Any) -> str:
    assert isinstance(answer, RepoStatusResponse)
    rows = [
        ("repo", answer.repo),
        ("default branch", answer.default_ref),
        ("head", answer.head),
        ("synced at", answer.synced_at),
        ("watching", answer.is_watching),
        ("next sync in", _seconds(answer.next_sync_in_seconds)),
        ("next docs in", _seconds(answer.next_regeneration_in_seconds)),
        (
            "docs out of date",
            f"{answer.docs_out_of_date} {list(answer.docs_out_of_date_types) or ''}".rstrip(),
        ),
        ("docs commit", answer.docs_commit or "-"),
        ("indexed", answer.indexed),
        ("code search indexed", answer.code_search_indexed),
        ("license", f"{answer.license or '-'} ({answer.license_source or 'none'})"),
    ]
    return "\n".join(f"{key + ':':<21}{value}" for key, value in rows)


def _seconds(value: int | None) -> str:
    return "- (no mirror service is watching)" if value is None else f"{value} s"


_PRINTERS: Final[dict[str, Callable[[Any], str]]] = {
    "search": _search_text,
    "read": _read_text,
    "list": _list_text,
    "history": _history_text,
    "churn": _churn_text,
    "status": _status_text,
}
