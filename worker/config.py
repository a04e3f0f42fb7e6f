"""The server configuration, `repo-reader.toml`: repositories, ceilings, defaults, policy.

Every limit a request can set has a conservative default and a ceiling here; a request
above a ceiling is refused, never clamped. Unknown keys are start-up errors, so a
misspelt ceiling can never be silently ignored.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Annotated, Final

import msgspec
from msgspec import Meta

from contracts.docs import DOC_TYPES, DocType
from worker.errors import ConfigError

CONFIG_FILENAME: Final = "repo-reader.toml"

PositiveInt = Annotated[int, Meta(ge=1)]
NonNegativeInt = Annotated[int, Meta(ge=0)]
PositiveFloat = Annotated[float, Meta(gt=0)]
RepoName = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*/(?!\.\.?$)[A-Za-z0-9_.-]+$")]


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every config table: unknown keys are errors."""


class ResearchCeilings(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The most any research request may ask for."""

    max_query_chars: PositiveInt = 8000
    max_repos: PositiveInt = 20
    max_excerpt_chars: PositiveInt = 4000
    max_excerpts_per_repo: PositiveInt = 50
    max_total_excerpts: PositiveInt = 200


class ResearchDefaults(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a research request gets for each limit it leaves out."""

    max_repos: PositiveInt = 5
    max_excerpt_chars: PositiveInt = 1200
    max_excerpts_per_repo: PositiveInt = 5
    max_total_excerpts: PositiveInt = 10


class ToolLimits(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Defaults and ceilings of the agent tools (`code.*`, `git.*`); above a ceiling is refused."""

    search_default_results: PositiveInt = 20
    search_max_results: PositiveInt = 100
    search_max_query_chars: PositiveInt = 1000
    search_max_line_chars: PositiveInt = 400
    """A longer matched line is returned as a window around the match."""
    search_max_context_chars: PositiveInt = 2000
    search_regex_max_mem_bytes: PositiveInt = 8 << 20
    """RE2's memory budget for one compiled pattern; a pattern needing more is refused."""
    search_max_matches: PositiveInt = 10_000
    """Matching lines a search counts before it stops (then not `exhaustive`): a pattern
    found on every other line of a large tree would otherwise be verified to its end."""
    read_default_lines: PositiveInt = 200
    read_max_lines: PositiveInt = 2000
    read_max_chars: PositiveInt = 20000
    list_default_entries: PositiveInt = 200
    list_max_entries: PositiveInt = 5000
    history_default_days: PositiveInt = 30
    history_max_days: PositiveInt = 3660
    history_default_limit: PositiveInt = 20
    history_max_limit: PositiveInt = 200
    history_max_message_chars: PositiveInt = 2000
    history_max_files_per_commit: PositiveInt = 50
    churn_max_window_days: PositiveInt = 366
    churn_max_depth: PositiveInt = 8
    churn_default_modules: PositiveInt = 10
    churn_max_modules: PositiveInt = 200
    churn_max_commits: PositiveInt = 5000
    """Commits examined per churn request; a busier window is answered over its newest ones."""
    graph_default_nodes: PositiveInt = 200
    graph_max_nodes: PositiveInt = 1000
    """Nodes one graph.traverse returns at most."""

    def __post_init__(self) -> None:
        for default, ceiling in (
            ("search_default_results", "search_max_results"),
            ("read_default_lines", "read_max_lines"),
            ("list_default_entries", "list_max_entries"),
            ("history_default_days", "history_max_days"),
            ("history_default_limit", "history_max_limit"),
            ("churn_default_modules", "churn_max_modules"),
            ("graph_default_nodes", "graph_max_nodes"),
        ):
            if getattr(self, default) > getattr(self, ceiling):
                raise msgspec.ValidationError(
                    f"tools.{default} = {getattr(self, default)} is above "
                    f"tools.{ceiling} = {getattr(self, ceiling)}"
                )


class CapabilityConfig(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Whether a capability is served, and its per-minute budget shared by all workers (0: none)."""

    enabled: bool = True
    rate_per_minute: NonNegativeInt = 0


class Capabilities(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One table per capability; keys use `_` where the subject uses `.`."""

    research: CapabilityConfig = CapabilityConfig()
    code_search: CapabilityConfig = CapabilityConfig()
    code_read: CapabilityConfig = CapabilityConfig()
    code_list: CapabilityConfig = CapabilityConfig()
    git_history: CapabilityConfig = CapabilityConfig()
    git_churn: CapabilityConfig = CapabilityConfig()
    repo_status: CapabilityConfig = CapabilityConfig()
    graph_search: CapabilityConfig = CapabilityConfig()
    graph_traverse: CapabilityConfig = CapabilityConfig()
    graph_retrieve: CapabilityConfig = CapabilityConfig()
    graph_diff: CapabilityConfig = CapabilityConfig()
    docs_regenerate: CapabilityConfig = CapabilityConfig(rate_per_minute=6)
    """Served by the mirror; limited by default, the seed's guard against an agent in a loop."""

    def get(self, capability: str) -> CapabilityConfig:
        """The table of a capability named as in its subject, e.g. ``code.search``."""
        found: CapabilityConfig | None = getattr(self, capability.replace(".", "_"), None)
        return found if found is not None else CapabilityConfig(enabled=False)


class ServerConfig(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a worker runs."""

    request_timeout_seconds: PositiveFloat = 10.0
    """The time budget of one request, on-demand indexing included."""
    max_blob_bytes: PositiveInt = 1 << 20
    """Larger blobs are never indexed nor excerpted."""
    index_lru_size: PositiveInt = 4
    """How many on-demand indexes of pinned revisions a worker keeps."""
    object_cache_bytes: NonNegativeInt = 128 << 20
    """Git objects a worker keeps inflated, blobs up to `max_blob_bytes` among them (0: none):
    a search that verifies the same files again reads them from memory, not from the pack."""
    reconnect_seconds: PositiveFloat = 120.0
    """How long a worker (or the mirror service) tries to get a lost NATS connection back; then
    it exits non-zero, its ready file removed, for its supervisor to restart it."""


class MirrorConfig(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How the mirror runs."""

    sync_interval_seconds: PositiveInt = 3600
    """The period of scheduled syncs; reported to callers as the next sync time."""
    index_workers: NonNegativeInt = 0
    """Processes that build a research index; 0 means one per core."""
    history_commits: NonNegativeInt = 50_000
    """The newest commits whose messages and changed files research weighs; 0: none."""
    keep_commits: Annotated[int, Meta(ge=1)] = 8
    """Published commit indexes kept per repository, the newest (always the head); an older
    one is removed with the segments only it used, and a request pinned to it builds it on
    demand."""


ChurnWindow = Annotated[str, Meta(pattern=r"^[1-9][0-9]{0,3}[dwmy]$")]


class DocsConfig(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the documentation engine (in the mirror) may generate, and its bounds."""

    types: tuple[DocType, ...] = DOC_TYPES
    """The document types a `docs.regenerate` request may ask for; others are refused."""
    scheduled: tuple[DocType, ...] = ()
    """Types the mirror service regenerates on its own after each scheduled sync."""
    history: Annotated[int, Meta(ge=1, le=1000)] = 20
    """Commits kept on `refs/repo-reader/docs`; older ones are dropped (the rest re-parented)."""
    max_document_chars: Annotated[int, Meta(ge=4096)] = 131_072
    """The repository map, API index, churn report and architecture note stay under this
    (about what an agent's context takes); what does not fit is counted, not listed."""
    churn_windows: tuple[ChurnWindow, ...] = ("7d", "1m", "1y")
    churn_hot_files: Annotated[int, Meta(ge=1, le=200)] = 15
    """Files whose entities the churn report breaks down (the most active ones)."""
    architecture_max_modules: Annotated[int, Meta(ge=2, le=500)] = 40
    """The import graph groups files into at most this many modules (directories)."""

    def __post_init__(self) -> None:
        extra = sorted(set(self.scheduled) - set(self.types))
        if extra:
            raise msgspec.ValidationError(
                f"docs.scheduled names types that docs.types does not allow: {', '.join(extra)}"
            )


class PolicyConfig(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Server-side access policy."""

    deny: tuple[str, ...] = ()
    """`owner/name` glob patterns that are never served, even when mirrored."""


class RepoEntry(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One mirrored repository."""

    name: RepoName
    url: str


class Config(_Section, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole `repo-reader.toml`."""

    server: ServerConfig = ServerConfig()
    mirror: MirrorConfig = MirrorConfig()
    limits: ResearchCeilings = ResearchCeilings()
    defaults: ResearchDefaults = ResearchDefaults()
    policy: PolicyConfig = PolicyConfig()
    capabilities: Capabilities = Capabilities()
    tools: ToolLimits = ToolLimits()
    docs: DocsConfig = DocsConfig()
    repos: tuple[RepoEntry, ...] = ()

    def __post_init__(self) -> None:
        # Cross-field rules that Meta cannot express; a ConfigError names the setting.
        for field in ResearchDefaults.__struct_fields__:
            default, ceiling = getattr(self.defaults, field), getattr(self.limits, field)
            if default > ceiling:
                raise msgspec.ValidationError(
                    f"defaults.{field} = {default} is above limits.{field} = {ceiling}"
                )
        names = [repo.name.lower() for repo in self.repos]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise msgspec.ValidationError(f"repos listed twice: {', '.join(duplicates)}")

    def repo(self, name: str) -> RepoEntry | None:
        """The entry of `owner/name` (case-insensitive), if registered."""
        wanted = name.lower()
        return next((r for r in self.repos if r.name.lower() == wanted), None)

    def denied(self, name: str) -> bool:
        """Whether the server's policy refuses `owner/name`."""
        return any(fnmatch.fnmatchcase(name.lower(), p.lower()) for p in self.policy.deny)


def default_cache_dir() -> Path:
    """The cache directory: `$REPO_READER_CACHE`, else the user's cache directory."""
    from_env = os.environ.get("REPO_READER_CACHE")
    if from_env:
        return Path(from_env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("repo-reader"))


def config_path(cache_dir: Path, explicit: Path | None = None) -> Path:
    """Where the config lives: `--config`, `$REPO_READER_CONFIG`, else beside the cache."""
    if explicit is not None:
        return explicit
    from_env = os.environ.get("REPO_READER_CONFIG")
    return Path(from_env) if from_env else cache_dir / CONFIG_FILENAME


def load_config(path: Path, *, missing_ok: bool = True) -> Config:
    """Read and validate `path`; a missing file gives the defaults when `missing_ok`."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return Config()
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from None
    return parse_config(raw, source=str(path))


class FollowedConfig:
    """The configuration in a file, read again when the file changed (its modification time
    or size): repositories that `mirror add` or `remove` registered or dropped meanwhile."""

    def __init__(self, path: Path | None, config: Config) -> None:
        self.path = path
        self.config = config
        """The last good configuration."""
        self._stamp = _stamp(path)

    def reread(self) -> bool:
        """Read the file again if it changed since; whether it was.

        A file that no longer parses raises ConfigError and keeps the last good config; it
        is not read again until it changes again.
        """
        stamp = _stamp(self.path)
        if self.path is None or stamp == self._stamp:
            return False
        self._stamp = stamp
        self.config = load_config(self.path)
        return True

    def written(self, config: Config) -> None:
        """This process wrote `config` to the file: it is current."""
        self.config = config
        self._stamp = _stamp(self.path)


def _stamp(path: Path | None) -> tuple[int, int] | None:
    """What tells a changed file apart: its modification time and size (None: no file)."""
    if path is None:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def parse_config(raw: bytes | str, *, source: str = CONFIG_FILENAME) -> Config:
    """Decode TOML text into a Config, turning every mistake into a ConfigError naming it."""
    try:
        return msgspec.toml.decode(raw, type=Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None


def render_repo_entry(name: str, url: str) -> str:
    """The TOML text of one `[[repos]]` table, for appending to a config file."""
    return f"\n[[repos]]\nname = {_toml_string(name)}\nurl = {_toml_string(url)}\n"


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
