"""The README's examples: every `repo-reader` line parses with the real CLI; the mock's runs."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

from worker.cli.main import build_parser
from worker.config import parse_config
from worker.testing import MockRepoReader

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)
_SUBSTITUTION = re.compile(r"\$\([^)]*\)")


def readme_commands() -> list[str]:
    """Each `repo-reader …` line of the README's shell blocks, its comment and `&` dropped."""
    commands = []
    for block in _BLOCK.findall(README.read_text()):
        # A continued line is one command; a `$(...)` substitution one word.
        joined = _SUBSTITUTION.sub("VALUE", block.replace("\\\n", " "))
        for line in joined.splitlines():
            words = shlex.split(line, comments=True)
            while words and words[-1] == "&":
                words.pop()
            for i, word in enumerate(words):
                if word.endswith("repo-reader"):
                    commands.append(shlex.join(words[i + 1 :]))
                    break
    return commands


def test_the_readme_shows_commands() -> None:
    """The README's examples are found (so the test below checks something)."""
    assert len(readme_commands()) >= 20


@pytest.mark.parametrize("command", readme_commands())
def test_each_readme_command_parses(command: str) -> None:
    """Every subcommand and option a README example uses exists with that spelling."""
    build_parser().parse_args(shlex.split(command))


def readme_example(heading: str, language: str) -> str:
    """The one `language` code block of the README section under `## heading`."""
    section = README.read_text().split(f"## {heading}\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    (block,) = re.findall(rf"```{language}\n(.*?)```", section, re.S)
    return block


def test_the_mock_example_runs() -> None:
    """The mock's README example runs as written: an answer, a ceiling refused, a rate limit."""
    namespace: dict[str, object] = {"__name__": "readme_example"}
    example = readme_example("A mock Repo Reader for your tests", "python")
    exec(compile(example, "README.md", "exec"), namespace)
    reader = namespace["reader"]
    assert isinstance(reader, MockRepoReader)
    codes = [call.error.code if call.error else None for call in reader.calls]
    assert codes == [None, "LIMIT_EXCEEDED", "RATE_LIMITED"]


def test_the_config_example_loads_as_written() -> None:
    """The README's configuration example is a valid config: every key spelled as read."""
    example = readme_example("Configuration: `repo-reader.toml`", "toml")
    config = parse_config(example, source="README.md")
    assert config.repo("pallets/flask") is not None


def readme_bench_commands() -> list[tuple[str, list[str]]]:
    """Each `python -m bench.…` line of the README's shell blocks: the module and its args."""
    found = []
    for block in _BLOCK.findall(README.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if len(words) > 2 and words[1:2] == ["-m"] and words[2].startswith("bench."):
                found.append((words[2], words[3:]))
    return found


class _Parsed(Exception):
    """Raised once a bench's arguments parsed, so that nothing of the bench runs."""


def test_the_readme_shows_bench_commands() -> None:
    """The README's bench commands are found (so the test below checks something)."""
    assert len(readme_bench_commands()) >= 10


@pytest.mark.parametrize(("module", "args"), readme_bench_commands())
def test_each_readme_bench_command_parses(module: str, args: list[str]) -> None:
    """Every bench command the README shows names a bench and options it takes."""
    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(
        self: argparse.ArgumentParser, *given: Any, **named: Any
    ) -> argparse.Namespace:
        raise _Parsed(parse(self, *given, **named))

    with (
        patch.object(argparse.ArgumentParser, "parse_args", parse_then_stop),
        pytest.raises(_Parsed),
    ):
        importlib.import_module(module).main(args)
