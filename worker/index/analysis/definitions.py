"""The definitions a real parser finds in a blob: spans, qualified names, nesting.

A blob's definitions come flat, in pre-order (each before those nested in it), each with the
index of the one it is nested in: the chunker lays out a whole batch's with array operations,
level by level, and a tree of objects per definition cost more than finding them.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt
import tree_sitter

from worker.index.analysis.grammars import grammar
from worker.index.analysis.outline import Outline

I64: TypeAlias = npt.NDArray[np.int64]

MAX_NESTING: Final = 8
"""Deeper definitions stay inside their parent's chunk (generated code nests absurdly)."""
CONTAINER_KINDS: Final = frozenset(
    {
        "class_definition",
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "module",
        "internal_module",
        "class",
        "trait_declaration",
        "struct_declaration",
        "namespace_declaration",
        "object_declaration",
        "impl_item",
        "trait_item",
        "mod_item",
        "class_specifier",
        "struct_specifier",
        "namespace_definition",
    }
)
"""Definitions whose nested definitions get chunks of their own; a function keeps its closures."""
_DOTTED_NAME: Final = re.compile(r"[\w$]+(?:\.[\w$]+)*")
_REPARSE_ON_ERROR: Final = frozenset({"python"})
"""Outlines whose parse is checked: a Python outline with a syntax error is parsed whole again.

C and C++ files have errors on their own (macros the parser cannot know), so the check would
throw away most outlines; their outlines were compared with whole parses instead.
"""
_DEFINING_BYTES: Final[dict[str, tuple[bytes, ...]]] = {"c": (b"{", b"#"), "cpp": (b"{", b"#")}
"""Bytes a C or C++ text holds if its definition query can match at all: every definition it
finds has a body in braces or is a function-like macro's `#define`. A text (or outline) with
none of them, only prototypes and constants, is not parsed."""


@dataclass(frozen=True, slots=True)
class Definitions:
    """One blob's definitions in pre-order; rows 0-based and inclusive, the blob's own."""

    start_row: I64
    end_row: I64
    symbol: list[str]
    """Qualified by the definitions it is nested in (`Flask.route`)."""
    kind: list[str]
    parent: I64
    """The index of the definition each is nested in, -1 at top level."""
    base_of: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    """For each base found, the index of the definition that extends it."""
    base: list[str] = field(default_factory=list)
    """What each extends, as written, without type arguments (`B` of `B<T>`)."""
    receiver_of: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    """The definitions (Go methods) that name their receiver."""
    receiver_name: list[str] = field(default_factory=list)
    """The name each gives its receiver (`c` of `func (c *Context) Next()`)."""
    name_row: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    """The row each one's name is on: after its annotations or attributes (`@Test`,
    `[Fact]`), which its span includes."""

    def rows(self) -> list[tuple[int, int, str, str]]:
        """(start row, end row, symbol, kind) of each, in order."""
        return list(
            zip(self.start_row.tolist(), self.end_row.tolist(), self.symbol, self.kind, strict=True)
        )


NO_DEFINITIONS: Final = Definitions(
    np.zeros(0, np.int64), np.zeros(0, np.int64), [], [], np.zeros(0, np.int64)
)


@dataclass(slots=True)
class Definition:
    """A definition with those nested in it, for code that walks them one by one."""

    start_row: int
    end_row: int
    symbol: str
    kind: str
    children: list[Definition] = field(default_factory=list)


def tree(found: Definitions) -> list[Definition]:
    """The top-level definitions, each holding those nested in it."""
    nodes = [Definition(*row) for row in found.rows()]
    roots: list[Definition] = []
    for node, parent in zip(nodes, found.parent.tolist(), strict=True):
        (roots if parent < 0 else nodes[parent].children).append(node)
    return roots


_parsers = threading.local()


def _parser(language: str) -> tree_sitter.Parser:
    cache: dict[str, tree_sitter.Parser] | None = getattr(_parsers, "cache", None)
    if cache is None:
        cache = {}
        _parsers.cache = cache
    parser = cache.get(language)
    if parser is None:
        parser = tree_sitter.Parser(grammar(language).language)
        cache[language] = parser
    return parser


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def definitions(data: bytes, language: str, outline: Outline | None) -> Definitions:
    """The definitions of a blob (valid UTF-8), nested ones under containers only.

    The parser reads the outline when there is one; rows map back through its row map. A
    node ending with a newline (at column 0) ends on the row before. Rows are the parser's
    own points (it counts b"\\n" as the chunker does), not recounted from byte offsets.
    """
    text = data if outline is None else outline.text
    needed = _DEFINING_BYTES.get(language)
    if needed is not None and not any(byte in text for byte in needed):
        return NO_DEFINITIONS
    parser = _parser(language)
    tree = parser.parse(text)
    if outline is not None and language in _REPARSE_ON_ERROR and tree.root_node.has_error:
        outline, text = None, data
        tree = parser.parse(text)
    matches = tree_sitter.QueryCursor(grammar(language).query).matches(tree.root_node)
    # By (start, -end): sorted, an enclosing node comes before those it holds.
    found: dict[tuple[int, int], tuple[str, str, int, int, int]] = {}
    bases: list[tuple[tuple[int, int], str]] = []
    receivers: dict[tuple[int, int], str] = {}
    for _, captures in matches:
        extending = captures.get("inherits")
        if extending:
            node, base = extending[0], captures["base"][0]
            written = _base_name(_decode(text[base.start_byte : base.end_byte]))
            if written:
                bases.append(((node.start_byte, -node.end_byte), written))
            continue
        node = captures["def"][0]
        key = (node.start_byte, -node.end_byte)
        if key in found:
            continue
        name_node = captures["name"][0]
        symbol = _decode(text[name_node.start_byte : name_node.end_byte])
        if node.type == "impl_item" and _forwards(node, text, symbol):
            continue
        receiver = captures.get("receiver")
        if receiver:
            owner = _owner(_decode(text[receiver[0].start_byte : receiver[0].end_byte]))
            symbol = f"{owner}.{symbol}" if owner else symbol
        named = captures.get("receiver_name")
        if named:
            receivers[key] = _decode(text[named[0].start_byte : named[0].end_byte])
        first, (last, column) = node.start_point[0], node.end_point
        # Ends right after a newline: the node's last row is the one before.
        if column == 0 and last > first:
            last -= 1
        found[key] = (symbol, node.type, first, last, name_node.start_point[0])
    return _nested(found, bases, receivers, outline)


def _nested(
    found: dict[tuple[int, int], tuple[str, str, int, int, int]],
    bases: list[tuple[tuple[int, int], str]],
    receivers: dict[tuple[int, int], str],
    outline: Outline | None,
) -> Definitions:
    """The definitions found (by (start byte, -end byte)) nested in pre-order, with bases
    and receiver names."""
    if not found:
        return NO_DEFINITIONS
    firsts: list[int] = []
    lasts: list[int] = []
    name_rows: list[int] = []
    symbols: list[str] = []
    kinds: list[str] = []
    parents: list[int] = []
    # The open definitions: (end byte, index, depth, whether it is a container).
    stack: list[tuple[int, int, int, bool]] = []
    index_of: dict[tuple[int, int], int] = {}
    for key in sorted(found):
        start_byte = key[0]
        symbol, kind, first, last, named_on = found[key]
        while stack and stack[-1][0] <= start_byte:
            stack.pop()
        parent, depth = -1, 1
        if stack:
            _, parent, outer_depth, container = stack[-1]
            if outer_depth >= MAX_NESTING or not container:
                continue
            symbol = f"{symbols[parent]}.{symbol}"
            depth = outer_depth + 1
        index_of[key] = len(symbols)
        stack.append((-key[1], len(symbols), depth, kind in CONTAINER_KINDS))
        firsts.append(first)
        lasts.append(last)
        name_rows.append(named_on)
        symbols.append(symbol)
        kinds.append(kind)
        parents.append(parent)
    start_row = np.asarray(firsts, dtype=np.int64)
    end_row = np.asarray(lasts, dtype=np.int64)
    name_row = np.asarray(name_rows, dtype=np.int64)
    if outline is not None:
        start_row, end_row = outline.rows[start_row], outline.rows[end_row]
        name_row = outline.rows[name_row]
    kept = [(index_of[key], written) for key, written in bases if key in index_of]
    named = [(index_of[key], name) for key, name in receivers.items() if key in index_of]
    return Definitions(
        start_row,
        end_row,
        symbols,
        kinds,
        np.asarray(parents, dtype=np.int64),
        np.asarray([i for i, _ in kept], dtype=np.int64),
        [written for _, written in kept],
        np.asarray([i for i, _ in named], dtype=np.int64),
        [name for _, name in named],
        name_row,
    )


def _forwards(impl: tree_sitter.Node, text: bytes, name: str) -> bool:
    """Whether a Rust impl is for a reference to its own type parameter (`impl<R: Read> Read
    for &mut R`): it forwards to whatever R is, so it is no type's, and `R::read(self)` in
    it must not read as a call of itself."""
    written = impl.child_by_field_name("type")
    parameters = impl.child_by_field_name("type_parameters")
    if written is None or written.type != "reference_type" or parameters is None:
        return False
    for parameter in parameters.named_children:
        named = parameter.child_by_field_name("name") or parameter
        if _decode(text[named.start_byte : named.end_byte]) == name:
            return True
    return False


def _owner(receiver: str) -> str:
    """What a definition is a member of, from its receiver as written: a dotted name
    (`Foo.prototype` -> `Foo`, as ctags has it), or "" for anything else (`a().b`)."""
    owner = receiver.removesuffix(".prototype")
    return owner if _DOTTED_NAME.fullmatch(owner) else ""


def _base_name(written: str) -> str:
    """A base as written, without type arguments, pointers or blanks (`a::Tr<T>` -> `a::Tr`)."""
    angle = written.find("<")
    if angle >= 0:
        written = written[:angle]
    return "".join(written.split()).lstrip("*&")
