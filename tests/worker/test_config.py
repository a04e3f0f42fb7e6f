"""Tests of repo-reader.toml parsing: defaults, ceilings, and clear errors for mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.config import (
    Config,
    ConfigError,
    config_path,
    load_config,
    parse_config,
    render_repo_entry,
)


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    """No config file means the conservative defaults and no repositories."""
    config = load_config(tmp_path / "absent.toml")
    assert config == Config()
    assert config.defaults.max_total_excerpts <= config.limits.max_total_excerpts


def test_missing_file_is_an_error_when_required(tmp_path: Path) -> None:
    """An explicitly named config that does not exist is a start-up error."""
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "absent.toml", missing_ok=False)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[limits]\nmax_repo = 3\n", "unknown field `max_repo` - at `$.limits`"),
        (
            "[defaults]\nmax_repos = 100\n",
            "defaults.max_repos = 100 is above limits.max_repos = 20",
        ),
        ("[limits\n", "not valid TOML"),
        ('[[repos]]\nname = "noslash"\nurl = "/x"\n', "$.repos[0].name"),
        ("[server]\nrequest_timeout_seconds = 0\n", "$.server.request_timeout_seconds"),
        ("[mirror]\nkeep_commits = 0\n", "$.mirror.keep_commits"),
        (
            "[capabilities.code_search]\nrate_per_minute = -1\n",
            "$.capabilities.code_search.rate_per_minute",
        ),
        ("[capabilities.teleport]\nenabled = true\n", "unknown field `teleport`"),
        (
            '[[repos]]\nname = "a/b"\nurl = "x"\n[[repos]]\nname = "A/B"\nurl = "y"\n',
            "listed twice: a/b",
        ),
    ],
)
def test_mistakes_are_named(text: str, fragment: str) -> None:
    """Each config mistake is a ConfigError naming the file and the setting."""
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="my.toml")
    assert str(info.value).startswith("my.toml: ")
    assert fragment in str(info.value)


def test_repo_lookup_and_policy() -> None:
    """Repositories are found case-insensitively and deny patterns are globs."""
    config = parse_config(
        '[policy]\ndeny = ["secret/*"]\n'
        + render_repo_entry("Owner/Repo", "/x")
        + render_repo_entry("secret/x", "/y")
    )
    entry = config.repo("owner/repo")
    assert entry is not None
    assert entry.name == "Owner/Repo"
    assert config.repo("owner/other") is None
    assert config.denied("secret/x")
    assert not config.denied("Owner/Repo")


def test_capability_tables_use_subject_names() -> None:
    """A capability named as in its subject finds its table; an unknown one is disabled."""
    config = parse_config("[capabilities.code_search]\nenabled = false\nrate_per_minute = 7\n")
    assert config.capabilities.get("code.search").rate_per_minute == 7
    assert not config.capabilities.get("code.search").enabled
    assert config.capabilities.get("research").enabled
    assert config.capabilities.get("graph.search").enabled
    assert not config.capabilities.get("admin.sync").enabled


def test_the_docs_engine_is_limited_and_its_types_checked() -> None:
    """docs.regenerate has a per-minute budget by default; scheduled types must be allowed."""
    docs = parse_config("").capabilities.get("docs.regenerate")
    assert (docs.enabled, docs.rate_per_minute) == (True, 6)
    with pytest.raises(ConfigError, match=r"docs.scheduled names types .* api_index"):
        parse_config('[docs]\ntypes = ["repo_map"]\nscheduled = ["api_index"]\n')
    with pytest.raises(ConfigError, match="Invalid enum value 'readme'"):
        parse_config('[docs]\ntypes = ["readme"]\n')


def test_rendered_entry_escapes_quotes() -> None:
    """A URL with quotes and backslashes survives a round trip through the config text."""
    url = 'C:\\repos\\"odd"'
    assert parse_config(render_repo_entry("a/b", url)).repos[0].url == url


def test_config_path_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--config wins over $REPO_READER_CONFIG, which wins over the cache's own file."""
    monkeypatch.delenv("REPO_READER_CONFIG", raising=False)
    assert config_path(tmp_path) == tmp_path / "repo-reader.toml"
    monkeypatch.setenv("REPO_READER_CONFIG", str(tmp_path / "env.toml"))
    assert config_path(tmp_path) == tmp_path / "env.toml"
    assert config_path(tmp_path, tmp_path / "cli.toml") == tmp_path / "cli.toml"
