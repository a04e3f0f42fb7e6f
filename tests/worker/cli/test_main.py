"""Tests of the `repo-reader` command line, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gitrepos import MIT_LICENSE, Content
from tests.support.workers import PROJECT_ROOT, WorkerProcess
from worker.service.embedded_nats import EmbeddedNats
from worker.version import product_version


def run(
    *args: str, cwd: Path | None = None, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), **(env or {})}
    env.pop("REPO_READER_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "worker.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def test_mirror_add_sync_and_list(tmp_path: Path, make_source: SourceFactory) -> None:
    """mirror add clones with progress on stderr; sync and list show the head and license."""
    source, head = make_source("sample")
    cache = tmp_path / "cache"
    added = run("--cache", str(cache), "mirror", "add", "acme/sample", "--url", str(source))
    assert added.returncode == 0, added.stderr
    assert "registered acme/sample" in added.stdout
    assert f"acme/sample: new {head[:12]}" in added.stdout
    assert "receiving objects" in added.stderr
    listed = run("--cache", str(cache), "mirror", "list", "--json")
    (row,) = json.loads(listed.stdout)
    assert (row["name"], row["head"], row["license"], row["indexed"]) == (
        "acme/sample",
        head,
        "MIT",
        True,
    )
    assert 0 < row["license_confidence"] <= 1
    again = run("--cache", str(cache), "mirror", "sync")
    assert f"acme/sample: unchanged {head[:12]}" in again.stdout
    assert "license=MIT (LICENSE)" in again.stdout
    table = run("--cache", str(cache), "mirror", "list")
    assert "MIT" in table.stdout


def test_mirror_is_an_operators_tool(tmp_path: Path, make_source: SourceFactory) -> None:
    """A missing path registers nothing (2); a failed first sync is unregistered again; sync
    goes on past a broken repository (4, each reported); remove unregisters; no license is
    warned about on every sync and shown by list."""
    cache = tmp_path / "cache"
    missing = run("--cache", str(cache), "mirror", "add", "acme/x", "--url", str(tmp_path / "no"))
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
    (tmp_path / "plain").mkdir()
    broken = run("--cache", str(cache), "mirror", "add", "acme/b", "--url", str(tmp_path / "plain"))
    assert broken.returncode == 4
    assert "unregistered acme/b again" in broken.stderr
    unlicensed, head = make_source("bare", {"main.py": "x = 1\n"})
    added = run("--cache", str(cache), "mirror", "add", "acme/bare", "--url", str(unlicensed))
    assert added.returncode == 0, added.stderr
    assert "no license detected for acme/bare" in added.stderr
    config = cache / "repo-reader.toml"
    config.write_text(
        config.read_text() + f'\n[[repos]]\nname = "acme/gone"\nurl = "{tmp_path / "plain"}"\n'
    )
    synced = run("--cache", str(cache), "mirror", "sync")
    assert synced.returncode == 4
    assert f"acme/bare: unchanged {head[:12]}" in synced.stdout
    assert "license=none" in synced.stdout
    assert "no license detected for acme/bare" in synced.stderr
    table = run("--cache", str(cache), "mirror", "list")
    assert "NO LICENSE" in table.stdout
    assert "sync failed: acme/gone" in synced.stderr
    assert (cache / "repos" / "acme" / "bare.git").is_dir()
    removed = run("--cache", str(cache), "mirror", "remove", "acme/bare")
    assert (removed.returncode, removed.stdout) == (0, "removed acme/bare\n")
    listed = run("--cache", str(cache), "mirror", "list", "--json")
    assert [row["name"] for row in json.loads(listed.stdout)] == ["acme/gone"]
    assert not (cache / "repos" / "acme" / "bare.git").exists()


def test_version_is_the_installed_packages() -> None:
    """--version prints the program and the version its package metadata gives."""
    shown = run("--version")
    assert (shown.returncode, shown.stdout) == (0, f"repo-reader {product_version()}\n")
    assert product_version() != "unknown"


def test_a_sync_that_fails_before_its_build_ends_without_a_traceback(tmp_path: Path) -> None:
    """A first sync that fails at once, with build workers being started ahead of its build,
    exits 4 with one error line: the workers are stopped, none fails as the process goes."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "repo-reader.toml").write_text("[mirror]\nindex_workers = 2\n")
    (tmp_path / "plain").mkdir()
    broken = run("--cache", str(cache), "mirror", "add", "acme/b", "--url", str(tmp_path / "plain"))
    assert broken.returncode == 4
    assert "sync failed: acme/b" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_build_workers_log_as_the_command_does(tmp_path: Path, make_source: SourceFactory) -> None:
    """A sync's build workers write the command's JSON log lines, in UTC, to its stderr."""
    # Enough bytes for two workers (a build of one run of STEAL_BYTES stays in-process).
    files: dict[str, Content] = {
        f"src/part_{k}.py": "".join(
            f"def handler_{k}_{i}(request):\n    return request.value + {i}\n"
            for i in range(14_000)
        )
        for k in range(12)
    }
    source, _ = make_source("large", {**files, "LICENSE": MIT_LICENSE})
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "repo-reader.toml").write_text("[mirror]\nindex_workers = 2\n")
    added = run("--cache", str(cache), "mirror", "add", "acme/large", "--url", str(source))
    assert added.returncode == 0, added.stderr
    events = [json.loads(line) for line in added.stderr.splitlines() if line.startswith("{")]
    analysed = [e for e in events if e["event"] == "search.index.worker"]
    assert analysed
    assert all(e["timestamp"].endswith("Z") for e in analysed)


def test_argument_mistakes_are_exit_2_with_a_hint(tmp_path: Path) -> None:
    """A misspelled subcommand gets a suggestion; a log level or a --config that does not
    exist is refused (2), never a traceback."""
    misspelled = run("serach", "acme/x", "q")
    assert misspelled.returncode == 2
    assert "did you mean 'search'?" in misspelled.stderr
    loud = run("--log-level", "loud", "status", "acme/x")
    assert loud.returncode == 2
    assert "invalid choice: 'loud'" in loud.stderr
    missing = run("--config", str(tmp_path / "missing.toml"), "mirror", "list")
    assert missing.returncode == 2
    assert "no such file" in missing.stderr
    assert all("Traceback" not in r.stderr for r in (misspelled, loud, missing))


def test_ask_prints_readably_and_as_json(cache: MirroredCache, make_source: SourceFactory) -> None:
    """ask prints path:span, license and excerpt, or the whole answer as JSON; the server
    named after the subcommand, before it, or by REPO_READER_NATS_URL."""
    source, head = make_source("sample")
    cache.add("acme/sample", source)
    with EmbeddedNats() as server, WorkerProcess(cache.root, server.url):
        readable = run(
            "ask", "how do I register a route", "--repo", "acme/sample", "--nats", server.url
        )
        as_json = run(
            "--nats", server.url, "--json", "ask", "load the configuration", "--max-excerpts", "2"
        )
        refused = run("ask", "the", env={"REPO_READER_NATS_URL": server.url})
    assert readable.returncode == 0, readable.stderr
    assert f"# acme/sample @ {head} (refs/heads/main) license=MIT" in readable.stdout
    assert "acme/sample:sample/routing.py:L" in readable.stdout
    assert "[MIT]" in readable.stdout
    document = json.loads(as_json.stdout)
    assert document["resolved"][0]["commit"] == head
    assert 0 < len(document["artifacts"]) <= 2
    assert refused.returncode == 2  # the server refused the arguments
    assert refused.stderr.startswith("repo-reader: REQUEST_TOO_BROAD:")


def test_ask_leaves_out_an_unlicensed_repository(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """ask over every repository leaves out one without a license and says so; asked alone,
    it is exit 2 with the flag that lifts the refusal."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    bare, _ = make_source("bare", {"routes.py": "def register_route(path):\n    return path\n"})
    cache.add("acme/bare", bare)
    with EmbeddedNats() as server, WorkerProcess(cache.root, server.url):
        every = run("ask", "register a route", "--nats", server.url)
        alone = run("ask", "register a route", "--repo", "acme/bare", "--nats", server.url)
    assert every.returncode == 0, every.stderr
    assert "# acme/bare left out: LICENSE_UNAVAILABLE" in every.stdout
    assert "acme/sample:sample/routing.py:L" in every.stdout
    assert alone.returncode == 2
    assert alone.stderr.startswith("repo-reader: LICENSE_UNAVAILABLE: no license")
    assert "hint: --no-require-license accepts unlicensed sources" in alone.stderr


def test_ask_without_a_server_fails_cleanly(tmp_path: Path) -> None:
    """ask against a server that is not there exits 4 (unreachable), no traceback."""
    result = run("ask", "router", "--nats", "nats://127.0.0.1:1", "--timeout", "2", timeout=60)
    assert result.returncode == 4
    assert "Traceback" not in result.stderr


def test_schema_writes_every_message(tmp_path: Path) -> None:
    """schema writes one JSON Schema document covering every subject."""
    out = tmp_path / "schema.json"
    assert run("schema", "--out", str(out)).returncode == 0
    document = json.loads(out.read_text())
    assert "repo_reader.v1.research" in document["x-subjects"]
    assert "RepoReaderRequest" in document["$defs"]


def test_config_mistake_is_a_clear_start_up_error(tmp_path: Path) -> None:
    """A bad repo-reader.toml stops serve at once with exit 2 and the setting named."""
    config = tmp_path / "bad.toml"
    config.write_text("[limits]\nmax_excerpts = 3\n")
    result = run(
        "--cache", str(tmp_path), "--config", str(config), "serve", "--nats", "nats://127.0.0.1:1"
    )
    assert result.returncode == 2
    assert "config error" in result.stderr
    assert "max_excerpts" in result.stderr


def test_quickstart_runs_the_whole_flow(make_source: SourceFactory) -> None:
    """quickstart on a repository mirrors it, serves it and prints an answer, with no set-up."""
    source, head = make_source("sample")
    result = run("quickstart", str(source), "--query", "register a route handler")
    assert result.returncode == 0, result.stderr
    assert f"# local/sample @ {head}" in result.stdout
    assert "sample/routing.py" in result.stdout
    assert "embedded NATS server on nats://127.0.0.1:" in result.stderr
