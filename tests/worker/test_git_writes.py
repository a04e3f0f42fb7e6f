"""No worker reaches a git write: every git write in the code base is the mirror's, and the
docs ref is written by one module, which no worker module imports."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

PROJECT = Path(__file__).resolve().parents[2]
GIT_WRITES: Final = frozenset(
    {
        "create_commit", "create_blob", "create_blob_fromdisk", "create_blob_fromworkdir",
        "TreeBuilder", "create_reference", "create_reference_direct", "create_reference_symbolic",
        "set_target", "set_head", "init_repository", "clone_repository", "create_tag",
        "create_branch", "add_fetch", "set_url", "write_tree", "create_note", "add_worktree",
        "amend_commit",
    }
)  # fmt: skip
"""pygit2 calls that write objects or refs, whatever their receiver."""
ON_GIT_RECEIVERS: Final = frozenset(
    {"create", "delete", "rename", "fetch", "push", "compress", "apply", "merge", "reset",
     "checkout", "stash"}
)  # fmt: skip
"""Names that write when called on a repository, its remotes or its references (and are
ordinary calls elsewhere: `itertools.compress`, a NATS `fetch`)."""
GIT_RECEIVERS: Final = ("repo", "remotes", "references")
WORKER_ENTRY: Final = "worker.capabilities.table"
"""Where `repo-reader serve` assembles a worker."""


def modules() -> dict[str, ast.Module]:
    """Every module of the `worker` package, parsed, by dotted name."""
    found = {}
    for path in sorted((PROJECT / "worker").rglob("*.py")):
        name = ".".join(path.relative_to(PROJECT).with_suffix("").parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), str(path))
    return found


def git_writes(tree: ast.Module) -> set[str]:
    """The git write calls a module makes."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in GIT_WRITES:
            found.add(name)
        elif name in ON_GIT_RECEIVERS and isinstance(func, ast.Attribute):
            receiver = ast.unparse(func.value)
            if any(word in receiver for word in GIT_RECEIVERS):
                found.add(f"{receiver}.{name}")
    return found


def imported(tree: ast.Module, known: set[str]) -> set[str]:
    """The `worker` modules a module imports, anywhere in it (packages' __init__ included)."""
    found = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            for end in range(1, len(parts) + 1):
                prefix = ".".join(parts[:end])
                if prefix in known:
                    found.add(prefix)
    return found


def reachable(start: str, parsed: dict[str, ast.Module]) -> set[str]:
    """Every worker module importing `start` loads, transitively."""
    known = set(parsed)
    seen = {start}
    todo = [start]
    while todo:
        for name in imported(parsed[todo.pop()], known) - seen:
            seen.add(name)
            todo.append(name)
    return seen


def test_only_the_mirror_and_the_docs_writer_write_to_git() -> None:
    """Git writes happen in two modules: the mirror's fetch (clone and fetch into its bare
    repositories) and the docs writer (commits on refs/repo-reader/docs)."""
    writers = {name: calls for name, tree in modules().items() if (calls := git_writes(tree))}
    assert set(writers) == {"worker.mirror.fetch", "worker.docs.writer"}
    assert writers["worker.docs.writer"] == {
        "create_commit", "create_blob", "TreeBuilder", "repo.references.create", "set_target",
    }  # fmt: skip


def test_no_worker_module_reaches_a_git_write() -> None:
    """Nothing a worker loads calls a git write, nor imports the mirror or the docs writer;
    the mirror service does reach the writer."""
    parsed = modules()
    worker = reachable(WORKER_ENTRY, parsed)
    assert "worker.capabilities.status" in worker  # the walk does follow the tools
    assert "worker.docs.freshness" in worker
    assert {name for name in worker if git_writes(parsed[name])} == set()
    assert not {n for n in worker if n.startswith("worker.mirror") or n == "worker.docs.writer"}
    assert "worker.docs.writer" in reachable("worker.mirror.service", parsed)


def test_only_the_writer_names_the_docs_ref_for_writing() -> None:
    """The docs ref is created and moved by the writer alone: no other module passes DOCS_REF
    (or its value) to a git write."""
    for name, tree in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and git_writes(ast.Module([ast.Expr(node)], [])):
                text = ast.unparse(node)
                if "DOCS_REF" in text or "repo-reader/docs" in text:
                    assert name == "worker.docs.writer", text
