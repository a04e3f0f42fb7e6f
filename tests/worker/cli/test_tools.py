"""Tests of the tool subcommands (search, read, list, history, churn, status) as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support.tools import NOT_UTF8_PATH, NOT_UTF8_SHOWN, ToolCache, build_tool_cache
from tests.support.workers import PROJECT_ROOT, WorkerProcess
from worker.service.embedded_nats import EmbeddedNats

REPO = "acme/widgets"


@pytest.fixture(scope="module")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A NATS server with one worker over the tool cache."""
    tools: ToolCache = build_tool_cache(tmp_path_factory.mktemp("toolcli"))
    with EmbeddedNats() as server, WorkerProcess(tools.cache.root, server.url):
        yield server.url


def cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    command, *rest = args
    return subprocess.run(
        [sys.executable, "-m", "worker.cli.main", command, "--nats", url, *rest],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_search_prints_hits_with_numbered_context(nats_url: str) -> None:
    """search prints path:line:column, license and score, then the context marking the hit."""
    result = cli(nats_url, "search", REPO, "handle_request", "--path", "src")
    assert result.returncode == 0, result.stderr
    assert "src/widgets/core.py:6:5  [MIT]" in result.stdout
    assert ">     6  def handle_request(request):" in result.stdout
    assert "index=trigram" in result.stdout


def test_json_output_is_the_joined_answer(nats_url: str) -> None:
    """--json prints the whole answer as one JSON document."""
    result = cli(nats_url, "search", REPO, "^def \\w+", "--regex", "--json", "--max-results", "2")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["repo"] == REPO
    assert len(answer["hits"]) == 2
    assert answer["truncated"] is True


def test_read_list_history_churn_and_status(nats_url: str) -> None:
    """Each tool subcommand prints its answer readably."""
    read = cli(nats_url, "read", REPO, "src/widgets/core.py", "--start", "6", "--end", "7")
    assert "     6  def handle_request(request):" in read.stdout
    assert "# continue with --start 8" in read.stdout
    link = cli(nats_url, "read", REPO, "link_outside")
    assert "symlink -> ../../../etc/passwd" in link.stdout
    listing = cli(nats_url, "list", REPO, "src/widgets")
    assert "file" in listing.stdout
    assert "src/widgets/core.py" in listing.stdout
    history = cli(nats_url, "history", REPO, "--since-days", "7")
    assert "docs      docs: describe the parser" in history.stdout
    churn = cli(nats_url, "churn", REPO, "--window", "1m", "--depth", "2")
    top = churn.stdout.splitlines()[2].split()
    assert (top[0], top[-1]) == ("4", "src/widgets")
    status = cli(nats_url, "status", "widgets")
    assert "license:             MIT (LICENSE)" in status.stdout
    assert all(r.returncode == 0 for r in (read, link, listing, history, churn, status))


def test_a_path_with_a_control_character_is_printed_quoted(nats_url: str) -> None:
    """A name with a line break is listed, searched and read as one quoted path on its line."""
    shown = '"odd/new\\nline.txt"'
    listing = cli(nats_url, "list", REPO, "odd")
    assert listing.stdout.splitlines()[1].endswith(f"  {shown}")
    search = cli(nats_url, "search", REPO, "as git allows", "--path", "odd")
    assert f"{shown}:1:" in search.stdout
    read = cli(nats_url, "read", REPO, "odd/new\nline.txt")
    assert read.stdout.startswith(f"# {REPO}:{shown} @ ")
    assert all(r.returncode == 0 for r in (listing, search, read))


def test_a_path_argument_that_is_not_utf8_reads_the_file(nats_url: str) -> None:
    """A path given as the Latin-1 bytes git stores reads the file an answer names in U+FFFD."""
    read = cli(nats_url, "read", "acme/names", NOT_UTF8_PATH)
    assert read.returncode == 0, read.stderr
    assert read.stdout.startswith(f"# acme/names:{NOT_UTF8_SHOWN} @ ")
    assert "int caf(void) { return 2; }" in read.stdout


def test_refusals_exit_non_zero_with_the_code(nats_url: str) -> None:
    """A refused request exits with the seed's code (2: arguments, 3: not found), its error code
    and details on stderr, no traceback."""
    result = cli(nats_url, "read", REPO, "../../etc/passwd")
    assert result.returncode == 2
    assert "INVALID_REQUEST" in result.stderr
    assert '"field": "path"' in result.stderr
    assert "Traceback" not in result.stderr
    denied = cli(nats_url, "status", "stranger/repo")
    assert (denied.returncode, "ACCESS_DENIED" in denied.stderr) == (3, True)
