"""The API index: every public entity with its signature and the first line of its docstring.

Public follows each language's own convention, read from names and headers only: Python
names and modules without a leading underscore, Go's capitalised names, `pub` in Rust,
`public` in Java, `export` in JavaScript and TypeScript, C and C++ definitions that are not
`static`. Tests, examples and documentation trees are not API.
"""

from __future__ import annotations

import re
from typing import Final

from worker.docs.graph_facts import GraphFacts
from worker.docs.source import DocSource
from worker.docs.writing import Bounded, code, markdown_head
from worker.languages import language_of

NOT_API_DIRECTORIES: Final = frozenset(
    {"test", "tests", "testing", "example", "examples", "doc", "docs", "benchmarks", "bench"}
)
_TEST_FILE: Final = re.compile(r"(^test_.*|.*_test\.[a-z]+|.*\.test\.[a-z]+|conftest\.py)$")
_NAME_PARTS: Final = re.compile(r"\.|::")


def is_product_path(path: str) -> bool:
    """Whether a file is the product's own code: not under tests, examples or docs, not a test."""
    parts = path.split("/")
    if any(part.lower() in NOT_API_DIRECTORIES for part in parts[:-1]):
        return False
    return not _TEST_FILE.match(parts[-1])


def is_api_path(path: str) -> bool:
    """Whether a file can hold API: product code, and for Python no private module."""
    if not is_product_path(path):
        return False
    parts = path.split("/")
    if language_of(path) == "python":
        return not any(
            part.startswith("_") and part not in {"__init__.py", "__main__.py"} for part in parts
        )
    return True


def is_public(path: str, name: str, signature: str) -> bool:
    """Whether an entity is public by its language's convention."""
    language = language_of(path)
    last = _NAME_PARTS.split(name)[-1]
    head = signature.lstrip()
    match language:
        case "python":
            return not any(part.startswith("_") for part in _NAME_PARTS.split(name))
        case "go":
            return last[:1].isupper()
        case "rust":
            return head.startswith("pub")
        case "java" | "csharp":
            return "public " in f" {head}"
        case "kotlin":  # public unless said otherwise
            return not re.search(r"\b(?:private|internal|protected)\b", head.split("(", 1)[0])
        case "javascript" | "typescript":
            return head.startswith("export")
        case "c" | "cpp":
            return not re.search(r"\bstatic\b", head.split("(", 1)[0])
        case "php":
            return not re.search(r"\b(?:private|protected)\b", head.split("(", 1)[0])
    return not last.startswith("_")


def render_api_index(source: DocSource) -> str:
    """The index as Markdown: files in path order, their public entities in line order."""
    facts = GraphFacts(source)
    graph = facts.graph
    out = Bounded(source.config.docs.max_document_chars)
    out.must(
        *markdown_head(
            source,
            "API index",
            "Public entities by their language's convention, with their signature and the "
            "first line of their docstring or leading comment.",
        )
    )
    by_file: dict[int, list[int]] = {}
    for node in range(facts.n_plain, graph.n_nodes):
        by_file.setdefault(int(facts.file_of[node]), []).append(node)
    listed = 0
    for file_node in facts.files:
        path = graph.paths[file_node]
        entities = by_file.get(file_node)
        if not entities or not is_api_path(path):
            continue
        if out.full:
            out.left_out += 1
            continue
        text = source.lines(path)
        items = []
        for node in sorted(entities, key=lambda n: (int(graph.start_line[n]), n)):
            entity = facts.entity_line(node, text)
            if not is_public(path, entity.name, entity.signature):
                continue
            item = f"- **{entity.name}** {code(entity.signature)} (L{entity.start})"
            items.append(f"{item} — {entity.summary}" if entity.summary else item)
        if items and out.add("", f"## {code(path)}", "", *items):
            listed += len(items)
    if not listed:
        out.must("_No public entity was found._")
    return out.text("files with entities")
