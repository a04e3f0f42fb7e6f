"""The one table of languages: which files are which language, under one name on the wire.

A file belongs to a language by its exact name or, failing that, by its extension
(case-insensitive). Every capability names a file's language from this table (research
artifacts, code.search hits and filters, code.read); the analysis picks its parser from it
too (`worker.index.analysis.grammars.grammar_of`). `.h` is C, and counts as C++ too for a filter,
since headers are shared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from worker.errors import InvalidRequest

EXTENSIONS: Final[dict[str, tuple[str, ...]]] = {
    "assembly": (".s", ".asm"),
    "c": (".c", ".h"),
    "cmake": (".cmake",),
    "cpp": (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".ipp", ".tpp"),
    "csharp": (".cs",),
    "css": (".css", ".scss", ".sass", ".less"),
    "dart": (".dart",),
    "devicetree": (".dts", ".dtsi"),
    "dockerfile": (".dockerfile",),
    "elixir": (".ex", ".exs"),
    "erlang": (".erl", ".hrl"),
    "go": (".go",),
    "graphql": (".graphql", ".gql"),
    "haskell": (".hs", ".lhs"),
    "html": (".html", ".htm", ".xhtml"),
    "java": (".java",),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "json": (".json",),
    "julia": (".jl",),
    "kconfig": (),
    "kotlin": (".kt", ".kts"),
    "lua": (".lua",),
    "makefile": (".mk", ".mak"),
    "markdown": (".md", ".markdown"),
    "objective-c": (".m", ".mm"),
    "ocaml": (".ml", ".mli"),
    "perl": (".pl", ".pm"),
    "php": (".php",),
    "protobuf": (".proto",),
    "python": (".py", ".pyi", ".pyx", ".pxd"),
    "r": (".r",),
    "rst": (".rst",),
    "ruby": (".rb", ".rake", ".gemspec"),
    "rust": (".rs",),
    "scala": (".scala", ".sc"),
    "shell": (".sh", ".bash", ".zsh", ".ksh"),
    "sql": (".sql",),
    "swift": (".swift",),
    "terraform": (".tf", ".tfvars"),
    "text": (".txt",),
    "toml": (".toml",),
    "typescript": (".ts", ".tsx", ".mts", ".cts"),
    "xml": (".xml", ".xsd", ".xsl"),
    "yaml": (".yml", ".yaml"),
    "zig": (".zig",),
}
FILE_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "cmake": ("CMakeLists.txt",),
    "dockerfile": ("Dockerfile", "Containerfile"),
    "kconfig": ("Kconfig",),
    "makefile": ("Makefile", "GNUmakefile", "makefile", "Kbuild"),
    "ruby": ("Rakefile", "Gemfile"),
}
ALIASES: Final[dict[str, str]] = {
    "c++": "cpp",
    "c#": "csharp",
    "js": "javascript",
    "ts": "typescript",
    "tsx": "typescript",
    "py": "python",
    "golang": "go",
    "sh": "shell",
    "bash": "shell",
    "yml": "yaml",
    "md": "markdown",
    "make": "makefile",
    "restructuredtext": "rst",
}
"""Other names a filter accepts for a language."""
SHARED_EXTENSIONS: Final[dict[str, tuple[str, ...]]] = {"cpp": (".h",)}
"""Extensions a filter for a language also selects, though the table names them otherwise."""

_BY_EXTENSION: Final[dict[str, str]] = {
    extension: language for language, extensions in EXTENSIONS.items() for extension in extensions
}
_BY_NAME: Final[dict[str, str]] = {
    name: language for language, names in FILE_NAMES.items() for name in names
}


def extension_of(path: str) -> str:
    """The lowercased extension of the file name at the end of `path`, with its dot, or ''.

    As PurePosixPath's suffix: none for `.bashrc` or `name.`; string operations because a
    build asks for every blob.
    """
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    return name[dot:].lower() if 0 < dot < len(name) - 1 else ""


def extensions_pattern(extensions: Iterable[str]) -> str:
    """The RE2 pattern found in exactly the paths whose `extension_of` is one of `extensions`
    (each with its dot)."""
    alternatives = "|".join(sorted(re.escape(e.removeprefix(".").lower()) for e in extensions))
    return rf"(?:^|/)[^/]+\.(?i:{alternatives})$"


def language_of(path: str) -> str | None:
    """The language of a file, from its name or extension; None when unknown."""
    name = path.rpartition("/")[2]
    return _BY_NAME.get(name) or _BY_EXTENSION.get(extension_of(path))


def known_languages() -> list[str]:
    """Every language name (aliases aside), sorted."""
    return sorted(EXTENSIONS)


class LanguageFilter:
    """Whether a path belongs to one language (a request's `language` filter)."""

    def __init__(self, language: str, *, field: str = "language") -> None:
        wanted = ALIASES.get(language.lower(), language.lower())
        if wanted not in EXTENSIONS:
            raise InvalidRequest(
                f"{field}: unknown language {language!r}",
                field=field,
                known=known_languages(),
            )
        self.language = wanted
        self._extensions = frozenset(EXTENSIONS[wanted] + SHARED_EXTENSIONS.get(wanted, ()))
        self._names = frozenset(FILE_NAMES.get(wanted, ()))

    def __call__(self, path: str) -> bool:
        return extension_of(path) in self._extensions or path.rpartition("/")[2] in self._names

    @property
    def pattern(self) -> str:
        """The RE2 pattern found in exactly the paths this filter selects."""
        by_extension = extensions_pattern(self._extensions)
        if not self._names:
            return by_extension
        names = "|".join(sorted(re.escape(name) for name in self._names))
        return f"{by_extension}|(?:^|/)(?:{names})$"
