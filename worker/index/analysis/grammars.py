"""Which grammar a path is parsed with, and the tree-sitter queries that find its definitions.

Each query captures `@def` (the node whose lines the definition spans) and `@name` (its name).
Go methods add `@receiver` (the type) and `@receiver_name` (`c` of `func (c *Context)`). A
JavaScript/TypeScript function assigned to a member at the top of a file has its owner as
`@receiver` (`res.send = function`, `Foo.prototype.bar = function`; inside a function such
an assignment is mostly a test's stub, `Date.now = () => now`). Rust impls capture the
implemented type as `@name`. Containers (classes, impls, namespaces) are captured like any
definition: nesting is worked out from the spans, which gives qualified names such as
`Flask.route`. The same query finds what a definition extends: `@base` with the extending
definition as `@inherits` (a Rust impl extends its trait; a Go struct its embedded types).
Python's bases are read from the text (`references`): its outline drops the inside of
parentheses.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import tree_sitter

from worker.languages import FILE_NAMES, extension_of, language_of

PARSED_LANGUAGES: Final = frozenset(
    {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "java",
        "rust",
        "c",
        "cpp",
        "ruby",
        "php",
        "csharp",
        "kotlin",
    }
)

_JS_FUNCTIONS: Final = """
        (class_declaration name: (_) @name) @def
        (function_declaration name: (identifier) @name) @def
        (generator_function_declaration name: (identifier) @name) @def
        (method_definition name: (_) @name) @def
        (lexical_declaration (variable_declarator name: (identifier) @name
            value: [(arrow_function) (function_expression) (class)])) @def
        (variable_declaration (variable_declarator name: (identifier) @name
            value: [(arrow_function) (function_expression) (class)])) @def
        (program (expression_statement (assignment_expression
            left: (member_expression
                object: [(identifier) (member_expression)] @receiver
                property: (property_identifier) @name)
            right: [(arrow_function) (function_expression) (class)])) @def)
"""
"""What JavaScript and TypeScript define alike; a class field holding a function is a node
of its own name in each grammar."""

_QUERIES: Final[dict[str, str]] = {
    "python": """
        (class_definition name: (identifier) @name) @def
        (function_definition name: (identifier) @name) @def
    """,
    "javascript": _JS_FUNCTIONS
    + """
        (field_definition property: (_) @name
            value: [(arrow_function) (function_expression)]) @def
    """,
    "typescript": _JS_FUNCTIONS
    + """
        (abstract_class_declaration name: (_) @name) @def
        (interface_declaration name: (_) @name) @def
        (enum_declaration name: (_) @name) @def
        (type_alias_declaration name: (_) @name) @def
        (public_field_definition name: (_) @name
            value: [(arrow_function) (function_expression)]) @def
        (module name: (_) @name) @def
        (internal_module name: (_) @name) @def
    """,
    "go": """
        (function_declaration name: (identifier) @name) @def
        (method_declaration
            receiver: (parameter_list (parameter_declaration
                name: (identifier)? @receiver_name
                type: [
                (type_identifier) @receiver
                (pointer_type (type_identifier) @receiver)
                (generic_type type: (type_identifier) @receiver)
                (pointer_type (generic_type type: (type_identifier) @receiver))]))
            name: (field_identifier) @name) @def
        (type_declaration (type_spec name: (type_identifier) @name)) @def
    """,
    "java": """
        (class_declaration name: (identifier) @name) @def
        (interface_declaration name: (identifier) @name) @def
        (enum_declaration name: (identifier) @name) @def
        (record_declaration name: (identifier) @name) @def
        (annotation_type_declaration name: (identifier) @name) @def
        (method_declaration name: (identifier) @name) @def
        (constructor_declaration name: (identifier) @name) @def
    """,
    "rust": """
        (function_item name: (identifier) @name) @def
        (function_signature_item name: (identifier) @name) @def
        (struct_item name: (type_identifier) @name) @def
        (enum_item name: (type_identifier) @name) @def
        (union_item name: (type_identifier) @name) @def
        (trait_item name: (type_identifier) @name) @def
        (mod_item name: (identifier) @name body: (_)) @def
        (macro_definition name: (identifier) @name) @def
        (impl_item type: [
            (type_identifier) @name
            (generic_type type: (type_identifier) @name)
            (scoped_type_identifier name: (type_identifier) @name)
            (reference_type type: [
                (type_identifier) @name
                (generic_type type: (type_identifier) @name)
                (scoped_type_identifier name: (type_identifier) @name)])]) @def
    """,
    "ruby": """
        (class name: [(constant) @name (scope_resolution name: (constant) @name)]) @def
        (module name: [(constant) @name (scope_resolution name: (constant) @name)]) @def
        (method name: (_) @name) @def
        (singleton_method name: (_) @name) @def
    """,
    "php": """
        (class_declaration name: (name) @name) @def
        (interface_declaration name: (name) @name) @def
        (trait_declaration name: (name) @name) @def
        (enum_declaration name: (name) @name) @def
        (function_definition name: (name) @name) @def
        (method_declaration name: (name) @name) @def
        (namespace_definition name: (namespace_name) @name body: (compound_statement)) @def
    """,
    "csharp": """
        (class_declaration name: (identifier) @name) @def
        (interface_declaration name: (identifier) @name) @def
        (struct_declaration name: (identifier) @name) @def
        (enum_declaration name: (identifier) @name) @def
        (record_declaration name: (identifier) @name) @def
        (method_declaration name: (identifier) @name) @def
        (constructor_declaration name: (identifier) @name) @def
        (namespace_declaration name: (_) @name) @def
    """,
    "kotlin": """
        (class_declaration name: (_) @name) @def
        (object_declaration name: (_) @name) @def
        (function_declaration name: (_) @name) @def
    """,
    "c": """
        (function_definition declarator: [
            (function_declarator declarator: (identifier) @name)
            (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
            (pointer_declarator declarator: (pointer_declarator
                declarator: (function_declarator declarator: (identifier) @name)))]) @def
        (struct_specifier name: (type_identifier) @name body: (_)) @def
        (union_specifier name: (type_identifier) @name body: (_)) @def
        (enum_specifier name: (type_identifier) @name body: (_)) @def
        (preproc_function_def name: (identifier) @name) @def
    """,
    "cpp": """
        (function_definition declarator: [
            (function_declarator declarator: (_) @name)
            (pointer_declarator declarator: (function_declarator declarator: (_) @name))
            (reference_declarator (function_declarator declarator: (_) @name))]) @def
        (class_specifier name: (_) @name body: (_)) @def
        (struct_specifier name: (_) @name body: (_)) @def
        (union_specifier name: (_) @name body: (_)) @def
        (enum_specifier name: (_) @name body: (_)) @def
        (namespace_definition name: (_) @name) @def
        (preproc_function_def name: (identifier) @name) @def
    """,
}

_BASE_QUERIES: Final[dict[str, str]] = {
    "javascript": """
        (class_declaration (class_heritage [(identifier) (member_expression)] @base)) @inherits
    """,
    "typescript": """
        (class_declaration (class_heritage (extends_clause value: (_) @base))) @inherits
        (class_declaration (class_heritage (implements_clause (_) @base))) @inherits
        (abstract_class_declaration (class_heritage (extends_clause value: (_) @base))) @inherits
        (abstract_class_declaration (class_heritage (implements_clause (_) @base))) @inherits
        (interface_declaration (extends_type_clause type: (_) @base)) @inherits
    """,
    "go": """
        (type_declaration (type_spec type: (struct_type (field_declaration_list
            (field_declaration !name type: (_) @base))))) @inherits
    """,
    "java": """
        (class_declaration superclass: (superclass (_) @base)) @inherits
        (class_declaration interfaces: (super_interfaces (type_list (_) @base))) @inherits
        (interface_declaration (extends_interfaces (type_list (_) @base))) @inherits
        (enum_declaration interfaces: (super_interfaces (type_list (_) @base))) @inherits
        (record_declaration interfaces: (super_interfaces (type_list (_) @base))) @inherits
    """,
    "rust": """
        (impl_item trait: (_) @base) @inherits
    """,
    "ruby": """
        (class superclass: (superclass [(constant) (scope_resolution)] @base)) @inherits
    """,
    "php": """
        (class_declaration (base_clause [(name) (qualified_name)] @base)) @inherits
        (class_declaration (class_interface_clause [(name) (qualified_name)] @base)) @inherits
        (interface_declaration (base_clause [(name) (qualified_name)] @base)) @inherits
        (enum_declaration (class_interface_clause [(name) (qualified_name)] @base)) @inherits
    """,
    "csharp": """
        (class_declaration (base_list [(identifier) (generic_name) (qualified_name)] @base))
            @inherits
        (struct_declaration (base_list [(identifier) (generic_name) (qualified_name)] @base))
            @inherits
        (interface_declaration (base_list [(identifier) (generic_name) (qualified_name)] @base))
            @inherits
        (record_declaration (base_list [(identifier) (generic_name) (qualified_name)] @base))
            @inherits
    """,
    "kotlin": """
        (class_declaration (delegation_specifiers (delegation_specifier [
            (user_type) @base (constructor_invocation (user_type) @base)]))) @inherits
        (object_declaration (delegation_specifiers (delegation_specifier [
            (user_type) @base (constructor_invocation (user_type) @base)]))) @inherits
    """,
    "cpp": """
        (class_specifier (base_class_clause [
            (type_identifier) (qualified_identifier) (template_type)] @base)) @inherits
        (struct_specifier (base_class_clause [
            (type_identifier) (qualified_identifier) (template_type)] @base)) @inherits
    """,
}

_COMMENT_PREFIXES: Final[dict[str, tuple[bytes, ...]]] = {
    "python": (b"#", b"@"),
    "javascript": (b"//", b"/*", b"*", b"@"),
    "typescript": (b"//", b"/*", b"*", b"@"),
    "tsx": (b"//", b"/*", b"*", b"@"),
    "go": (b"//", b"/*", b"*"),
    "java": (b"//", b"/*", b"*", b"@"),
    "rust": (b"//", b"/*", b"*", b"#["),
    "c": (b"//", b"/*", b"*"),
    "cpp": (b"//", b"/*", b"*", b"template"),
    "ruby": (b"#",),
    "php": (b"//", b"/*", b"*", b"#"),
    "csharp": (b"//", b"/*", b"*", b"["),
    "kotlin": (b"//", b"/*", b"*", b"@"),
}


_GRAMMAR_OF_LANGUAGE: Final[dict[str, str]] = {
    "python": "python",
    "javascript": "javascript",
    "typescript": "typescript",
    "go": "go",
    "java": "java",
    "rust": "rust",
    "c": "c",
    "cpp": "cpp",
    "ruby": "ruby",
    "php": "php",
    "csharp": "csharp",
    "kotlin": "kotlin",
}


_CPP_WORDS: Final = (b"class", b"namespace", b"template")
_CPP_LINE: Final = re.compile(rb"(?:class|namespace|template)\b[^;\n]*(?:\{|<|$)", re.M)
"""A line only C++ starts: a `.h` file holding one is parsed as C++."""


def _declares_cpp(data: bytes) -> bool:
    """Whether a line starts with a C++ class, namespace or template declaration.

    Found from the words (a search for a literal), not by a pattern tried at every line.
    """
    for word in _CPP_WORDS:
        at = data.find(word)
        while at >= 0:
            line_start = data.rfind(b"\n", 0, at) + 1
            if not data[line_start:at].strip(b" \t") and _CPP_LINE.match(data, at):
                return True
            at = data.find(word, at + len(word))
    return False


def grammar_of(path: str, data: bytes | None = None) -> str | None:
    """The grammar a file is parsed with (of PARSED_LANGUAGES), or None when none is.

    Named by the product's language table, except `.tsx`, which TypeScript's own grammar
    cannot parse: its language is `typescript`, its grammar `tsx`; and a `.h` header (C in
    the table) whose `data` declares a class, a namespace or a template: `cpp`.
    """
    language = language_of(path)
    if language == "typescript" and extension_of(path) == ".tsx":
        return "tsx"
    if language == "c" and data is not None and extension_of(path) == ".h":
        return "cpp" if _declares_cpp(data) else "c"
    return _GRAMMAR_OF_LANGUAGE.get(language) if language is not None else None


_NAMED_FILES: Final = frozenset(name for names in FILE_NAMES.values() for name in names)
_UNSEEN: Final = "\0"
"""No grammar's name: a lookup's miss."""


def grammars_of(paths: Iterable[str]) -> list[str | None]:
    """`grammar_of` each path, by name alone (no header is read as C++ here).

    A grammar follows from a file's extension unless its whole name is known: each
    extension is looked up once, as a tree's file names are mostly distinct.
    """
    by_extension: dict[str, str | None] = {}
    by_name: dict[str, str | None] = {}
    found = []
    for path in paths:
        name = path.rpartition("/")[2]
        dot = name.rfind(".")
        if dot <= 0 or name in _NAMED_FILES:
            grammar = by_name.get(name, _UNSEEN)
            if grammar is _UNSEEN:
                grammar = by_name[name] = grammar_of(name)
        else:
            extension = name[dot:]
            grammar = by_extension.get(extension, _UNSEEN)
            if grammar is _UNSEEN:
                grammar = by_extension[extension] = grammar_of("_" + extension)
        found.append(grammar)
    return found


def comment_prefixes(language: str) -> tuple[bytes, ...]:
    """Line starts that attach a line (doc comment, decorator) to the definition below it."""
    return _COMMENT_PREFIXES.get(language, ())


@dataclass(frozen=True, slots=True)
class Grammar:
    """A tree-sitter language with its compiled definition query."""

    language: tree_sitter.Language
    query: tree_sitter.Query


_grammars: dict[str, Grammar] = {}
_grammars_lock = threading.Lock()


_GRAMMAR_MODULES: Final[dict[str, tuple[str, str]]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "kotlin": ("tree_sitter_kotlin", "language"),
}


def _load_language(name: str) -> tree_sitter.Language:
    module_name, function = _GRAMMAR_MODULES[name]
    module = importlib.import_module(module_name)
    return tree_sitter.Language(getattr(module, function)())


def grammar(name: str) -> Grammar:
    """The grammar and definition query of a parsed language (loaded once per process)."""
    with _grammars_lock:
        found = _grammars.get(name)
        if found is None:
            language = _load_language(name)
            key = "typescript" if name == "tsx" else name
            source = _QUERIES[key] + _BASE_QUERIES.get(key, "")
            found = Grammar(language, tree_sitter.Query(language, source))
            _grammars[name] = found
        return found
