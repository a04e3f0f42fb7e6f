"""The global options: before or after any subcommand, their environment variables, all
documented."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.cli.main import build_parser
from worker.cli.options import (
    GLOBAL_OPTIONS,
    environment_help,
    resolve_global_options,
    wire_text,
)

ROOT = Path(__file__).resolve().parents[3]
URL = "nats://10.0.0.9:4333"


def leaf_commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[list[str]]:
    """Every subcommand path with the least arguments it accepts (positionals filled in)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += leaf_commands(sub, (*prefix, name))
    if found or not prefix:
        return found
    words = list(prefix)
    for action in parser._actions:
        if not action.option_strings and action.nargs not in ("?", "*"):
            words.append("acme/x")
        elif action.option_strings and action.required:
            words += [action.option_strings[0], "x"]
    return [words]


COMMANDS = leaf_commands(build_parser())
GIVEN = [
    ["--nats", URL],
    ["--cache", "/c"],
    ["--config", "/c.toml"],
    ["--json"],
    ["--log-level", "DEBUG"],
]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    resolve_global_options(parser, args)
    return args


def test_every_subcommand_is_checked() -> None:
    """The walk finds the nested subcommands too (so the tests below cover them)."""
    paths = {" ".join(w for w in words if w != "acme/x") for words in COMMANDS}
    assert {"search", "mirror add --url x", "mirror serve", "admin sync", "graph diff"} <= paths
    assert len(COMMANDS) >= 25


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_global_options_before_or_after_the_subcommand(command: list[str]) -> None:
    """Each global option means the same before the subcommand as after it."""
    before = parse([word for option in GIVEN for word in option] + command)
    after = parse(command + [word for option in GIVEN for word in option])
    for args in (before, after):
        assert (args.nats, args.cache, args.config, args.json, args.log_level) == (
            URL,
            Path("/c"),
            Path("/c.toml"),
            True,
            "debug",
        )


def test_the_last_value_wins_and_defaults_fill_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value after the subcommand overrides one before it; none given: the environment,
    else the default."""
    args = parse(["--nats", "nats://a:1", "status", "acme/x", "--nats", "nats://b:2"])
    assert args.nats == "nats://b:2"
    for option in GLOBAL_OPTIONS:
        if option.env:
            monkeypatch.delenv(option.env, raising=False)
    plain = parse(["status", "acme/x"])
    assert (plain.nats, plain.cache, plain.config, plain.json, plain.log_level) == (
        "nats://127.0.0.1:4222",
        None,
        None,
        False,
        "info",
    )
    monkeypatch.setenv("REPO_READER_NATS_URL", URL)
    monkeypatch.setenv("REPO_READER_LOG_LEVEL", "Warning")
    from_env = parse(["status", "acme/x"])
    assert (from_env.nats, from_env.log_level) == (URL, "warning")
    assert parse(["status", "acme/x", "--nats", "tls://c:3"]).nats == "tls://c:3"


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--log-level", "loud", "schema"], {}),
        (["schema", "--nats", "http://example.com"], {}),
        (["schema", "--nats", "nats://host:99999"], {}),
        (["schema"], {"REPO_READER_LOG_LEVEL": "loud"}),
        (["schema"], {"REPO_READER_NATS_URL": "127.0.0.1"}),
    ],
)
def test_impossible_values_are_argument_errors(
    argv: list[str],
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A bad log level or NATS URL, given or from the environment: exit 2, the source named."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        parse(argv)
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert all(f"${name}" in error for name in env)


def environment_variables_read() -> set[str]:
    """Every REPO_READER_* variable the package reads: by name, or for a global option."""
    pattern = re.compile(r"environ\.get\(\s*\"(REPO_READER_\w+)\"")
    sources = [*ROOT.joinpath("worker").rglob("*.py"), ROOT / "sandbox" / "posture.py"]
    named = {name for path in sources for name in pattern.findall(path.read_text())}
    return named | {option.env for option in GLOBAL_OPTIONS if option.env}


def test_every_environment_variable_is_documented() -> None:
    """`--help` and the README name every variable the code reads."""
    read = environment_variables_read()
    assert {"REPO_READER_CONCURRENCY", "REPO_READER_CACHE", "REPO_READER_NATS_USER"} <= read
    help_text = build_parser().format_help()
    readme = (ROOT / "README.md").read_text()
    assert all(f"{name} " in environment_help() and name in help_text for name in read)
    assert all(f"`{name}`" in readme for name in read)


@given(st.binary(max_size=16))
def test_wire_text_is_utf8_and_keeps_what_was_utf8(raw: bytes) -> None:
    """Any argument bytes become text a request encodes; bytes that were UTF-8 stay as they were."""
    text = wire_text(os.fsdecode(raw))
    assert text == raw.decode("utf-8", "replace")
    text.encode("utf-8")
