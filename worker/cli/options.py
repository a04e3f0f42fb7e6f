"""The options every `repo-reader` command takes, before or after its subcommand, and the
environment variables that stand in for them."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

DEFAULT_NATS_URL: Final = "nats://127.0.0.1:4222"
LOG_LEVELS: Final = ("debug", "info", "warning", "error")
NATS_SCHEMES: Final = ("nats", "tls", "ws", "wss")


def nats_url(text: str) -> str:
    """`text` if it is a NATS server URL (nats://, tls://, ws:// or wss://, with a host)."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a NATS URL: {exc}") from None
    if parts.scheme not in NATS_SCHEMES or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a NATS URL (e.g. {DEFAULT_NATS_URL}; schemes: "
            + ", ".join(NATS_SCHEMES)
            + ")"
        )
    return text


def wire_text(text: str) -> str:
    """A command-line argument as the text a request carries: UTF-8, U+FFFD for a byte that
    is not.

    Python hands over argument bytes that are not UTF-8 as lone surrogates, which no request
    can encode; the service shows such bytes of a git name as U+FFFD and finds the name again
    by it, so a path pasted from `git ls-files -z` reads the same file.
    """
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def log_level(text: str) -> str:
    """`text` in lower case, if it names a log level."""
    level = text.lower()
    if level not in LOG_LEVELS:
        choices = ", ".join(repr(c) for c in LOG_LEVELS)
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {choices})")
    return level


@dataclass(frozen=True, slots=True)
class GlobalOption:
    """One option of every command, and the environment variable it falls back to."""

    flag: str
    help: str
    env: str | None = None
    default: Any = None
    """The value without the option or the variable (None: the command works it out)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    env_read_later: bool = False
    """`env` is read where the value is used (`worker.config`, for every entry point), not
    here: None stands for "not given"."""

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


GLOBAL_OPTIONS: Final = (
    GlobalOption(
        "--nats",
        f"NATS server URL (default: {DEFAULT_NATS_URL})",
        env="REPO_READER_NATS_URL",
        default=DEFAULT_NATS_URL,
        kwargs={"type": nats_url, "metavar": "URL"},
    ),
    GlobalOption(
        "--cache",
        "cache directory (default: the user cache directory)",
        env="REPO_READER_CACHE",
        kwargs={"type": Path, "metavar": "DIR"},
        env_read_later=True,
    ),
    GlobalOption(
        "--config",
        "config file (default: <cache>/repo-reader.toml)",
        env="REPO_READER_CONFIG",
        kwargs={"type": Path, "metavar": "FILE"},
        env_read_later=True,
    ),
    GlobalOption(
        "--json",
        "print answers, and errors (on stdout), as JSON",
        default=False,
        kwargs={"action": "store_true"},
    ),
    GlobalOption(
        "--log-level",
        "one of " + ", ".join(LOG_LEVELS) + " (default: info)",
        env="REPO_READER_LOG_LEVEL",
        default="info",
        kwargs={"type": log_level, "metavar": "LEVEL"},
    ),
)

OTHER_ENVIRONMENT: Final = (
    ("REPO_READER_NATS_USER", "NATS user (e.g. orchestrator, worker)"),
    ("REPO_READER_NATS_PASSWORD", "its password"),
    ("REPO_READER_NATS_PASSWORD_FILE", "a file holding it (a container secret)"),
    ("REPO_READER_NATS_INBOX_PREFIX", "reply inbox prefix (default: _INBOX_<user>)"),
    ("REPO_READER_CONCURRENCY", "serve --concurrency (default: 2)"),
    ("REPO_READER_GATEWAY_TIMEOUT", "gateway seconds per call (default: 60)"),
)
"""Variables read with no option beside them."""

GROUP_TITLE: Final = "global options (before or after the subcommand)"


def environment_help() -> str:
    """The `--help` epilog: every environment variable the commands read."""
    rows = [(o.env, f"{o.flag}") for o in GLOBAL_OPTIONS if o.env is not None]
    rows += list(OTHER_ENVIRONMENT)
    width = max(len(name) for name, _ in rows)
    lines = [f"  {name:<{width}}  {meaning}" for name, meaning in rows]
    return "environment:\n" + "\n".join(lines)


def add_global_options(parser: argparse.ArgumentParser) -> None:
    """Give `parser` and every subcommand under it the global options.

    Their defaults are left out (SUPPRESS), so that a value given before the subcommand is
    not overwritten by the subcommand's default; `resolve_global_options` fills them in. A
    subcommand that declares one itself keeps its own, its default left out likewise.
    """
    for each in _every_parser(parser):
        group = each.add_argument_group(GROUP_TITLE)
        for option in GLOBAL_OPTIONS:
            declared = each._option_string_actions.get(option.flag)
            if declared is not None:
                declared.default = argparse.SUPPRESS
                continue
            help_ = option.help + (f" [${option.env}]" if option.env else "")
            group.add_argument(option.flag, default=argparse.SUPPRESS, help=help_, **option.kwargs)


def resolve_global_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Set each global option not given to its environment variable, else its default; a
    variable with an impossible value is an argument error (exit 2), named."""
    for option in GLOBAL_OPTIONS:
        if hasattr(args, option.dest):
            continue
        value = option.default
        from_env = os.environ.get(option.env) if option.env and not option.env_read_later else None
        if from_env:
            convert = option.kwargs.get("type", str)
            try:
                value = convert(from_env)
            except argparse.ArgumentTypeError as exc:
                parser.error(f"${option.env}: {exc}")
        setattr(args, option.dest, value)


def _every_parser(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # an alias shares its parser
                yield from _every_parser(sub)
