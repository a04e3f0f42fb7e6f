"""What a name means where it is written: the scopes and module rules the graph resolves by.

A reference is resolved only when a language's rules say what it names: a top-level
definition of its file, a name its imports bind, a method of the enclosing class or of a Go
method's receiver type (and of its bases), a module's member, a definition of the same
package (Go, Java, PHP), or the one definition of that name in C, C++ and Ruby (one global
namespace). Anything else (a library, a builtin, a method on an object of unknown type) is
left unresolved, never guessed.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

from worker.index.views.graph.model import EntityType
from worker.index.views.graph.reads import (
    Key,
    Phase,
    ReadKind,
    Reads,
    definitions_key,
    directory_key,
    entry_key,
    file_key,
    listing_key,
    module_key,
)

T = TypeVar("T")
_JS_EXTENSIONS: Final = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")
SELF_NAMES: Final = frozenset({"self", "this", "cls", "Self", "$this"})
"""What names the object a method runs on."""
SUPER_NAMES: Final = {
    "python": "super",
    "javascript": "super",
    "typescript": "super",
    "tsx": "super",
    "java": "super",
    "kotlin": "super",
    "csharp": "base",
    "php": "parent",
}
"""What names, in a method, its class's bases (`super().save(`, `base.Run(`, `parent::x(`)."""
SUPER_WORDS: Final = frozenset(SUPER_NAMES.values())
_BASE_CONSTRUCTORS: Final = frozenset({"javascript", "typescript", "tsx", "java", "csharp"})
"""Languages where the word alone is called in a constructor: the base's constructor
(`super(x)`, C#'s `: base(x)`), an edge to the base class."""
_MAX_BASE_DEPTH: Final = 6
NAMESPACES_SPAN_FILES: Final = frozenset({"cpp", "ruby", "csharp"})
"""Languages whose namespaces (modules) any file may open again: a name is sought in them
from the innermost out, by its qualified name, wherever it is defined."""
_GLOBAL_NAMES: Final = NAMESPACES_SPAN_FILES | {"c"}
"""Languages whose names are global once loaded: a name defined once in the commit is that
definition (C's functions; C++'s and C#'s namespaces and Ruby's modules)."""
_GLOBAL_TYPES: Final = frozenset({"ruby", "csharp"})
"""Of those, the languages whose global names are types only."""
MEMBER_SCOPED: Final = frozenset({"java", "cpp", "ruby", "csharp", "kotlin"})
"""Languages where a bare name in a method may be a member of its class (Ruby's `redirect
to(x)` is `self.to`)."""
_PACKAGED: Final = frozenset({"go", "kotlin"})
"""Languages whose package is a directory: a name defined at the top of one of its files is
defined in all of them."""
_JS_GRAMMARS: Final = frozenset({"javascript", "typescript", "tsx"})
_COMMONJS_EXPORTS: Final = ("exports", "module.exports")
_OWNED: Final = _JS_GRAMMARS | {"go"}
"""Languages whose top-level functions may be methods of an object (see `Scopes._owners`)."""


_DIRECTORY: Final = int(EntityType.DIRECTORY)
_FILE: Final = int(EntityType.FILE)
_CLASS: Final = int(EntityType.CLASS)
_BINDINGS: Final = int(ReadKind.BINDINGS)
_BASES: Final = int(ReadKind.BASES)
_IMPORTS: Final = int(Phase.IMPORTS)
_BASES_PHASE: Final = int(Phase.BASES)
"""The entity types, read kinds and phases as plain ints, for the lookups every reference
makes (an enum member takes ten times as long to name)."""


def owner_and_name(qualified: str) -> tuple[str, str]:
    """What a definition's qualified name says it is a member of ("" for none), and its own
    name (`Flask.route`: `Flask`, `route`)."""
    owner, _, name = qualified.rpartition(".")
    if "::" in name:  # C++ `void Foo::bar()` defined outside its class
        owner, _, name = qualified.rpartition("::")
    return owner, name


def _folder(path: str) -> str:
    """The directory of a path in the tree ("" at the root): `posixpath.dirname` for paths
    as a git tree has them (relative, no doubled slashes), without its generality."""
    return path.rpartition("/")[0]


def _joined(folder: str, path: str) -> str:
    """`path` relative to `folder`, normalised (`posixpath.normpath`, only where it may change
    something: a C tree resolves hundreds of thousands of includes)."""
    if not path or path[0] in "./" or "/." in path or "//" in path or path[-1] == "/":
        return posixpath.normpath(posixpath.join(folder, path))
    return f"{folder}/{path}" if folder else path


@dataclass(slots=True)
class FileScope:
    """One file's node, language, top-level definitions and import bindings.

    Its sequences are tuples, made again when one grows (rarely): the collector stops
    tracking a tuple of ints or strings, and a build holds a scope per file.
    """

    node: int
    path: str
    grammar: str | None
    top: dict[str, int] = field(default_factory=dict)
    bindings: dict[str, int] = field(default_factory=dict)
    wildcards: tuple[int, ...] = ()
    """Nodes whose every member is in scope (`from m import *`, Java `import a.b.*`)."""
    namespaces: tuple[str, ...] = ()
    """Namespaces whose names are in scope wherever they are defined (C#'s `using A.B;`)."""


def _python_modules(file_nodes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """The Python files (modules and packages' `__init__.py`) by every dotted suffix of their
    module name (`a.b.c`, `b.c`, `c`), each suffix's in path order."""
    first: dict[str, int] = {}
    more: dict[str, list[int]] = {}
    for path, node in file_nodes.items():
        if path.endswith(".py"):
            parts = path[:-3].removesuffix("/__init__").replace("/", ".").split(".")
            for i in range(len(parts)):
                name = ".".join(parts[i:])
                if name in first:
                    more.setdefault(name, [first[name]]).append(node)
                else:
                    first[name] = node
    # Tuples (see `FileScope`); a list only for the few suffixes that several files share.
    return {name: tuple(more[name]) if name in more else (node,) for name, node in first.items()}


class ByBaseName(Generic[T]):
    """Items (files, directories) by the base name of their path, each name's in the order
    given.

    Held as one list sorted by name, not a list per name, and made from lists, not pairs: a
    large tree has tens of thousands of names and paths, and as many new containers cost
    the collector passes over the build's heap.
    """

    def __init__(self, paths: Sequence[str], items: Sequence[T]) -> None:
        """Index `items` by the base names of `paths` (the path of each item)."""
        codes: dict[str, int] = {}
        code_of = [codes.setdefault(path.rpartition("/")[2], len(codes)) for path in paths]
        # Counting sort by name code: each name's items stay in the order given.
        bounds = [0] * (len(codes) + 1)
        for code in code_of:
            bounds[code + 1] += 1
        for code in range(len(codes)):
            bounds[code + 1] += bounds[code]
        at = bounds[:-1]
        placed: list[T] = list(items)
        for i in range(len(code_of)):
            code = code_of[i]
            placed[at[code]] = items[i]
            at[code] += 1
        self._codes = codes
        self._bounds = bounds
        self._items = placed

    def get(self, name: str) -> list[T]:
        """The items whose path's base name is `name`."""
        code = self._codes.get(name)
        if code is None:
            return []
        return self._items[self._bounds[code] : self._bounds[code + 1]]


class _FileScopes(dict[int, FileScope]):
    """Each file's scope, made when first asked for: most files of a large tree never are.

    A scope holds containers, and hundreds of thousands made at once cost more in the
    collector's passes over the graph's big lists than in making them.
    """

    def __init__(self, paths: dict[int, str], grammars: dict[str, str | None]) -> None:
        super().__init__()
        self._paths = paths
        self._grammars = grammars

    def __missing__(self, node: int) -> FileScope:
        path = self._paths[node]
        scope = self[node] = FileScope(node, path, self._grammars[path])
        return scope


class Scopes:
    """Every file's scope and every class's members, and the lookups over them."""

    def __init__(
        self,
        *,
        types: Sequence[int],
        file_nodes: dict[str, int],
        dir_nodes: dict[str, int],
        grammars: dict[str, str | None],
        entities_of: Callable[[int], Iterable[tuple[int, str, bool]]],
        file_of: Callable[[int], int],
        only_definitions: Callable[[set[str] | None], dict[str, int]],
    ) -> None:
        self.types = types
        self.reads = Reads()
        """What each file's resolution reads of the rest of the commit (see `reads`)."""
        self._entities_of = entities_of
        self._file_of = file_of
        self._only_definitions = only_definitions
        self._loaded_files: set[int] = set()
        self.carried: Callable[[int, int], None] | None = None
        """In a carried build: called before a file's state of a phase (its bindings, or its
        classes' bases) is read, to put what it carries in place (see `plan.Plan`)."""
        self._class_members: dict[tuple[int, str], int | None] | None = None
        """What `Class.name` is, remembered once every base is known (`bases_known`)."""
        self._class_member_reads: dict[tuple[int, str], tuple[Key, ...]] = {}
        """What finding each remembered `Class.name` read. Tuples, not sets: the collector
        stops tracking a tuple of ints and strings, and a large tree remembers hundreds of
        thousands."""
        self.file_nodes = file_nodes
        self.dir_nodes = dir_nodes
        self.paths: dict[int, str] = {node: path for path, node in file_nodes.items()}
        """Each file node's path."""
        self._grammars = grammars
        self._grammar_of = {node: grammars[path] for path, node in file_nodes.items()}
        self.files: dict[int, FileScope] = _FileScopes(self.paths, grammars)
        self.members: dict[tuple[int, str], dict[str, int]] = defaultdict(dict)
        """(file node, qualified class name) -> its methods and nested classes by name."""
        self.class_key: dict[int, tuple[int, str]] = {}
        self.bases: dict[tuple[int, str], tuple[int, ...]] = {}
        """Each class's bases (by its key), in the order written (a tuple, see `FileScope`)."""
        self._children: dict[int, dict[str, int]] | None = None
        self._only: dict[str, int] | None = None
        """C's top-level names, and the qualified names of `NAMESPACES_SPAN_FILES`, defined once
        in the commit, and that definition (see `only`)."""
        self._only_over: set[str] | None = None
        """The names `_only` was made for; None: every name."""
        self._expected: set[str] | None = None
        """The names `only` is expected to be asked (see `expect_only`)."""
        self._by_suffix: dict[tuple[str, str], int | None] = {}
        self._ending_dirs: dict[str, list[int]] = {}
        self._dirs_by_name: ByBaseName[str] | None = None
        self._files_by_name: ByBaseName[int] | None = None
        self._ending: dict[str, int | None] = {}
        self._module_choice: dict[tuple[str, str], int] = {}
        """Which of a module name's files an importer in a directory means (see
        `python_module`): the files of a package import the same modules."""
        self._owners: dict[int, str] = {}
        """What `this` is in a top-level Go or JavaScript function, by the function's node: a
        Go method's receiver type (`Context` of `Context.Next`), the object a JavaScript
        function is assigned to (`res` of `res.json`, `Router` of `Router.prototype.route`),
        or a JavaScript function's own name (a constructor, whose prototype holds methods)."""
        self._package_dirs: set[int] = set()
        self._modules: dict[str, tuple[int, ...]] | None = None
        self._dir_paths = {node: path for path, node in dir_nodes.items()}

    @property
    def children(self) -> dict[int, dict[str, int]]:
        """A directory's files and subdirectories by name.

        Listed when first asked: a build that resolves a few files of a large tree seldom
        asks.
        """
        if self._children is None:
            self._children = self._list_directories()
        return self._children

    @property
    def _packages(self) -> set[int]:
        """Directories holding a Go or Kotlin file (-1: the root): their files' top-level
        names are one package's."""
        if self._children is None:
            self._children = self._list_directories()
        return self._package_dirs

    def _list_directories(self) -> dict[int, dict[str, int]]:
        """Each directory's entries; notes which directories are Go or Kotlin packages."""
        dir_nodes = self.dir_nodes
        children: dict[int, dict[str, int]] = defaultdict(dict)
        for path, node in self.file_nodes.items():
            parent, _, name = path.rpartition("/")
            children[dir_nodes[parent] if parent else -1][name] = node
            if self._grammars[path] in _PACKAGED:
                self._package_dirs.add(dir_nodes[parent] if parent else -1)
        for path, node in dir_nodes.items():
            parent, _, name = path.rpartition("/")
            children[dir_nodes[parent] if parent else -1][name] = node
        return children

    def grammar(self, node: int) -> str | None:
        """A file's grammar; None for a directory or a file no parser reads."""
        return self._grammar_of.get(node)

    def scope(self, file: int) -> FileScope:
        """A file's scope, its definitions read in on first use.

        Not a read: what is looked up among them is (see `defined`, `Reads.definition`).
        """
        found = self.files[file]
        if file not in self._loaded_files:
            self._load(file, found)
        return found

    def defined(self, file: int, name: str) -> int | None:
        """A file's top-level definition of a name, if it has one."""
        self.reads.definition(file, name)
        return self.scope(file).top.get(name)

    def _load(self, file: int, scope: FileScope) -> None:
        self._loaded_files.add(file)
        for node, qualified, top_level in self._entities_of(file):
            self._add_entity(scope, node, qualified, top_level)

    def _add_entity(self, scope: FileScope, node: int, qualified: str, top_level: bool) -> None:
        """Record a definition: its file's top level, or a member of its class."""
        owner, name = owner_and_name(qualified)
        if top_level and not owner:
            scope.top.setdefault(name, node)
        elif owner:
            self.members[(scope.node, owner)].setdefault(name, node)
        if top_level and scope.grammar in _OWNED and (owner or scope.grammar != "go"):
            self._owners[node] = owner or name
        if self.types[node] == _CLASS:
            self.class_key[node] = (scope.node, qualified)

    def bases_known(self) -> None:
        """Every class's bases are recorded: a member looked up in a class stays what it is."""
        self._class_members = {}

    def class_of(self, node: int) -> tuple[int, str] | None:
        """The (file, qualified name) key of a class node, its file read in."""
        self.scope(self._file_of(node))
        return self.class_key.get(node)

    # Modules ---------------------------------------------------------------------------

    def python_module(self, importer: str, module: str) -> int | None:
        """The file (or package directory) a Python module name means from `importer`.

        -1 is the repository's root (`from . import x` in a top-level file).
        """
        dots = len(module) - len(module.lstrip("."))
        rest = module[dots:]
        if dots:
            base = _folder(importer)
            for _ in range(dots - 1):
                base = _folder(base)
            self.reads.path(directory_key(base))
            node: int | None = self.dir_nodes.get(base, -1) if base else -1
            for part in rest.split(".") if rest else []:
                node = self.member(node, part) if node is not None else None
            return node
        self.reads.path(module_key(rest))
        if self._modules is None:  # tabulated when first asked: a build may resolve no Python
            self._modules = _python_modules(self.file_nodes)
        candidates = self._modules.get(rest, ())
        if not candidates:
            first = rest.split(".")[0]
            self.reads.path(entry_key("", first))
            top = self.children[-1].get(first)
            if top is not None and self.types[top] == _DIRECTORY:
                node = top
                for part in rest.split(".")[1:]:
                    node = self.member(node, part) if node is not None else None
                return node
            return None
        here = _folder(importer)
        chosen = self._module_choice.get((here, rest))
        if chosen is None:
            # The shortest root (the repository's own package over a vendored copy), then a
            # module beside the importer, then the first path.
            chosen = self._module_choice[(here, rest)] = min(
                candidates,
                key=lambda n: (
                    self.paths[n].count("/"),
                    _folder(self.paths[n]) != here,
                    self.paths[n],
                ),
            )
        return chosen

    def js_module(self, importer: str, spec: str) -> int | None:
        """The file a relative JavaScript/TypeScript import names; packages are outside."""
        if not spec.startswith("."):
            return None
        target = posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))
        for tried in (target, *(target + e for e in _JS_EXTENSIONS)):
            self.reads.path(file_key(tried))
        for e in _JS_EXTENSIONS:
            self.reads.path(file_key(f"index{e}"))
        if target in self.file_nodes:
            return self.file_nodes[target]
        for candidate in (
            *(target + e for e in _JS_EXTENSIONS),
            *(f"{target}/index{e}" for e in _JS_EXTENSIONS),
        ):
            if candidate in self.file_nodes:
                return self.file_nodes[candidate]
        return None

    def directory_by_suffix(self, path: str) -> int | None:
        """The directory whose path ends the import path (Go packages), longest first."""
        self.reads.path(directory_key(path))
        parts = path.split("/")
        for i in range(len(parts)):
            found = self.dir_nodes.get("/".join(parts[i:]))
            if found is not None:
                return found
        return None

    def directories_ending(self, path: str) -> list[int]:
        """The directories whose path is `path` or ends with it, the shortest first: a
        Kotlin package under each source set (`src/main/kotlin/a/b`, `src/jvmMain/kotlin/a/b`)."""
        self.reads.path(directory_key(path))
        if path in self._ending_dirs:
            return self._ending_dirs[path]
        index = self._dirs_by_name
        if index is None:
            directories = list(self.dir_nodes)
            index = self._dirs_by_name = ByBaseName(directories, directories)
        suffix = "/" + path
        ending = sorted(
            (d for d in index.get(posixpath.basename(path)) if d == path or d.endswith(suffix)),
            key=lambda d: (len(d), d),
        )
        nodes = [self.dir_nodes[d] for d in ending]
        self._ending_dirs[path] = nodes
        return nodes

    def file_by_suffix(self, importer: str, path: str) -> int | None:
        """A file named by a path relative to the importer, else the shortest one ending it.

        Remembered by (the importer's directory, path): the files of a directory include
        the same headers, and a C tree includes each many times.
        """
        return self.file_in(importer.rpartition("/")[0], path)

    def file_in(self, folder: str, path: str, *, record: bool = True) -> int | None:
        """`file_by_suffix` for an importer in `folder` (`record`: as a read of the file being
        resolved)."""
        if record:
            self.reads.path(file_key(path))
        key = (folder, path)
        if key in self._by_suffix:
            return self._by_suffix[key]
        found = self.file_nodes.get(_joined(folder, path))
        if found is None:
            found = self.file_nodes.get(path)
        if found is None:
            found = self._shortest_ending(path)
        self._by_suffix[key] = found
        return found

    def _shortest_ending(self, path: str) -> int | None:
        if path in self._ending:
            return self._ending[path]
        suffix = "/" + path
        found = [
            node
            for node in self._files_named(posixpath.basename(path))
            if self.paths[node].endswith(suffix)
        ]
        shortest = min(found, key=lambda n: (len(self.paths[n]), self.paths[n]), default=None)
        self._ending[path] = shortest
        return shortest

    def _files_named(self, name: str) -> list[int]:
        index = self._files_by_name
        if index is None:
            index = self._files_by_name = ByBaseName(list(self.paths.values()), list(self.paths))
        return index.get(name)

    def rust_module(self, importer: str, path: Sequence[str]) -> int | None:
        """The file (or directory) a Rust module path names (`crate::a::b`, `super::x`)."""
        here = _folder(importer)
        stem = posixpath.basename(importer).rsplit(".", 1)[0]
        module_dir = here if stem in ("mod", "lib", "main") else f"{here}/{stem}".lstrip("/")
        parts = list(path)
        if parts and parts[0] == "crate":
            crate = (
                importer.split("/src/", maxsplit=1)[0] + "/src" if "/src/" in importer else "src"
            )
            self.reads.path(directory_key(crate))
            module_dir = crate if crate in self.dir_nodes else ""
            parts = parts[1:]
        while parts and parts[0] in ("self", "super"):
            if parts.pop(0) == "super":
                module_dir = _folder(module_dir)
        node: int | None = None
        for part in parts:
            self.reads.path(file_key(f"{part}.rs"))
            self.reads.path(file_key("mod.rs"))
            found = self.file_nodes.get(f"{module_dir}/{part}.rs".lstrip("/"))
            if found is None:
                found = self.file_nodes.get(f"{module_dir}/{part}/mod.rs".lstrip("/"))
            if found is None:
                return self.member(node, part) if node is not None else None
            node, module_dir = found, f"{module_dir}/{part}".lstrip("/")
        return node

    # Members and names -------------------------------------------------------------------

    def member(self, node: int | None, name: str, depth: int = 0) -> int | None:
        """What `node.name` is: a module's definition or submodule, a class's method."""
        if node is None or depth > _MAX_BASE_DEPTH:
            return None
        kind = self.types[node] if node >= 0 else _DIRECTORY
        if kind == _DIRECTORY:
            self.reads.path(entry_key(self._dir_paths.get(node, ""), name))
            children = self.children.get(node, {})
            for entry in (f"{name}.py", name, f"{name}.rs"):
                if entry in children:
                    child = children[entry]
                    if self.types[child] == _DIRECTORY:
                        self.reads.path(entry_key(self._dir_paths[child], "__init__"))
                        init = self.children.get(child, {}).get("__init__.py")
                        return init if init is not None else child
                    return child
            # Whether it is a package, and its files' definitions if it is (Go, Kotlin):
            # read as one, as any file coming or going may change them.
            folder = self._dir_paths.get(node, "")
            self.reads.path(listing_key(folder))
            if node not in self._packages:
                return None
            self.reads.path(definitions_key(folder))
            for child in children.values():
                if self.grammar(child) in _PACKAGED:
                    top = self.scope(child).top
                    if name in top:
                        return top[name]
            return None
        if kind == _FILE:
            found = self.defined(node, name)
            if found is not None:
                return found
            scope = self.files[node]
            self.reads.file(_BINDINGS, node)
            if self.carried is not None:
                self.carried(node, _IMPORTS)
            if name in scope.bindings:
                return scope.bindings[name]
            if scope.path.endswith("/__init__.py") or scope.path == "__init__.py":
                parent = self.dir_nodes.get(_folder(scope.path), -1)
                return self.member(parent, name, depth + 1)
            for exports in _COMMONJS_EXPORTS if scope.grammar in _JS_GRAMMARS else ():
                # `exports.x = function` in a CommonJS module: `require(...).x`.
                exported = self.members.get((node, exports), {}).get(name)
                if exported is not None:
                    return exported
            return None
        remembered = self._class_members
        if remembered is None:
            return self._class_member(node, name, depth)
        reads = self.reads
        key = (node, name)
        if key in remembered:
            reads.current.update(self._class_member_reads[key])  # what finding it read
            return remembered[key]
        outer, inner = reads.current, set[Key]()
        reads.current = inner
        found = remembered[key] = self._class_member(node, name, depth)
        reads.current = outer
        outer.update(inner)
        self._class_member_reads[key] = tuple(inner)
        return found

    def _class_member(self, node: int, name: str, depth: int) -> int | None:
        key = self.class_of(node)
        if key is None:
            return None
        self.reads.definition(key[0], name)
        method = self.members.get(key, {}).get(name)
        if method is None and self.grammar(key[0]) == "go":
            method = self._go_method(key, name)
        if method is not None:
            return method
        self.reads.file(_BASES, key[0])
        if self.carried is not None:
            self.carried(key[0], _BASES_PHASE)
        for base in self.bases.get(key, ()):
            inherited = self.member(base, name, depth + 1)
            if inherited is not None:
                return inherited
        return None

    def _go_method(self, key: tuple[int, str], name: str) -> int | None:
        """A method of a Go type declared in another file of its package."""
        folder = _folder(self.paths[key[0]])
        self.reads.path(listing_key(folder))
        self.reads.path(definitions_key(folder))
        package = self.dir_nodes.get(folder, -1)
        for file in self.children.get(package, {}).values():
            if file != key[0] and self.grammar(file) == "go":
                self.scope(file)
                method = self.members.get((file, key[1]), {}).get(name)
                if method is not None:
                    return method
        return None

    def enclosing_class(self, holder: int, parents: Sequence[int]) -> int | None:
        """The innermost class holding an entity (itself if it is one)."""
        node = holder
        while node >= 0 and self.types[node] != _FILE:
            if self.types[node] == _CLASS:
                return node
            node = parents[node]
        return None

    def receiver_class(self, holder: int, parents: Sequence[int]) -> int | None:
        """The class `self`/`this` means in an entity: the innermost class holding it, or a Go
        method's receiver type (declared in its package)."""
        found = self.enclosing_class(holder, parents)
        if found is not None or holder < 0 or self.types[holder] == _FILE:
            return found
        file = self._file_of(holder)
        owner = self._owners.get(holder) if self.scope(file).grammar == "go" else None
        if owner is None:
            return None
        found = self.lookup(file, holder, owner, parents)
        return found if found is not None and self.types[found] == _CLASS else None

    def _owned(self, file: int, holder: int, name: str) -> int | None:
        """`this.name` in a top-level function with no class: a method of its owner in its file
        (`this.send` in `res.json` is `res.send`)."""
        self.scope(file)
        owner = self._owners.get(holder)
        return None if owner is None else self.members.get((file, owner), {}).get(name)

    def lookup(self, file: int, holder: int, name: str, parents: Sequence[int]) -> int | None:
        """What a bare name means in `holder` (an entity, or the file itself)."""
        # `file` is the one being resolved, and its own state is resolved with it: not a read.
        scope = self.scope(file)
        if self.carried is not None:  # its imports' state, when they are not resolved again
            self.carried(file, _IMPORTS)
        if scope.grammar in MEMBER_SCOPED and holder != file:
            # The enclosing classes (and C++ namespaces), innermost first, bases included.
            owner = self.enclosing_class(holder, parents)
            while owner is not None:
                found = self.member(owner, name)
                if found is not None:
                    return found
                if scope.grammar != "cpp":
                    break
                outer = parents[owner]
                owner = None if outer < 0 else self.enclosing_class(outer, parents)
        if name in scope.top:
            return scope.top[name]
        if name in scope.bindings:
            return scope.bindings[name]
        for wildcard in scope.wildcards:
            found = self.member(wildcard, name)
            if found is not None:
                return found
        if scope.grammar in _PACKAGED:
            return self.member(self.dir_nodes.get(_folder(scope.path), -1), name)
        if scope.grammar in ("java", "php"):
            # A class of the same package (namespace): the file named after it beside this one.
            folder = _folder(scope.path)
            self.reads.path(entry_key(folder, name))
            package = self.dir_nodes.get(folder, -1)
            sibling = self.children.get(package, {}).get(f"{name}.{scope.grammar}")
            return None if sibling is None else self.defined(sibling, name)
        if scope.grammar in _GLOBAL_NAMES:
            found = self._global(scope, holder, name, parents)
            # Ruby's and C#'s global names are types; a method named alike in two places may
            # well be a mixin's or an extension's the graph cannot see.
            if found is not None and scope.grammar in _GLOBAL_TYPES:
                return found if self.types[found] == _CLASS else None
            return found
        return None

    def file_of(self, node: int) -> int:
        """The file an entity is defined in."""
        return self._file_of(node)

    def only(self, qualified: str) -> int | None:
        """The one definition of a (qualified) name in the commit, if it has one (see
        `_GLOBAL_NAMES`)."""
        self.reads.name(qualified)
        table, over = self._only, self._only_over
        if table is None or (over is not None and qualified not in over):
            expected = self._expected
            over = expected if table is None and expected and qualified in expected else None
            table = self._only = self._only_definitions(over)
            self._only_over = over
        return table.get(qualified)

    def expect_only(self, names: set[str]) -> None:
        """Say which names `only` will be asked, so that it need not tabulate every name of
        the commit (a carried build asks a few); a name asked beyond them is still answered."""
        self._expected = names

    def _global(
        self, scope: FileScope, holder: int, name: str, parents: Sequence[int]
    ) -> int | None:
        """The one definition of `name` in the commit, seen from `holder`: qualified by its
        namespaces (modules) from the innermost out, as they span files, then by those the
        file uses, then bare."""
        if scope.grammar in NAMESPACES_SPAN_FILES and holder != scope.node:
            owner = self.enclosing_class(holder, parents)
            key = None if owner is None else self.class_of(owner)
            prefix = "" if key is None else key[1]
            while prefix:
                found = self.only(f"{prefix}.{name}")
                if found is not None:
                    return found
                prefix = prefix.rpartition(".")[0]
        for namespace in scope.namespaces:
            found = self.only(f"{namespace}.{name}")
            if found is not None:
                return found
        return self.only(name)

    def _super(
        self, file: int, holder: int, parts: Sequence[str], parents: Sequence[int]
    ) -> int | None:
        """What `super`, or `super.name`, means in `holder`: the first base of its class (in a
        constructor), or the first of its bases that has the member."""
        owner = self.enclosing_class(holder, parents)
        key = None if owner is None else self.class_of(owner)
        if key is not None:
            self.reads.file(_BASES, key[0])
            if self.carried is not None:
                self.carried(key[0], _BASES_PHASE)
        bases = self.bases.get(key, ()) if key is not None else ()
        if len(parts) == 1:
            if not bases or self.grammar(file) not in _BASE_CONSTRUCTORS:
                return None
            return bases[0]
        for base in bases:
            found = self.member(base, parts[1])
            if found is not None:
                return found
        return None

    def resolve_chain(
        self, file: int, holder: int, parts: Sequence[str], parents: Sequence[int]
    ) -> int | None:
        """What `a.b.c` means in `holder`: the first name looked up, the rest as members."""
        first = parts[0]
        if (
            holder != file
            and first in SUPER_WORDS
            and first == SUPER_NAMES.get(self.grammar(file) or "")
        ):
            node, parts = self._super(file, holder, parts, parents), parts[1:]
        elif first in SELF_NAMES and holder != file:
            node = self.receiver_class(holder, parents)
            if node is None and len(parts) > 1:
                node, parts = self._owned(file, holder, parts[1]), parts[1:]
        else:
            node = self.lookup(file, holder, first, parents)
        for part in parts[1:]:
            if node is None:
                return None
            node = self.member(node, part)
        return node
