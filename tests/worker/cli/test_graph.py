"""`repo-reader graph …` as a subprocess: seed 003's JSON documents, tree text and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from tests.support.graphs import GraphCache, build_graph_cache
from tests.support.workers import PROJECT_ROOT, WorkerProcess
from worker.cli.schemas import RETRIEVE_OUTPUT, SEARCH_OUTPUT, TRAVERSE_OUTPUT
from worker.service.embedded_nats import EmbeddedNats

REPO = "acme/shop"


@pytest.fixture(scope="module")
def graph_cache(tmp_path_factory: pytest.TempPathFactory) -> GraphCache:
    """The mirrored shop."""
    return build_graph_cache(tmp_path_factory.mktemp("graphcli"))


@pytest.fixture(scope="module")
def nats_url(graph_cache: GraphCache) -> Iterator[str]:
    """A NATS server with one worker over the shop."""
    with EmbeddedNats() as server, WorkerProcess(graph_cache.cache.root, server.url):
        yield server.url


def graph(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    command, *rest = args
    return subprocess.run(
        [sys.executable, "-m", "worker.cli.main", "graph", command, "--nats", url, *rest],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_search_json_validates_against_the_seed_schema(nats_url: str) -> None:
    """`graph search --json` is seed 4.1's document, best entity first."""
    result = graph(nats_url, "search", REPO, "sum_prices", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, SEARCH_OUTPUT)
    first = document["results"][0]
    assert (first["entity_id"], first["type"], first["score"]) == (
        "shop/models.py:sum_prices",
        "function",
        1.0,
    )
    assert first["license"] == "MIT"


def test_traverse_json_and_tree(nats_url: str) -> None:
    """`graph traverse --json` is seed 4.2's document; `--format tree` its tree text."""
    result = graph(
        nats_url, "traverse", REPO, "shop/views.py:checkout", "--relation", "invoke", "--json"
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, TRAVERSE_OUTPUT)
    assert {e["target"] for e in document["subgraph"]["edges"]} == {
        "shop/models.py:Order",
        "shop/models.py:Base.save",
        "shop/models.py:sum_prices",
        "shop/views.py:refund",
    }
    tree = graph(nats_url, "traverse", REPO, "go/srv/server.go:Serve", "--format", "tree")
    assert tree.stdout.splitlines() == [
        "Serve (function) [go/srv/server.go:Serve] - go/srv/server.go:3",
        "└─[invoke]→ handle (function) [go/srv/server.go:handle] - go/srv/server.go:7",
    ]


def test_retrieve_json_validates_and_diff_reads(nats_url: str, graph_cache: GraphCache) -> None:
    """`graph retrieve --json` is seed 4.3's document; `graph diff` lists changes readably."""
    result = graph(nats_url, "retrieve", REPO, "shop/models.py:sum_prices", "--json")
    document = json.loads(result.stdout)
    jsonschema.validate(document, RETRIEVE_OUTPUT)
    assert document["entities"][0]["code"] == "def sum_prices(items):\n    return len(items)"
    diff = graph(nats_url, "diff", REPO, graph_cache.first, graph_cache.second)
    assert diff.returncode == 0, diff.stderr
    assert "added    function  shop/views.py:refund" in diff.stdout


def test_output_file(nats_url: str, tmp_path: Path) -> None:
    """--out writes the document to a file and prints nothing."""
    out = tmp_path / "found.json"
    result = graph(nats_url, "search", REPO, "Order", "--json", "--out", str(out))
    assert (result.returncode, result.stdout) == (0, "")
    jsonschema.validate(json.loads(out.read_text()), SEARCH_OUTPUT)


def test_exit_codes_for_every_failure_class(nats_url: str, tmp_path: Path) -> None:
    """1 no results, 2 bad arguments (local or refused), 3 not found, 4 unreachable, 5 I/O;
    never a traceback."""
    cases = {
        1: graph(nats_url, "search", REPO, "zzzqqqxxx", "--no-bm25"),
        2: graph(nats_url, "traverse", REPO, "shop", "--depth", "9"),
        3: graph(nats_url, "retrieve", REPO, "shop/views.py:nope"),
        4: graph("nats://127.0.0.1:1", "search", REPO, "Order", "--timeout", "2"),
        5: graph(nats_url, "search", REPO, "Order", "--out", str(tmp_path / "no" / "such" / "f")),
    }
    for code, result in cases.items():
        assert result.returncode == code, (code, result.stderr)
        assert "Traceback" not in result.stderr
    assert "INVALID_REQUEST" in cases[2].stderr
    assert "NOT_FOUND" in cases[3].stderr
    as_json = graph(nats_url, "retrieve", REPO, "shop/views.py:nope", "--json")
    assert as_json.returncode == 3
    assert json.loads(as_json.stdout)["error"]["code"] == "NOT_FOUND"
    missing_argument = graph(nats_url, "search", REPO)
    assert missing_argument.returncode == 2
    unknown_repo = graph(nats_url, "search", "stranger/repo", "x")
    assert unknown_repo.returncode == 3
