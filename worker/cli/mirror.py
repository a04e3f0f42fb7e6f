"""The `repo-reader mirror` commands: register, sync, remove and list repositories, or run
the mirror as a service."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.cli.exits import ExitCode
from worker.config import config_path

if TYPE_CHECKING:
    from worker.mirror.sync import Mirror, SyncResult


def add_mirror_commands(commands: Any) -> None:
    """Add `mirror` and its subcommands (add, sync, remove, list, serve)."""
    mirror = commands.add_parser(
        "mirror", help="manage the mirrored repositories (the only cache writer)"
    )
    mirror_commands = mirror.add_subparsers(dest="mirror_command", required=True)
    add = mirror_commands.add_parser("add", help="register a repository and sync it")
    add.add_argument("name", metavar="OWNER/NAME")
    add.add_argument("--url", required=True, help="clone URL or local path")
    add.add_argument("--no-sync", action="store_true", help="only register it")
    sync = mirror_commands.add_parser(
        "sync", help="fetch and index registered repositories (going on past a failure)"
    )
    sync.add_argument("names", nargs="*", metavar="OWNER/NAME")
    remove = mirror_commands.add_parser(
        "remove", help="unregister a repository and delete its mirror and index"
    )
    remove.add_argument("name", metavar="OWNER/NAME")
    mirror_commands.add_parser("list", help="show registered repositories and their state")
    serve = mirror_commands.add_parser(
        "serve", help="sync on a schedule and answer admin requests over NATS"
    )
    serve.add_argument(
        "--interval",
        type=float,
        help="seconds between scheduled syncs (default: [mirror] sync_interval_seconds; 0: none)",
    )
    serve.add_argument("--ready-file", type=Path, help="written once subscribed")


def run_mirror_command(args: argparse.Namespace, cache: Path) -> int:
    """Run a `mirror` subcommand in this process (the mirror is the cache's only writer)."""
    from worker.errors import SyncError
    from worker.mirror.sync import Mirror

    mirror = Mirror(cache, config_path(cache, args.config), progress=_print_progress)
    try:
        match args.mirror_command:
            case "add":
                try:
                    entry = mirror.add(args.name, args.url)
                except SyncError as exc:
                    print(f"repo-reader: {exc}", file=sys.stderr)
                    return ExitCode.INVALID_ARGUMENTS
                print(f"registered {entry.name} <- {entry.url}")
                if not args.no_sync:
                    try:
                        results = mirror.sync([entry.name])
                    except SyncError:
                        mirror.remove(entry.name)  # a failed add leaves nothing registered
                        print(f"unregistered {entry.name} again", file=sys.stderr)
                        raise
                    _print_sync(results)
            case "sync":
                outcomes = mirror.sync_each(args.names)
                _print_sync([o for o in outcomes if not isinstance(o, SyncError)])
                failed = [o for o in outcomes if isinstance(o, SyncError)]
                for error in failed:
                    print(f"repo-reader: sync failed: {error}", file=sys.stderr)
                return ExitCode.SERVICE_ERROR if failed else ExitCode.SUCCESS
            case "remove":
                mirror.remove(args.name)
                print(f"removed {args.name}")
            case "list":
                _print_list(mirror, as_json=args.json)
            case "serve":
                from worker.mirror.service import serve_mirror

                interval = args.interval
                if interval is None:
                    interval = float(mirror.config.mirror.sync_interval_seconds)
                asyncio.run(
                    serve_mirror(
                        mirror, args.nats, interval=interval or None, ready_file=args.ready_file
                    )
                )
    except SyncError as exc:
        print(f"repo-reader: sync failed: {exc}", file=sys.stderr)
        return ExitCode.SERVICE_ERROR
    return 0


def _warn_unlicensed(name: str) -> None:
    """Say so when no license was found: what a request for the repository will get."""
    print(
        f"repo-reader: warning: no license detected for {name}: requests over every "
        "repository leave it out, and those naming it alone are LICENSE_UNAVAILABLE, "
        "unless they accept unlicensed sources (--no-require-license; "
        "require_license = false on the wire)",
        file=sys.stderr,
    )


def _print_progress(name: str, message: str) -> None:
    print(f"{name}: {message}", file=sys.stderr, flush=True)


def _print_sync(results: Sequence[SyncResult]) -> None:
    for r in results:
        if r.previous_head is None:
            change = "new "
        elif r.previous_head == r.head:
            change = "unchanged "
        else:
            change = f"{r.previous_head[:12]}.."
        license_ = f"{r.license} ({r.license_source})" if r.license else "none"
        print(
            f"{r.repo}: {change}{r.head[:12]}  objects={r.received_objects}  "
            f"indexed in {r.index_seconds:.1f}s  total {r.seconds:.1f}s  license={license_}"
        )
        if r.license is None:
            _warn_unlicensed(r.repo)


def _print_list(mirror: Mirror, *, as_json: bool) -> None:
    rows = []
    for entry in mirror.config.repos:
        state = mirror.layout.read_state(entry.name)
        rows.append(
            {
                "name": entry.name,
                "url": entry.url,
                "head": state.head if state else None,
                "default_ref": state.default_ref if state else None,
                "synced_at": state.synced_at.isoformat() if state else None,
                "indexed": bool(state and state.indexed_commit == state.head),
                "license": state.license if state else None,
                "license_source": state.license_source if state else None,
                "license_confidence": state.license_confidence if state else None,
            }
        )
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    if not rows:
        print(
            "no repositories registered; add one with: repo-reader mirror add OWNER/NAME --url URL"
        )
    for row in rows:
        head = str(row["head"] or "not synced")[:12]
        license_ = row["license"] or ("NO LICENSE" if row["head"] else "-")
        print(
            f"{row['name']!s:<32} {head:<12} {license_!s:<20} "
            f"{row['synced_at'] or '-'}  {row['url']}"
        )
