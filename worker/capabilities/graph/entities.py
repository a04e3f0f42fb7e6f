"""Graph nodes on the wire: ids, types and lines, their code (bounded), and their metadata.

Metadata is read from the definition's own text: its parameters and return type from its
header, its docstring (Python) or the comment block above it, its decorators or annotations,
and the class it is defined in. Nothing is inferred.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, cast

from contracts.graph import EntityMetadata, EntityType, GraphEdge, GraphNode, RelationType
from worker.capabilities.graph.graphs import FileText, PinnedGraph
from worker.index.views.graph.model import EntityType as NodeType
from worker.index.views.graph.model import Relation

_TYPE_NAMES: Final = tuple(t.label for t in NodeType)
_RELATION_NAMES: Final = tuple(r.label for r in Relation)
_PY_STRING: Final = re.compile(r'\s*[rRbBuU]?("""|\'\'\'|"|\')(.*?)\1', re.S)
_RETURN_ARROW: Final = re.compile(r"\)\s*->\s*([^:{]+?)\s*[:{]")
_TS_RETURN: Final = re.compile(r"\)\s*:\s*([^={]+?)\s*(?:\{|=>|$)")
_GO_RETURN: Final = re.compile(r"\)\s*([^{]+?)\s*\{")


def type_name(graph_type: int) -> EntityType:
    """The wire name of a node type."""
    return cast(EntityType, _TYPE_NAMES[graph_type])


def relation_name(relation: int) -> RelationType:
    """The wire name of a relation."""
    return cast(RelationType, _RELATION_NAMES[relation])


def short_name(name: str) -> str:
    """A qualified name's last part (`route` of `Flask.route`)."""
    return re.split(r"\.|::", name)[-1]


def wire_node(pinned: PinnedGraph, node: int, depth: int) -> GraphNode:
    """A node as a traversal returns it."""
    graph = pinned.graph
    return GraphNode(
        id=graph.ids[node],
        name=graph.names[node],
        entity_type=type_name(int(graph.types[node])),
        file_path=graph.paths[node],
        line_range=pinned.line_range(node),
        depth=depth,
    )


def wire_edge(pinned: PinnedGraph, row: int) -> GraphEdge:
    """An edge between two ids."""
    graph = pinned.graph
    edges = graph.edges
    return GraphEdge(
        source=graph.ids[int(edges.source[row])],
        target=graph.ids[int(edges.target[row])],
        relation=relation_name(int(edges.relation[row])),
    )


@dataclass(frozen=True, slots=True)
class Code:
    """An entity's lines, cut at a bound."""

    text: str
    last_line: int
    truncated: bool


def code_of(text: FileText, lines: tuple[int, int], *, max_chars: int, max_lines: int) -> Code:
    """Lines `lines` of a file, at most `max_lines` and `max_chars` (whole lines only,
    but for a first line longer than the bound, which is cut)."""
    first, last = lines
    last = min(last, len(text.lines), first + max_lines - 1)
    taken: list[str] = []
    used = 0
    for number in range(first, last + 1):
        line = text.lines[number - 1]
        cost = len(line) + (1 if taken else 0)
        if used + cost > max_chars:
            if not taken:
                return Code(line[:max_chars], number, True)
            return Code("\n".join(taken), number - 1, True)
        taken.append(line)
        used += cost
    return Code("\n".join(taken), last, last < lines[1])


def metadata_of(pinned: PinnedGraph, node: int, text: FileText) -> EntityMetadata:
    """What an entity's own text says about it (empty for files and directories)."""
    graph = pinned.graph
    kind = int(graph.types[node])
    if kind not in (NodeType.CLASS, NodeType.FUNCTION):
        return EntityMetadata()
    start, end = int(graph.start_line[node]), int(graph.end_line[node])
    lines = text.lines
    body = lines[start - 1 : end]
    header = _header(body)
    parent_class = None
    parent = graph.parent(node)
    if parent is not None and graph.types[parent] == NodeType.CLASS:
        parent_class = graph.names[parent]
    python = graph.paths[node].endswith((".py", ".pyi"))
    decorators = _decorators(lines, start)
    return EntityMetadata(
        parameters=_parameters(header) if kind == NodeType.FUNCTION else None,
        return_type=_return_type(header, graph.paths[node]) if kind == NodeType.FUNCTION else None,
        docstring=_python_docstring(body, header) if python else _comment_above(lines, start),
        decorators=tuple(decorators) if decorators else None,
        parent_class=parent_class,
    )


def signature_of(lines: Sequence[str], start: int, end: int) -> str:
    """A definition's head on one line (`def route(self, rule: str, **options)`), without the
    `:` or `{` that opens its body; lines are 1-based and inclusive. A byte order mark
    before the first line is no part of it."""
    flat = " ".join(_header(list(lines[start - 1 : end])).split()).removeprefix("\ufeff")
    for opener in ("{", ":"):
        if flat.endswith(opener):
            flat = flat[:-1].rstrip()
    return flat


def docstring_of(path: str, lines: Sequence[str], start: int, end: int) -> str | None:
    """A definition's docstring (Python) or the comment block above it, as `metadata_of`."""
    body = list(lines[start - 1 : end])
    if path.endswith((".py", ".pyi")):
        return _python_docstring(body, _header(body))
    return _comment_above(lines, start)


def _header(body: list[str]) -> str:
    """The definition's head: up to the `:` or `{` that opens its body (a few lines at most)."""
    head = []
    depth = 0
    for line in body[:20]:
        head.append(line)
        for char in line:
            depth += char in "(["
            depth -= char in ")]"
        stripped = line.rstrip()
        if depth <= 0 and (stripped.endswith((":", "{", ";")) or "{" in stripped):
            break
    return "\n".join(head)


def _bracketed(text: str, start: int) -> tuple[str, int] | None:
    """The text inside the brackets opening at `start`, and where they close."""
    depth = 0
    for i in range(start, len(text)):
        char = text[i]
        if char in "([{<" and not (char == "<" and depth == 0 and i != start):
            depth += 1
        elif char in ")]}>" and not (char == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i
    return None


def _parameters(header: str) -> tuple[str, ...] | None:
    opening = header.find("(")
    if opening < 0:
        return None
    inside = _bracketed(header, opening)
    if inside is None:
        return None
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in inside[0]:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    cleaned = tuple(" ".join(p.split()) for p in parts if p.strip())
    return cleaned


def _return_type(header: str, path: str) -> str | None:
    flat = " ".join(header.split())
    for pattern in (_RETURN_ARROW, _TS_RETURN) if not path.endswith(".go") else (_GO_RETURN,):
        found = pattern.search(flat)
        if found is not None:
            value = found.group(1).strip()
            return value or None
    if path.endswith((".c", ".h", ".cc", ".cpp", ".hpp", ".java", ".cxx", ".hh")):
        before = flat.split("(", 1)[0].split()
        if len(before) >= 2:
            kept = [
                w
                for w in before[:-1]
                if w
                not in (
                    "static",
                    "inline",
                    "public",
                    "private",
                    "protected",
                    "final",
                    "extern",
                    "virtual",
                )
            ]
            return " ".join(kept) or None
    return None


def _python_docstring(body: list[str], header: str) -> str | None:
    rest = "\n".join(body[header.count("\n") + 1 :])
    found = _PY_STRING.match(rest)
    if found is None:
        return None
    lines = [line.strip() for line in found.group(2).strip().splitlines()]
    return "\n".join(lines) or None


def _comment_above(lines: Sequence[str], start: int) -> str | None:
    """The comment block right above a definition (past its decorators or annotations)."""
    row = start - 2
    while row >= 0 and lines[row].strip().startswith(("@", "#[")):
        row -= 1
    block: list[str] = []
    while row >= 0:
        stripped = lines[row].strip()
        if stripped.startswith(("//", "/*", "*", "///", "#")) and not stripped.startswith("#["):
            block.append(stripped)
            row -= 1
            continue
        break
    if not block:
        return None
    cleaned = [
        re.sub(r"^(/\*\*?|\*/|\*|///?|#)\s?", "", line).removesuffix("*/").rstrip()
        for line in reversed(block)
    ]
    text = "\n".join(line for line in cleaned if line.strip())
    return text or None


def _decorators(lines: list[str], start: int) -> list[str]:
    found = []
    row = start - 2
    while row >= 0:
        stripped = lines[row].strip()
        if stripped.startswith(("@", "#[")):
            found.append(stripped)
            row -= 1
            continue
        break
    return list(reversed(found))
