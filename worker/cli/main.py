"""The `repo-reader` command: serve, mirror, ask, the agent tools, docs, schema, provision,
quickstart."""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, NoReturn

import msgspec

from contracts.research import (
    FileConstraints,
    LicenseConstraints,
    RepoConstraints,
    RepoReaderRequest,
    ResultLimits,
)
from worker.cli.docs import add_docs_commands, run_docs_command
from worker.cli.exits import ExitCode, for_error
from worker.cli.graph import add_graph_commands
from worker.cli.mirror import add_mirror_commands, run_mirror_command
from worker.cli.options import (
    add_global_options,
    environment_help,
    resolve_global_options,
    wire_text,
)
from worker.cli.replay import add_replay_command, run_replay
from worker.cli.tools import add_tool_commands, run_tool_command
from worker.config import config_path, default_cache_dir, load_config
from worker.errors import ConfigError, ConnectionLost, RepoReaderFailure
from worker.version import product_version


class _Parser(argparse.ArgumentParser):
    """argparse, suggesting the nearest name for a misspelled subcommand or choice."""

    def error(self, message: str) -> NoReturn:
        found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if found is not None:
            choices = re.findall(r"'([^']*)'", found.group(2))
            near = difflib.get_close_matches(found.group(1), choices, n=1)
            if near:
                message += f"; did you mean {near[0]!r}?"
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(
        prog="repo-reader",
        description=__doc__,
        epilog=environment_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {product_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_serve(commands)
    add_mirror_commands(commands)
    _add_admin(commands)
    _add_ask(commands)
    add_tool_commands(commands)
    add_graph_commands(commands)
    add_docs_commands(commands)
    add_replay_command(commands)
    ready = commands.add_parser(
        "ready", help="exit 0 if the service that wrote READY_FILE is up, 4 if not"
    )
    ready.add_argument("ready_file", type=Path, metavar="READY_FILE")
    mcp = commands.add_parser("mcp", help="serve the tools over the Model Context Protocol")
    mcp.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    mcp.add_argument("--host", default="127.0.0.1")
    mcp.add_argument("--port", type=int, default=9877)
    mcp.add_argument("--ready-file", type=Path, help="written once listening (http)")
    gateway = commands.add_parser("gateway", help="serve the JSON-RPC 2.0 gateway (POST /v1/rpc)")
    gateway.add_argument("--host", default="127.0.0.1")
    gateway.add_argument("--port", type=int, default=9876)
    gateway.add_argument("--ready-file", type=Path, help="written once listening")
    commands.add_parser(
        "provision", help="create the JetStream resources workers use (as the provisioner)"
    )
    schema = commands.add_parser("schema", help="write the JSON Schemas of every message")
    schema.add_argument("--out", type=Path, help="file to write (default: stdout)")
    quickstart = commands.add_parser(
        "quickstart", help="embedded NATS + mirror + worker + one sample question"
    )
    quickstart.add_argument("path", nargs="?", type=Path, default=Path.cwd())
    quickstart.add_argument(
        "--query", default="where does the worker decode requests and answer errors"
    )
    add_global_options(parser)
    return parser


def _add_serve(commands: Any) -> None:
    serve = commands.add_parser("serve", help="run a worker")
    serve.add_argument(
        "--concurrency", type=int, default=os.environ.get("REPO_READER_CONCURRENCY", "2")
    )
    serve.add_argument(
        "--require-sandbox",
        action="store_true",
        help="refuse to start outside a confined container",
    )
    serve.add_argument("--ready-file", type=Path, help="written once subscribed, removed on drain")
    serve.add_argument(
        "--scratch", type=Path, help="where on-demand indexes may spill (e.g. a tmpfs)"
    )


def _add_admin(commands: Any) -> None:
    admin = commands.add_parser("admin", help="ask the mirror service to sync or re-index")
    admin_commands = admin.add_subparsers(dest="admin_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--timeout", type=float, default=3600.0)
    sync = admin_commands.add_parser("sync", parents=[common], help="sync now")
    sync.add_argument("names", nargs="*", metavar="OWNER/NAME")
    rebuild = admin_commands.add_parser(
        "rebuild-index", parents=[common], help="index a repository again"
    )
    rebuild.add_argument("name", metavar="OWNER/NAME")
    rebuild.add_argument("--revision", help="commit sha, tag or branch (default: mirrored head)")


def _add_ask(commands: Any) -> None:
    ask = commands.add_parser("ask", help="send a research request and print the artifacts")
    ask.add_argument("query", type=wire_text)
    ask.add_argument(
        "--repo", action="append", dest="repos", metavar="OWNER/NAME", help="repeatable"
    )
    ask.add_argument(
        "--revision", action="append", default=[], metavar="OWNER/NAME=REV", help="repeatable"
    )
    ask.add_argument("--ext", action="append", dest="extensions", metavar=".EXT", help="repeatable")
    ask.add_argument("--max-excerpts", type=int)
    ask.add_argument("--max-chars", type=int)
    ask.add_argument(
        "--license",
        action="append",
        dest="licenses",
        metavar="SPDX",
        help="allowed license, repeatable",
    )
    ask.add_argument("--no-require-license", action="store_true")
    ask.add_argument("--timeout", type=float, default=30.0)


LIFTED_BY_FLAG: Final = {
    "license_constraints.require_license": "--no-require-license",
    "require_license": "--no-require-license",
}
"""The command-line flag for the request field that lifts a refusal (its `lifted_by`)."""


class OutputError(Exception):
    """The output file could not be written."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; exit codes as in `worker.cli.exits`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    resolve_global_options(parser, args)
    from worker.logs import configure_logging
    from worker.service.interrupts import interrupted, second_interrupt_exits

    configure_logging(args.log_level)
    second_interrupt_exits()
    cache = args.cache or default_cache_dir()
    try:
        return int(_run(args, cache))
    except ConfigError as exc:
        print(f"repo-reader: config error: {exc}", file=sys.stderr)
        return ExitCode.INVALID_ARGUMENTS
    except RepoReaderFailure as exc:
        if getattr(args, "json", False):
            error = {"code": exc.wire_code, "message": exc.message, "details": exc.details}
            print(json.dumps({"error": error}, default=str))
        print(f"repo-reader: {exc.wire_code}: {exc.message}", file=sys.stderr)
        if exc.details:
            print(
                f"  details: {json.dumps(exc.details, sort_keys=True, default=str)}",
                file=sys.stderr,
            )
        flag = LIFTED_BY_FLAG.get(str(exc.details.get("lifted_by")))
        if flag is not None:
            print(f"  hint: {flag} accepts unlicensed sources", file=sys.stderr)
        return for_error(exc.code)
    except msgspec.ValidationError as exc:
        print(f"repo-reader: invalid arguments: {exc}", file=sys.stderr)
        return ExitCode.INVALID_ARGUMENTS
    except ConnectionLost as exc:
        print(f"repo-reader: {exc}", file=sys.stderr)
        return ExitCode.SERVICE_ERROR
    except OutputError as exc:
        print(f"repo-reader: cannot write the output: {exc}", file=sys.stderr)
        return ExitCode.IO_ERROR
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say, and no one to say it to.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.IO_ERROR
    except (TimeoutError, _nats_errors()) as exc:
        print(f"repo-reader: the service is unreachable: {exc}", file=sys.stderr)
        return ExitCode.SERVICE_ERROR
    except OSError as exc:
        if exc.filename is None:  # a socket's: connecting failed
            print(f"repo-reader: the service is unreachable: {exc}", file=sys.stderr)
            return ExitCode.SERVICE_ERROR
        print(f"repo-reader: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return ExitCode.IO_ERROR
    except KeyboardInterrupt:
        interrupted()  # pyarrow, for one, raises it from a handler of its own
        return ExitCode.INTERRUPTED
    finally:
        _stop_build_workers()


def _stop_build_workers() -> None:
    """Shut down the index build workers started ahead, if any, however the command ends (a
    sync that failed before its build never took them): left starting as this process goes,
    each would fail with a traceback of its own.

    A Ctrl-C while they stop ends the wait, and a second one the process (see `interrupts`).
    """
    started = sys.modules.get("worker.index.store.build_workers")  # not imported: none started
    if started is None:
        return
    from worker.service.interrupts import interrupted

    try:
        started.stop_build_workers()
    except KeyboardInterrupt:
        interrupted()


def _nats_errors() -> type[Exception]:
    from nats.errors import Error

    return Error


def _run(args: argparse.Namespace, cache: Path) -> int:
    reads_config = args.command == "serve" or (
        args.command == "mirror" and args.mirror_command != "add"
    )
    if reads_config and args.config is not None and not args.config.is_file():
        raise ConfigError(f"--config {args.config}: no such file")
    match args.command:
        case "serve":
            return _serve(args, cache)
        case "mirror":
            return run_mirror_command(args, cache)
        case "admin":
            return asyncio.run(_admin(args))
        case "ask":
            return asyncio.run(_ask(args))
        case "search" | "read" | "list" | "history" | "churn" | "status":
            return asyncio.run(run_tool_command(args))
        case "graph":
            from worker.cli.graph import run_graph_command

            text, code = asyncio.run(run_graph_command(args))
            _emit(text, args.out)
            return code
        case "docs":
            return asyncio.run(run_docs_command(args))
        case "replay":
            return asyncio.run(run_replay(args))
        case "ready":
            from worker.service.readiness import is_ready

            return ExitCode.SUCCESS if is_ready(args.ready_file) else ExitCode.SERVICE_ERROR
        case "mcp":
            from worker.gateway.serve import serve_mcp

            return serve_mcp(
                args.nats,
                transport=args.transport,
                host=args.host,
                port=args.port,
                ready_file=args.ready_file,
            )
        case "gateway":
            from worker.gateway.serve import serve_gateway

            return serve_gateway(
                args.nats, host=args.host, port=args.port, ready_file=args.ready_file
            )
        case "schema":
            return _schema(args)
        case "provision":
            return asyncio.run(_provision(args))
        case "quickstart":
            from worker.cli.quickstart import quickstart

            return quickstart(args.path, query=args.query, cache=args.cache)
    raise AssertionError(args.command)


def _emit(text: str, out: str | Path | None) -> None:
    """Print `text`, or write it to the file `out`."""
    if out is None:
        print(text)
        return
    try:
        Path(out).write_text(text + "\n")
    except OSError as exc:
        raise OutputError(f"{out}: {exc.strerror or exc}") from None


def _serve(args: argparse.Namespace, cache: Path) -> int:
    if args.require_sandbox:
        from sandbox.posture import SandboxViolation, require_sandbox

        try:
            require_sandbox(cache)
        except SandboxViolation as exc:
            print(f"repo-reader: refusing to serve outside the sandbox: {exc}", file=sys.stderr)
            return 3
    from worker.capabilities.table import Worker, serve

    config_file = config_path(cache, args.config)
    config = load_config(config_file)
    worker = Worker(config, cache, scratch_dir=args.scratch, config_file=config_file)
    asyncio.run(serve(worker, args.nats, concurrency=args.concurrency, ready_file=args.ready_file))
    return 0


async def _provision(args: argparse.Namespace) -> int:
    import nats

    from worker.service.connection import NatsCredentials
    from worker.service.provision import provision

    credentials = NatsCredentials.from_environment()
    nc = await nats.connect(
        args.nats,
        user=credentials.user,
        password=credentials.password,
        inbox_prefix=credentials.inbox_prefix,
        name="repo-reader-provision",
        max_reconnect_attempts=2,
    )
    try:
        for line in await provision(nc):
            print(f"ready: {line}")
    finally:
        await nc.close()
    return 0


async def _admin(args: argparse.Namespace) -> int:
    from contracts.admin import RebuildIndexRequest, RebuildIndexResponse, SyncRequest, SyncResponse
    from contracts.subjects import Subject
    from worker.cli.connection import connect

    async with await connect(
        args.nats, timeout=args.timeout, attempts=1, max_reconnect_attempts=2
    ) as client:
        if args.admin_command == "sync":
            request = SyncRequest(repos=tuple(args.names) if args.names else None)
            (response,) = await client.call(Subject.ADMIN_SYNC, request, SyncResponse)
            if args.json:
                print(msgspec.json.format(msgspec.json.encode(response.results)).decode())
                return 0
            for r in response.results:
                before = r.previous_head[:12] if r.previous_head else "new"
                moved = f"{before} -> {r.head[:12]}"
                print(f"{r.repo}: {moved}  objects={r.received_objects}  {r.seconds:.1f}s")
        else:
            rebuilt = RebuildIndexRequest(repo=args.name, revision=args.revision)
            (done,) = await client.call(Subject.ADMIN_REBUILD_INDEX, rebuilt, RebuildIndexResponse)
            if args.json:
                print(msgspec.json.encode(done).decode())
            else:
                print(f"{done.repo}: indexed {done.commit} in {done.seconds:.1f}s")
    return 0


async def _ask(args: argparse.Namespace) -> int:
    from nats.errors import NoServersError

    from worker.cli.connection import connect
    from worker.client import artifact_lines

    revisions = {}
    for item in args.revision:
        repo, sep, revision = item.partition("=")
        if not sep:
            raise SystemExit(f"repo-reader: --revision wants OWNER/NAME=REV, got {item!r}")
        revisions[repo] = revision
    request = RepoReaderRequest(
        query=args.query,
        repo_constraints=RepoConstraints(
            allowlist=tuple(args.repos) if args.repos else None, revisions=revisions
        ),
        file_constraints=FileConstraints(
            allowed_extensions=tuple(args.extensions) if args.extensions else None,
            max_excerpt_chars=args.max_chars,
        ),
        license_constraints=LicenseConstraints(
            allowed_licenses=tuple(args.licenses) if args.licenses else None,
            require_license=not args.no_require_license,
        ),
        result_limits=ResultLimits(max_total_excerpts=args.max_excerpts),
    )
    try:
        client = await connect(
            args.nats, timeout=args.timeout, max_reconnect_attempts=2, reconnect_time_wait=0.5
        )
    except (NoServersError, OSError) as exc:
        print(f"repo-reader: cannot reach NATS at {args.nats}: {exc}", file=sys.stderr)
        return ExitCode.SERVICE_ERROR
    async with client:
        result = await client.research(request)
    if args.json:
        document = {
            "request_id": result.request_id,
            "resolved": result.resolved,
            "omitted": result.omitted,
            "artifacts": result.artifacts,
        }
        print(msgspec.json.format(msgspec.json.encode(document)).decode())
    else:
        for r in result.resolved:
            print(f"# {r.repo} @ {r.commit} ({r.ref}) license={r.license or '-'}")
        for o in result.omitted:
            print(f"# {o.repo} left out: {o.code}")
        print()
        print(artifact_lines(result.artifacts) if result.artifacts else "no matching excerpts")
    return ExitCode.SUCCESS if result.artifacts else ExitCode.NO_RESULTS


def _schema(args: argparse.Namespace) -> int:
    from contracts.registry import json_schemas

    _emit(json.dumps(json_schemas(), indent=2, sort_keys=True), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
