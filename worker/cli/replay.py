"""`repo-reader replay`: send the requests a stream recorded to a stack again, and compare."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from worker.cli.exits import ExitCode


def add_replay_command(commands: Any) -> None:
    """Add `replay` to `commands` (an argparse subparsers object)."""
    replay = commands.add_parser(
        "replay", help="send recorded durable requests again; compare with an earlier replay"
    )
    replay.add_argument(
        "--from", dest="source", help="the NATS server holding the request stream (default: --nats)"
    )
    replay.add_argument("--out", help="write the answers here (JSON lines)")
    replay.add_argument("--compare", help="answers of an earlier replay: exit 1 if any differ")
    replay.add_argument("--timeout", type=float, default=60.0, help="seconds per answer")


async def run_replay(args: argparse.Namespace) -> int:
    """Replay, write and compare as asked; the exit code (1: answers differ)."""
    from pathlib import Path

    import nats

    from worker.service.connection import NatsCredentials
    from worker.service.replay import (
        differences,
        read_answers,
        recorded_requests,
        replay,
        write_answers,
    )

    credentials = NatsCredentials.from_environment()
    options = {"user": credentials.user, "password": credentials.password}
    source = await nats.connect(args.source or args.nats, **options)
    try:
        recorded = await recorded_requests(source)
    finally:
        await source.close()
    target = await nats.connect(args.nats, **options)
    try:
        answers = await replay(target, recorded, timeout=args.timeout)
    finally:
        await target.close()
    print(f"replayed {len(answers)} recorded requests against {args.nats}")
    if args.out:
        write_answers(Path(args.out), answers)
    if args.compare:
        differ = differences(answers, read_answers(Path(args.compare)))
        for request_id in differ:
            print(f"differs: {request_id}", file=sys.stderr)
        if differ:
            return ExitCode.NO_RESULTS
        print(f"identical to {args.compare}")
    return ExitCode.SUCCESS
