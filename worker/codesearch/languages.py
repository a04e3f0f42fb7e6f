"""Language names for the code.search `language` filter: a language is a set of file names.

A file belongs to a language by its extension (case-insensitive) or, for files that
usually have none, by its exact name. `.h` counts as C and as C++, since headers are
shared.
"""

from __future__ import annotations

from typing import Final

from worker.errors import InvalidRequest

_EXTENSIONS: Final[dict[str, tuple[str, ...]]] = {
    "assembly": (".s", ".asm"),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".h", ".ipp", ".tpp"),
    "csharp": (".cs",),
    "css": (".css", ".scss", ".sass", ".less"),
    "dart": (".dart",),
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
    "toml": (".toml",),
    "typescript": (".ts", ".tsx", ".mts", ".cts"),
    "xml": (".xml", ".xsd", ".xsl"),
    "yaml": (".yml", ".yaml"),
    "zig": (".zig",),
}
_FILE_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "dockerfile": ("Dockerfile", "Containerfile"),
    "makefile": ("Makefile", "GNUmakefile", "makefile", "Kbuild"),
    "ruby": ("Rakefile", "Gemfile"),
}
_ALIASES: Final[dict[str, str]] = {
    "c++": "cpp",
    "c#": "csharp",
    "js": "javascript",
    "ts": "typescript",
    "py": "python",
    "golang": "go",
    "sh": "shell",
    "bash": "shell",
    "yml": "yaml",
    "md": "markdown",
}
_BY_EXTENSION: Final[dict[str, str]] = {}
for _language, _exts in sorted(_EXTENSIONS.items(), reverse=True):
    for _ext in _exts:
        _BY_EXTENSION[_ext] = _language  # `.h` ends up as `c`: sorted in reverse, c comes last
_BY_NAME: Final[dict[str, str]] = {
    name: language for language, names in _FILE_NAMES.items() for name in names
}


def known_languages() -> list[str]:
    """Every language name the filter accepts (aliases aside), sorted."""
    return sorted(_EXTENSIONS)


def extension_of(path: str) -> str:
    """The lowercased extension of the file name at the end of `path`, with its dot, or ''."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def language_of(path: str) -> str | None:
    """The language a file belongs to, if any."""
    name = path.rsplit("/", 1)[-1]
    return _BY_NAME.get(name) or _BY_EXTENSION.get(extension_of(path))


class LanguageFilter:
    """Whether a path belongs to one language."""

    def __init__(self, language: str, *, field: str = "language") -> None:
        wanted = _ALIASES.get(language.lower(), language.lower())
        if wanted not in _EXTENSIONS:
            raise InvalidRequest(
                f"{field}: unknown language {language!r}",
                field=field,
                known=known_languages(),
            )
        self.language = wanted
        self._extensions = frozenset(_EXTENSIONS[wanted])
        self._names = frozenset(_FILE_NAMES.get(wanted, ()))

    def __call__(self, path: str) -> bool:
        return extension_of(path) in self._extensions or path.rsplit("/", 1)[-1] in self._names
