"""The architecture note: the module import graph, as text and as a Mermaid diagram.

Only the product's own code counts (tests, examples and docs are left out). Modules are
files when few enough files import one another, else directories at the
deepest level that gives at most `[docs] architecture_max_modules` of them. An edge counts
the file-level imports (resolved by the entity graph) from one module into another.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from worker.docs.api_index import is_product_path
from worker.docs.graph_facts import GraphFacts
from worker.docs.source import DocSource
from worker.docs.writing import Bounded, code, markdown_head
from worker.index.views.graph.model import Relation

MAX_DIAGRAM_EDGES: Final = 150
"""Mermaid renderers give up on much larger graphs; the heaviest edges are drawn."""


def file_imports(facts: GraphFacts) -> Counter[tuple[str, str]]:
    """(importing file, imported file) -> how many import edges, self-imports left out."""
    graph = facts.graph
    edges = graph.edges
    found: Counter[tuple[str, str]] = Counter()
    for row in (edges.relation == Relation.IMPORT).nonzero()[0].tolist():
        source = int(facts.file_of[int(edges.source[row])])
        target = int(facts.file_of[int(edges.target[row])])
        if source < 0 or target < 0 or source == target:
            continue
        importer, imported = graph.paths[source], graph.paths[target]
        if is_product_path(importer) and is_product_path(imported):
            found[(importer, imported)] += 1
    return found


def module_of(path: str, depth: int | None) -> str:
    """The module of a file: itself (depth None), else its directory cut to `depth` parts."""
    if depth is None:
        return path
    return "/".join(path.split("/")[:-1][:depth]) or "."


def choose_depth(paths: set[str], max_modules: int) -> int | None:
    """Files (None) when they are few enough, else the deepest directory level that is."""
    if len(paths) <= max_modules:
        return None
    deepest = max((p.count("/") for p in paths), default=1)
    for depth in range(deepest, 0, -1):
        if len({module_of(p, depth) for p in paths}) <= max_modules:
            return depth
    return 1


def render_architecture(source: DocSource) -> str:
    """The note as Markdown."""
    facts = GraphFacts(source)
    limit = source.config.docs.architecture_max_modules
    imports = file_imports(facts)
    paths = {p for pair in imports for p in pair}
    depth = choose_depth(paths, limit)
    edges: Counter[tuple[str, str]] = Counter()
    for (importer, imported), count in imports.items():
        a, b = module_of(importer, depth), module_of(imported, depth)
        if a != b:
            edges[(a, b)] += count
    modules = sorted({m for pair in edges for m in pair})
    unit = "files" if depth is None else f"directories to depth {depth}"
    out = Bounded(source.config.docs.max_document_chars)
    out.must(
        *markdown_head(
            source,
            "Architecture",
            f"The module import graph: {len(modules)} modules ({unit}), {len(edges)} "
            "dependencies between them, counted from the imports the entity graph resolves "
            "(tests, examples and docs left out).",
        )
    )
    if not edges:
        out.must("_No import between modules was resolved._")
        return out.text("modules")
    out.must("## Diagram", "", "```mermaid", "flowchart LR")
    node_id = {module: f"m{i}" for i, module in enumerate(modules)}
    for module in modules:
        label = module.replace('"', "#quot;")
        out.must(f'    {node_id[module]}["{label}"]')
    heaviest = sorted(edges.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_DIAGRAM_EDGES]
    for (a, b), count in sorted(heaviest):
        out.must(f"    {node_id[a]} -->|{count}| {node_id[b]}")
    out.must("```", "")
    if len(edges) > MAX_DIAGRAM_EDGES:
        out.must(
            f"_The diagram draws the {MAX_DIAGRAM_EDGES} heaviest of {len(edges)} "
            "dependencies; the list below has them all._",
            "",
        )
    out.must("## Modules", "", "Each module, what it imports and what imports it (import counts).")
    outgoing: dict[str, list[str]] = {}
    incoming: dict[str, list[str]] = {}
    for (a, b), count in sorted(edges.items()):
        outgoing.setdefault(a, []).append(f"{code(b)} ({count})")
        incoming.setdefault(b, []).append(f"{code(a)} ({count})")
    for module in modules:
        out.add(
            "",
            f"### {code(module)}",
            "",
            f"- imports: {', '.join(outgoing.get(module, [])) or 'nothing resolved'}",
            f"- imported by: {', '.join(incoming.get(module, [])) or 'nothing resolved'}",
        )
    return out.text("modules")
