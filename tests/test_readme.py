"""The README's command examples: every `repo-reader` line parses with the real CLI."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from worker.cli.main import build_parser

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
