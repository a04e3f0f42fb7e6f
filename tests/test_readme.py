"""The README's examples: every `repo-reader` line parses with the real CLI; the mock's runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from worker.cli.main import build_parser
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


def readme_mock_example() -> str:
    """The Python example of the README's mock section."""
    section = README.read_text().split("## A mock Repo Reader for your tests", 1)[1]
    section = section.split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return block


def test_the_mock_example_runs() -> None:
    """The mock's README example runs as written: an answer, a ceiling refused, a rate limit."""
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(readme_mock_example(), "README.md", "exec"), namespace)
    reader = namespace["reader"]
    assert isinstance(reader, MockRepoReader)
    codes = [call.error.code if call.error else None for call in reader.calls]
    assert codes == [None, "LIMIT_EXCEEDED", "RATE_LIMITED"]
