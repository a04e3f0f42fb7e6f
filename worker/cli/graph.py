"""`repo-reader graph search|traverse|retrieve|diff`: the entity graph from a shell.

Readable by default; `--json` prints the documents of seed 003 (section 4: `results` of a
search, the `subgraph` of a traversal, the `entities` retrieved), each entity with its
license and SWHID besides; `--format tree` prints a traversal as the seed's tree text.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

import msgspec

from contracts.graph import (
    GraphDiffRequest,
    GraphDiffResponse,
    GraphRetrieveRequest,
    GraphRetrieveResponse,
    GraphSearchRequest,
    GraphSearchResponse,
    GraphTraverseRequest,
    GraphTraverseResponse,
)
from contracts.registry import BATCHED, MESSAGES
from contracts.subjects import Subject
from worker.cli.exits import ExitCode
from worker.cli.options import wire_text
from worker.client import shown_path
from worker.service.replies import answer_fields, join_batches

ENTITY_TYPES: Final = ("directory", "file", "class", "function")
RELATIONS: Final = ("contain", "import", "invoke", "inherit")


def add_graph_commands(commands: Any) -> None:
    """Add `graph` and its four subcommands to `commands` (an argparse subparsers object)."""
    graph = commands.add_parser("graph", help="search and walk the code entity graph")
    subcommands = graph.add_subparsers(dest="graph_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", help="write the output to this file instead of stdout")
    common.add_argument("--timeout", type=float, default=30.0)
    common.add_argument("repo", metavar="OWNER/NAME", type=wire_text)
    pinned = argparse.ArgumentParser(add_help=False, parents=[common])
    pinned.add_argument(
        "--revision", type=wire_text, help="commit sha, tag or branch (default: mirrored head)"
    )

    search = subcommands.add_parser("search", parents=[pinned], help="find entities")
    search.add_argument("query", type=wire_text)
    search.add_argument("--type", action="append", dest="types", choices=ENTITY_TYPES)
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--no-bm25", action="store_true", help="names and paths only")
    search.add_argument("--snippet", choices=("fold", "preview", "full"), default="preview")
    search.add_argument("--no-require-license", action="store_true")

    traverse = subcommands.add_parser("traverse", parents=[pinned], help="walk from entities")
    traverse.add_argument("start", nargs="+", metavar="ENTITY_ID", type=wire_text)
    traverse.add_argument("--depth", type=int, default=1)
    traverse.add_argument("--relation", action="append", dest="relations", choices=RELATIONS)
    traverse.add_argument("--type", action="append", dest="types", choices=ENTITY_TYPES)
    traverse.add_argument(
        "--direction", choices=("forward", "backward", "bidirectional"), default="forward"
    )
    traverse.add_argument("--format", choices=("graph", "tree"), default="graph")
    traverse.add_argument("--max-nodes", type=int)

    retrieve = subcommands.add_parser("retrieve", parents=[pinned], help="read entities' code")
    retrieve.add_argument("ids", nargs="+", metavar="ENTITY_ID", type=wire_text)
    retrieve.add_argument("--context", type=int, default=0, help="lines before and after")
    retrieve.add_argument("--metadata", action="store_true")
    retrieve.add_argument("--no-require-license", action="store_true")

    diff = subcommands.add_parser("diff", parents=[common], help="what changed between revisions")
    diff.add_argument("base", metavar="BASE", type=wire_text)
    diff.add_argument("head", metavar="HEAD", type=wire_text)
    diff.add_argument("--type", action="append", dest="types", choices=ENTITY_TYPES)
    diff.add_argument("--max-changes", type=int, default=500)


def graph_request(args: argparse.Namespace) -> msgspec.Struct:
    """The request a graph subcommand's arguments describe."""
    types = tuple(args.types) if getattr(args, "types", None) else None
    match args.graph_command:
        case "search":
            return GraphSearchRequest(
                repo=args.repo,
                revision=args.revision,
                query=args.query,
                entity_types=types,
                limit=args.limit,
                use_bm25=not args.no_bm25,
                snippet_mode=args.snippet,
                require_license=not args.no_require_license,
            )
        case "traverse":
            return GraphTraverseRequest(
                repo=args.repo,
                revision=args.revision,
                start_entities=tuple(args.start),
                depth=args.depth,
                relations=tuple(args.relations) if args.relations else None,
                entity_types=types,
                direction=args.direction,
                format=args.format,
                max_nodes=args.max_nodes,
            )
        case "retrieve":
            return GraphRetrieveRequest(
                repo=args.repo,
                revision=args.revision,
                entity_ids=tuple(args.ids),
                include_context=args.context,
                include_metadata=args.metadata,
                require_license=not args.no_require_license,
            )
        case "diff":
            return GraphDiffRequest(
                repo=args.repo,
                base=args.base,
                head=args.head,
                entity_types=types,
                max_changes=args.max_changes,
            )
    raise AssertionError(args.graph_command)


_SUBJECTS: Final[dict[str, Subject]] = {
    "search": Subject.GRAPH_SEARCH,
    "traverse": Subject.GRAPH_TRAVERSE,
    "retrieve": Subject.GRAPH_RETRIEVE,
    "diff": Subject.GRAPH_DIFF,
}


async def run_graph_command(args: argparse.Namespace) -> tuple[str, ExitCode]:
    """Send the subcommand's request; the text to print and the exit code it earns.

    Failures the service answers raise RepoReaderFailure; an unreachable server raises too.
    """
    from worker.cli.connection import connect

    request = graph_request(args)
    subject = _SUBJECTS[args.graph_command]
    response_type, items = MESSAGES[subject][1], BATCHED[subject]
    async with await connect(args.nats, timeout=args.timeout, max_reconnect_attempts=1) as client:
        batches = await client.call(subject, request, response_type)
    answer = join_batches(batches, items) if items else batches[0]
    empty = isinstance(answer, GraphSearchResponse) and not answer.entities
    if isinstance(answer, GraphDiffResponse):
        empty = not answer.entities and not answer.edges
    text = (
        json.dumps(seed_document(answer, request), indent=2, ensure_ascii=False)
        if args.json
        else readable(answer)
    )
    return text, ExitCode.NO_RESULTS if empty else ExitCode.SUCCESS


def seed_document(answer: Any, request: Any) -> dict[str, Any]:
    """The seed's JSON document of an answer (section 4), our extra fields alongside."""
    if isinstance(answer, GraphSearchResponse):
        return {
            "query": request.query,
            "total_results": answer.total_count,
            "results": [
                _without_none(
                    {
                        "entity_id": e.id,
                        "name": e.name,
                        "type": e.entity_type,
                        "file_path": e.file_path,
                        "line_range": list(e.line_range) if e.line_range else None,
                        "score": e.score,
                        "snippet": msgspec.to_builtins(e.snippet) if e.snippet else None,
                        "license": e.license,
                        "swhid": e.swhid,
                    }
                )
                for e in answer.entities
            ],
            "commit": answer.commit,
        }
    if isinstance(answer, GraphTraverseResponse):
        return {
            "start_entities": list(answer.start_entities),
            "subgraph": {
                "nodes": [
                    _without_none(
                        {
                            "id": n.id,
                            "name": n.name,
                            "type": n.entity_type,
                            "file": n.file_path,
                            "line_range": list(n.line_range) if n.line_range else None,
                            "depth": n.depth,
                        }
                    )
                    for n in answer.nodes
                ],
                "edges": [msgspec.to_builtins(e) for e in answer.edges],
            },
            "truncated": answer.truncated,
            "commit": answer.commit,
        }
    if isinstance(answer, GraphRetrieveResponse):
        return {
            "entities": [
                _without_none(
                    {
                        "id": e.id,
                        "name": e.name,
                        "type": e.entity_type,
                        "file_path": e.file_path,
                        "line_range": list(e.line_range) if e.line_range else None,
                        "code": e.code,
                        "code_truncated": e.code_truncated,
                        "context_before": e.context_before,
                        "context_after": e.context_after,
                        "metadata": msgspec.to_builtins(e.metadata) if e.metadata else None,
                        "license": e.license,
                        "swhid": e.swhid,
                    }
                )
                for e in answer.entities
            ],
            "commit": answer.commit,
        }
    return answer_fields(answer)


def _without_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def readable(answer: Any) -> str:
    """An answer as text for a terminal."""
    if isinstance(answer, GraphSearchResponse):
        if not answer.entities:
            return "no entities found"
        lines = []
        for e in answer.entities:
            path = shown_path(e.file_path)
            where = f"{path}:{e.line_range[0]}" if e.line_range else path
            lines.append(f"{e.score:.2f}  {e.name} ({e.entity_type}) [{e.id}] - {where}")
            shown = e.snippet.fold or e.snippet.preview or e.snippet.full if e.snippet else None
            if shown:
                lines.extend(f"      {line}" for line in shown.splitlines())
        return "\n".join(lines)
    if isinstance(answer, GraphTraverseResponse):
        if answer.tree is not None:
            return answer.tree
        nodes = [f"{'  ' * n.depth}{n.name} ({n.entity_type}) [{n.id}]" for n in answer.nodes]
        edges = [f"{e.source} -[{e.relation}]-> {e.target}" for e in answer.edges]
        return "\n".join([*nodes, "", *edges]) if edges else "\n".join(nodes)
    if isinstance(answer, GraphRetrieveResponse):
        parts = []
        for d in answer.entities:
            span = f"{d.line_range[0]}-{d.line_range[1]}" if d.line_range else "-"
            parts.append(f"# {d.id} ({d.entity_type}) lines {span} license={d.license or '-'}")
            if d.code is not None:
                parts.append(d.code)
        return "\n".join(parts)
    assert isinstance(answer, GraphDiffResponse)
    lines = [f"{answer.base_commit[:12]}..{answer.head_commit[:12]}"]
    lines += [f"{c.change:<8} {c.entity_type:<9} {c.id}" for c in answer.entities]
    lines += [f"{c.change:<8} {c.relation:<9} {c.source} -> {c.target}" for c in answer.edges]
    if answer.truncated:
        lines.append(f"... {answer.entity_changes} entity and {answer.edge_changes} edge changes")
    return "\n".join(lines)
