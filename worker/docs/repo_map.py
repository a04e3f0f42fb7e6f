"""The repository map: directories with their sizes, then the files the code refers to most,
each with its top entities' signatures, bounded to what an agent's context takes."""

from __future__ import annotations

from collections import Counter
from typing import Final

from worker.docs.graph_facts import EntityLine, GraphFacts
from worker.docs.source import DocSource
from worker.docs.writing import Bounded, code, markdown_head
from worker.index.views.graph.model import EntityType
from worker.languages import language_of

TABLE_DEPTH: Final = 2
"""Directories this deep (or less) get a row of their own in the table."""
ENTITIES_PER_FILE: Final = 6
MEMBERS_PER_CLASS: Final = 4


def _directory(path: str, depth: int) -> str:
    parts = path.split("/")[:-1]
    return "/".join(parts[:depth]) or "."


def render_repo_map(source: DocSource) -> str:
    """The map as Markdown."""
    facts = GraphFacts(source)
    graph = facts.graph
    out = Bounded(source.config.docs.max_document_chars)
    out.must(
        *markdown_head(
            source,
            "Repository map",
            "Directories first, then the files the rest of the code refers to most, each with "
            "its top-level entities (signature and first docstring line).",
        )
    )
    files: Counter[str] = Counter()
    for entry in source.files:
        parts = entry.path.split("/")[:-1]
        for depth in range(min(len(parts), TABLE_DEPTH) + 1):
            files["/".join(parts[:depth]) or "."] += 1
    classes: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    for node in range(facts.n_plain, graph.n_nodes):
        parts = graph.paths[node].split("/")[:-1]
        kind = classes if graph.types[node] == EntityType.CLASS else functions
        for depth in range(min(len(parts), TABLE_DEPTH) + 1):
            kind["/".join(parts[:depth]) or "."] += 1
    out.must(
        "## Directories",
        "",
        f"Every directory to depth {TABLE_DEPTH}, with what it holds below it.",
        "",
        "| directory | files | classes | functions |",
        "|---|---:|---:|---:|",
    )
    for directory in sorted(files):
        out.add(
            f"| {code(directory)} | {files[directory]} | {classes[directory]} | "
            f"{functions[directory]} |"
        )
    out.must(
        "",
        "## Files",
        "",
        "Files in path order; chosen by how often the rest of the code refers to them "
        "(imports, calls, bases), as many as the bound allows.",
        "",
    )
    ranked = sorted(facts.files, key=lambda n: (-int(facts.file_weight[n]), graph.paths[n]))
    chosen: dict[int, list[str]] = {}
    budget = Bounded(out.max_chars - out.used)
    for file_node in ranked:
        if budget.full:
            budget.left_out += 1  # nothing more fits: not even read
            continue
        block = _file_block(source, facts, file_node)
        if budget.add(*block):
            chosen[file_node] = block
    for file_node in sorted(chosen):
        out.must(*chosen[file_node])
    out.left_out += budget.left_out
    return out.text("files")


def _file_block(source: DocSource, facts: GraphFacts, file_node: int) -> list[str]:
    graph = facts.graph
    path = graph.paths[file_node]
    language = language_of(path) or "text"
    lines_count = int(graph.end_line[file_node])
    refs = int(facts.file_weight[file_node])
    referred = f", referred to {refs} times" if refs else ""
    block = [f"- {code(path)} ({language}, {lines_count} lines{referred})"]
    top = facts.top_entities(file_node)
    if not top:
        return block
    text = source.lines(path)
    for node in top[:ENTITIES_PER_FILE]:
        block.append("  " + _entity_item(facts.entity_line(node, text)))
        if graph.types[node] == EntityType.CLASS:
            members = sorted(facts.members(node), key=lambda m: (-int(facts.referenced[m]), m))[
                :MEMBERS_PER_CLASS
            ]
            for member in sorted(members):
                block.append("    " + _entity_item(facts.entity_line(member, text)))
    if len(top) > ENTITIES_PER_FILE:
        block.append(f"  - … {len(top) - ENTITIES_PER_FILE} more")
    return block


def _entity_item(entity: EntityLine) -> str:
    line = f"- {code(entity.signature)} (L{entity.start})"
    return f"{line} — {entity.summary}" if entity.summary else line
