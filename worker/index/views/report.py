"""Read a query as a bug report: prose, code, traceback frames and version dumps told apart.

Users paste whole reports. What names the code at fault is rarely the prose alone: the frames
of a traceback name files and functions, code and backticks name identifiers, dotted paths
name modules. A version dump (`numpy: 1.21.0`, `pip freeze` lines) names nothing in the
repository and only pulls configuration files up, so its lines are left out of the text
that is scored.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Final

_FENCE: Final = re.compile(r"^\s*(```|~~~)")
_FRAME: Final = re.compile(r'File "([^"]+)", line \d+(?:, in ([A-Za-z_][A-Za-z0-9_]*))?')
_PYTEST_FRAME: Final = re.compile(r"^\s*([\w./\\-]+\.py):\d+:(?: in ([A-Za-z_]\w*))?")
_PATH: Final = re.compile(r"(?<![\w/.])((?:[\w.-]+/)*[\w-]+\.(?:py|pyx|pyi|c|h|cpp|js|ts|rs|go))\b")
_DOTTED: Final = re.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b")
_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALL: Final = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_BACKTICKED: Final = re.compile(r"`([^`\n]{1,200})`")
_PROMPT: Final = re.compile(r"^\s*(>>>|\.\.\.|In \[\d+\]:|Out\[\d+\]:|\$ )")
_VERSION_LINE: Final = re.compile(
    r"^\s*[-*]?\s*[\w.\-/() ]{1,48}?\s*(?::|==|>=|<=|=|\s)\s*v?\d+(?:\.\w+)+\S*(?:\s.*)?$"
)
_RAISED: Final = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*([A-Z]\w*))\s*:\s")
"""`pkg.errors.SomeError: message` — the last line of a traceback names the exception."""
_EXCEPTION_NAME: Final = re.compile(r"^[A-Z]\w*(Error|Exception|Warning|Exit|Interrupt)$")
_KEY_VALUE: Final = re.compile(r"^\s*[\w.\-/() ]{1,48}:\s+\S.*$")
_QUOTED_VERSION: Final = re.compile(r'^\s*"[\w.\-/() ]{1,48}"\s*:\s*"v?\d+(?:\.\w+)+[^"]*",?\s*$')
"""`"version": "2.0.9",` — a dump printed as JSON."""
_SETTING: Final = re.compile(
    r'^\s*[-*]?\s*"?[\w.\-/() ]{1,48}"?\s*:\s*(?:"[^"\s]*"|[^\s"]+)?\s*[,{\[]?\s*$'
)
"""`machine: x86_64`, `LC_ALL: None`, `"idna": {` — a name set to one word."""
_BRACKETS: Final = re.compile(r"^\s*(?:[\[\]{}(),]+|\[[^\]\n]*\])\s*$")
_MIN_DUMP_LINES: Final = 3
_DUMP_HEADING_LINES: Final = 3
_DUMP_HEADING_WORDS: Final = 4
_HTML_COMMENT: Final = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
"""An issue template's guidance: hidden when the report is rendered, the same in every report."""
_COMMON_NAMES: Final = frozenset(
    {"self", "cls", "args", "kwargs", "print", "len", "str", "int", "float", "list", "dict",
     "set", "tuple", "type", "object", "range", "open", "isinstance", "super", "np", "pd",
     "plt", "os", "sys", "re", "import", "from", "return", "None", "True", "False", "main",
     "test", "foo", "bar", "baz", "x", "y", "a", "b"}
)  # fmt: skip
MAX_MENTIONS: Final = 64
"""A report pasting a thousand-line log names no more code than its first mentions do."""


@dataclass(frozen=True, slots=True)
class ReportQuery:
    """What a query says, read as a bug report."""

    text: str
    """The text to score lexically: the query without its version dumps."""
    identifiers: tuple[str, ...]
    """Names that read as code (in code, backticks, calls, tracebacks, snake or camel case)."""
    paths: tuple[str, ...]
    """File paths the query names (traceback frames first)."""
    modules: tuple[str, ...]
    """Dotted names that may be modules (`astropy.io.fits`)."""
    raised: tuple[str, ...]
    """Exceptions it shows raised (`DisallowedHost`, `errors.ParseError`): where they are
    defined is not the fault."""
    title: str
    """Its first line, when more follows: a report's summary, its exception names left out
    (they say where the fault surfaced, and match the exception classes' module)."""
    reads_as_report: bool
    """It has a traceback, code or a version dump: a bug report more than a question."""


def _is_code_name(name: str) -> bool:
    if len(name) < 3 or name in _COMMON_NAMES or keyword.iskeyword(name):
        return False
    return not (name.startswith("__") and name.endswith("__"))


def _looks_like_identifier(name: str) -> bool:
    """snake_case, CamelCase with an inner capital, or a leading underscore."""
    inner = name.strip("_")
    return "_" in inner or name.startswith("_") or bool(re.search(r"[a-z][A-Z]", name))


def _dump_lines(lines: list[str]) -> set[int]:
    """Rows of version dumps: runs of at least three lines of `name: value` settings (or
    brackets, or blank lines) of which half, or at least three, pair a name with a version."""
    rows: set[int] = set()
    run: list[int] = []
    versions = 0

    def close() -> None:
        if len(run) >= _MIN_DUMP_LINES and (versions * 2 >= len(run) or versions >= 3):
            rows.update(run)
            # Its heading (`Output of xr.show_versions()`, `INSTALLED VERSIONS`) names the
            # tool that printed it, not the fault.
            row, headed = run[0] - 1, 0
            while row >= 0 and headed < _DUMP_HEADING_LINES and not _FENCE.match(lines[row]):
                if any(c.isalnum() for c in lines[row]):
                    if len(lines[row].split()) > _DUMP_HEADING_WORDS or lines[row][:1].isspace():
                        break
                    headed += 1
                rows.add(row)
                row -= 1

    for row, line in enumerate(lines):
        is_version = bool(_VERSION_LINE.match(line) or _QUOTED_VERSION.match(line))
        if (
            is_version
            or _SETTING.match(line)
            or _BRACKETS.match(line)
            or (run and not line.strip())
            or (run and _KEY_VALUE.match(line))
        ):
            run.append(row)
            versions += is_version
            continue
        close()
        run, versions = [], 0
    close()
    return rows


def _title(lines: list[str], raised: set[str]) -> str:
    """The first non-blank line when more follows, without the exception names it holds."""
    first = next((row for row, line in enumerate(lines) if line.strip()), None)
    if first is None or not any(line.strip() for line in lines[first + 1 :]):
        return ""

    def keep(name: re.Match[str]) -> str:
        found = name.group(0)
        return "" if found in raised or _EXCEPTION_NAME.match(found) else found

    return " ".join(_IDENT.sub(keep, lines[first]).split())


def read_report(query: str) -> ReportQuery:
    """Split a query into the text to score and the code it mentions."""
    lines = _HTML_COMMENT.sub("", query).splitlines()
    dump = _dump_lines(lines)
    identifiers: dict[str, None] = {}
    paths: dict[str, None] = {}
    modules: dict[str, None] = {}
    # An exception's name says where it is raised, not where it is defined: its class and
    # its module (`exceptions.py`) would only pull the definitions up.
    raised: set[str] = set()
    in_fence = False
    code_seen = bool(dump)
    kept: list[str] = []

    def note_identifier(name: str) -> None:
        if _is_code_name(name) and len(identifiers) < MAX_MENTIONS:
            identifiers.setdefault(name)

    for row, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            code_seen = True
            continue
        if row in dump:
            continue
        kept.append(line)
        if (exception := _RAISED.match(line)) and not in_fence:
            raised.update((exception.group(1), exception.group(2)))
        frame = _FRAME.search(line) or _PYTEST_FRAME.match(line)
        if frame:
            code_seen = True
            paths.setdefault(frame.group(1).replace("\\", "/"))
            if frame.group(2):
                note_identifier(frame.group(2))
            continue
        is_code = in_fence or bool(_PROMPT.match(line)) or line.startswith("    ")
        code_seen = code_seen or is_code
        for match in _PATH.finditer(line):
            paths.setdefault(match.group(1))
        for match in _DOTTED.finditer(line):
            dotted = match.group(1)
            if not re.search(r"\.(py|txt|rst|md|org|com|html)$", dotted):
                modules.setdefault(dotted)
            for part in dotted.split("."):
                if is_code or _looks_like_identifier(part):
                    note_identifier(part)
        for match in _CALL.finditer(line):
            note_identifier(match.group(1))
        for span in _BACKTICKED.findall(line):
            for name in _IDENT.findall(span):
                note_identifier(name)
        for name in _IDENT.findall(line):
            if is_code or _looks_like_identifier(name):
                note_identifier(name)
    return ReportQuery(
        text="\n".join(kept),
        raised=tuple(sorted(raised))[:MAX_MENTIONS],
        title=_title(kept, raised),
        identifiers=tuple(
            name for name in identifiers if name not in raised and not _EXCEPTION_NAME.match(name)
        ),
        paths=tuple(list(paths)[:MAX_MENTIONS]),
        modules=tuple(
            dotted
            for dotted in list(modules)[:MAX_MENTIONS]
            if dotted not in raised and not _EXCEPTION_NAME.match(dotted.rsplit(".", 1)[-1])
        ),
        reads_as_report=code_seen or bool(paths),
    )
