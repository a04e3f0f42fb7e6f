"""`repo-reader docs regenerate|show`: ask the engine to regenerate documents, read them back.

`regenerate` sends `docs.regenerate` to the mirror service (the engine decides whether to
write); `show` reads what it wrote with the ordinary read tools at `refs/repo-reader/docs`:
code.list for the documents there, code.read (page after page) for one of them.
"""

from __future__ import annotations

import argparse
from typing import Any

import msgspec

from contracts.code import CodeListRequest, CodeListResponse, CodeReadRequest, CodeReadResponse
from contracts.docs import (
    DOC_PATHS,
    DOC_TYPES,
    DOCS_REF,
    DocsRegenerateRequest,
    DocsRegenerateResponse,
)
from contracts.subjects import Subject
from worker.cli.exits import ExitCode
from worker.cli.options import wire_text
from worker.service.replies import join_batches


def add_docs_commands(commands: Any) -> None:
    """Add `docs regenerate` and `docs show` to `commands` (an argparse subparsers object)."""
    docs = commands.add_parser(
        "docs", help="regenerate documentation (the engine decides) and read it back"
    )
    docs_commands = docs.add_subparsers(dest="docs_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--timeout", type=float, default=600.0)
    common.add_argument("repo", metavar="OWNER/NAME", type=wire_text)
    regenerate = docs_commands.add_parser(
        "regenerate", parents=[common], help="ask the engine to bring documents up to date"
    )
    regenerate.add_argument(
        "--type",
        action="append",
        dest="doc_types",
        choices=DOC_TYPES,
        help="repeatable (default: every type the server allows)",
    )
    show = docs_commands.add_parser(
        "show", parents=[common], help="list the generated documents, or print one"
    )
    show.add_argument("doc_type", nargs="?", choices=DOC_TYPES, metavar="DOC_TYPE")
    show.add_argument("--no-require-license", action="store_true")


async def run_docs_command(args: argparse.Namespace) -> int:
    """Run `docs regenerate` or `docs show`; failures raise RepoReaderFailure."""
    from worker.cli.connection import connect

    async with await connect(args.nats, timeout=args.timeout, attempts=1) as client:
        if args.docs_command == "regenerate":
            request = DocsRegenerateRequest(
                repo=args.repo, doc_types=tuple(args.doc_types) if args.doc_types else None
            )
            (done,) = await client.call(Subject.DOCS_REGENERATE, request, DocsRegenerateResponse)
            print(_json(done) if args.json else _regenerated_text(done))
            return ExitCode.SUCCESS
        if args.doc_type is None:
            listing = CodeListRequest(repo=args.repo, revision=DOCS_REF, recursive=True)
            batches = await client.call(Subject.CODE_LIST, listing, CodeListResponse)
            answer = join_batches(batches, "entries")
            if args.json:
                print(_json(answer))
            else:
                print(f"# {answer.repo} @ {answer.commit} ({DOCS_REF})")
                print("\n".join(f"{e.size:>10}  {e.path}" for e in answer.entries))
            return ExitCode.SUCCESS
        pages: list[CodeReadResponse] = []
        start: int | None = 1
        while start is not None:
            read = CodeReadRequest(
                repo=args.repo,
                revision=DOCS_REF,
                path=DOC_PATHS[args.doc_type],
                start_line=start,
                require_license=not args.no_require_license,
            )
            (page,) = await client.call(Subject.CODE_READ, read, CodeReadResponse)
            pages.append(page)
            start = page.next_start_line
    if args.json:
        print(_json(pages))
    else:
        print("\n".join(page.content or "" for page in pages))
    return ExitCode.SUCCESS


def _json(value: Any) -> str:
    return msgspec.json.format(msgspec.json.encode(value)).decode()


def _regenerated_text(done: DocsRegenerateResponse) -> str:
    lines = [f"# {done.repo} @ {done.commit}: docs ref {done.docs_ref} at {done.docs_commit}"]
    for document in done.documents:
        lines.append(
            f"{document.status:<12} {document.doc_type:<15} {document.size:>9} bytes  "
            f"{document.path}  (from {document.generated_from[:12]})"
        )
    if done.reason_skipped:
        lines.append(f"skipped: {done.reason_skipped}")
    return "\n".join(lines)
