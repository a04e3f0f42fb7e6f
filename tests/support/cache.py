"""A cache directory with a mirror, and the sample repository most tests mirror into it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.gitrepos import MIT_LICENSE, Content
from worker.config import Config

if TYPE_CHECKING:
    from worker.mirror.sync import Mirror

SourceFactory = Callable[..., tuple[Path, str]]
"""The `make_source` fixture: (name, files=None) -> (repository path, head commit)."""

SAMPLE_FILES: dict[str, Content] = {
    "LICENSE": MIT_LICENSE,
    "README.md": "# Sample\n\nA tiny package that parses configuration files and routes.\n",
    "sample/config.py": (
        '"""Configuration loading."""\n\n'
        "import tomllib\n\n\n"
        "def load_config(path):\n"
        '    """Read the TOML configuration file at path."""\n'
        '    with open(path, "rb") as handle:\n'
        "        return tomllib.load(handle)\n\n\n"
        "class ConfigError(Exception):\n"
        '    """Raised when the configuration is invalid."""\n'
    ),
    "sample/routing.py": (
        '"""Request routing."""\n\n\n'
        "class Router:\n"
        '    """Maps URL paths to handler functions."""\n\n'
        "    def __init__(self):\n"
        "        self.routes = {}\n\n"
        "    def add_route(self, path, handler):\n"
        '        """Register handler for requests to path."""\n'
        "        self.routes[path] = handler\n\n"
        "    def dispatch(self, path, request):\n"
        '        """Call the handler registered for path."""\n'
        "        return self.routes[path](request)\n"
    ),
}


class MirroredCache:
    """A cache directory with a mirror that registers and syncs source repositories."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config_file = root / "repo-reader.toml"
        self.mirror = self._mirror()

    def _mirror(self) -> Mirror:
        from worker.mirror.sync import Mirror

        return Mirror(self.root, self.config_file)

    def add(self, name: str, source: Path) -> str:
        """Register and sync `source` as `name`; returns the mirrored head."""
        self.mirror.add(name, str(source))
        (result,) = self.mirror.sync([name])
        return result.head

    def set_config(self, extra_toml: str) -> Config:
        """Prepend settings to the config file (keeping the registered repos) and reload it."""
        body = self.config_file.read_text() if self.config_file.exists() else ""
        self.config_file.write_text(extra_toml + "\n" + body)
        self.mirror = self._mirror()
        return self.mirror.config

    @property
    def config(self) -> Config:
        return self.mirror.config
