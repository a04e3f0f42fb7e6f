"""What an import means in each language: the node it names and the name it binds.

Each reader takes the importing file, the module as written, the name imported from it
(None for the module itself, `*` for all its names) and the alias, and resolves them by
the language's module rules (see `scope.Scopes`); an import it cannot place is None.
"""

from __future__ import annotations

from typing import Final

from worker.index.views.graph.reads import directory_key, file_key
from worker.index.views.graph.scope import Scopes

_Resolved = tuple[int | None, str | None]
"""What an import resolves to (a node; -1 for the root directory) and the name it binds."""


def no_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    """A language whose imports the graph does not resolve."""
    return None, None


def _python_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    scope = scopes.files[file]
    base = scopes.python_module(scope.path, module)
    if name is None:
        if alias is not None:
            return base, alias
        # `import a.b.c` binds `a`, the top package; the edge goes to a.b.c.
        first = module.split(".", maxsplit=1)[0]
        top = scopes.python_module(scope.path, first)
        if top is not None and top >= 0:
            scope.bindings.setdefault(first, top)
        return base, None
    if name == "*":
        if base is not None:
            scope.wildcards += (base,)
        return base, None
    member = scopes.member(base, name) if base is not None else None
    if member is None:
        return base, None
    return member, alias or name


def _js_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    base = scopes.js_module(scopes.paths[file], module)
    if base is None or name in (None, "*", "default"):
        return base, alias
    member = scopes.member(base, name)
    return (base if member is None else member), alias or name


def _go_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    parts = module.split("/")
    scopes.reads.path(directory_key(module))
    found = scopes.dir_nodes.get(module)
    if found is None and "." in parts[0]:  # a module path (`github.com/...`), not the stdlib
        found = scopes.directory_by_suffix(module)
    return found, alias or parts[-1]


def _java_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    scope = scopes.files[file]
    folder = module.replace(".", "/")
    if name == "*":
        package = scopes.directory_by_suffix(folder)
        if package is not None:
            scope.wildcards += (package,)
        return package, None
    found = scopes.file_by_suffix(scope.path, f"{folder}/{name}.java")
    if found is not None:
        return _or_file(scopes.defined(found, name or ""), found), name
    owner = scopes.file_by_suffix(scope.path, f"{folder}.java")  # import static a.B.m
    if owner is None:
        return None, None
    cls = scopes.defined(owner, folder.rsplit("/", 1)[-1])
    return scopes.member(cls, name or ""), name


def _rust_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    scope = scopes.files[file]
    parts = [p for p in module.split("::") if p]
    if not parts:
        return scopes.rust_module(scope.path, [name] if name else []), alias or name
    base = scopes.rust_module(scope.path, parts)
    if name is None:
        return base, alias or parts[-1]
    if name == "*":
        if base is not None:
            scope.wildcards += (base,)
        return base, None
    return (scopes.member(base, name) if base is not None else None), alias or name


def _php_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    """The class a `use` names: in the file its namespace path ends with, down to the last
    directory (PSR-4 maps a namespace's head to some directory, its tail to directories)."""
    parts = [p for p in module.split("\\") if p] + [name or ""]
    for start in range(max(1, len(parts) - 1)):
        found = scopes.file_by_suffix(scopes.paths[file], "/".join(parts[start:]) + ".php")
        if found is not None:
            return _or_file(scopes.defined(found, name or ""), found), alias or name
    return None, None


def _ruby_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    """The file a `require` loads: beside the importer (`require_relative`), the one whose
    path ends with a path that has a directory, or a bare name under `lib/` or the root (a
    bare `require "json"` is mostly a library's)."""
    path = module.removesuffix(".rb") + ".rb"
    if module.startswith(".") or "/" in module:
        return scopes.file_by_suffix(scopes.paths[file], path.removeprefix("./")), None
    scopes.reads.path(file_key(path))
    found = scopes.file_nodes.get(f"lib/{path}", scopes.file_nodes.get(path))
    return found, None


def _csharp_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    """A `using`: a namespace's (or a static class's) names come into scope wherever they
    are defined; the edge goes to its one definition in the commit, when it has one."""
    target = scopes.only(module)
    if target is not None and scopes.file_of(target) == file:
        target = None  # the file's own namespace: no edge to itself
    if name == "*":
        scopes.files[file].namespaces += (module,)
        return target, None
    return target, alias


def _kotlin_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    """A Kotlin import: a package is the directories its path ends with (one per source set);
    a name in it is defined at the top of any of their files."""
    packages = scopes.directories_ending(module.replace(".", "/"))
    if name == "*":
        scopes.files[file].wildcards += tuple(packages)
        return (packages[0] if packages else None), None
    for package in packages:
        found = scopes.member(package, name or "")
        if found is not None:
            return found, alias or name
    return None, None


IMPORT_READERS: Final = {  # C and C++ includes: `build._c_includes`
    "python": _python_import,
    "javascript": _js_import,
    "typescript": _js_import,
    "tsx": _js_import,
    "go": _go_import,
    "java": _java_import,
    "rust": _rust_import,
    "php": _php_import,
    "ruby": _ruby_import,
    "csharp": _csharp_import,
    "kotlin": _kotlin_import,
}


def _or_file(definition: int | None, file: int) -> int:
    """The definition an import names, else the file it is in."""
    return file if definition is None else definition
