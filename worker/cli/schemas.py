"""The JSON Schemas of `repo-reader graph … --json` output (seed 003, section 4).

4.1 is the seed's own schema; 4.2 and 4.3 are given there as example documents, and their
schemas here require what those examples hold. Extra fields (license, SWHID, commit) are
allowed, as the seed's schema allows them.
"""

from __future__ import annotations

from typing import Any, Final

_ENTITY_TYPE: Final = {"enum": ["directory", "file", "class", "function"]}
_LINE_RANGE: Final = {
    "type": "array",
    "items": {"type": "integer"},
    "minItems": 2,
    "maxItems": 2,
}

SEARCH_OUTPUT: Final[dict[str, Any]] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["query", "results"],
    "properties": {
        "query": {"type": "string"},
        "total_results": {"type": "integer"},
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["entity_id", "name", "type", "file_path"],
                "properties": {
                    "entity_id": {"type": "string"},
                    "name": {"type": "string"},
                    "type": _ENTITY_TYPE,
                    "file_path": {"type": "string"},
                    "line_range": _LINE_RANGE,
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                    "snippet": {
                        "type": "object",
                        "properties": {
                            "fold": {"type": "string"},
                            "preview": {"type": "string"},
                            "full": {"type": "string"},
                        },
                    },
                },
            },
        },
    },
}
"""Seed 003, 4.1 (`cds search`)."""

TRAVERSE_OUTPUT: Final[dict[str, Any]] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["start_entities", "subgraph"],
    "properties": {
        "start_entities": {"type": "array", "items": {"type": "string"}},
        "subgraph": {
            "type": "object",
            "required": ["nodes", "edges"],
            "properties": {
                "nodes": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["id", "name", "type", "file", "depth"],
                        "properties": {
                            "id": {"type": "string"},
                            "name": {"type": "string"},
                            "type": _ENTITY_TYPE,
                            "file": {"type": "string"},
                            "line_range": _LINE_RANGE,
                            "depth": {"type": "integer", "minimum": 0},
                        },
                    },
                },
                "edges": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["source", "target", "relation"],
                        "properties": {
                            "source": {"type": "string"},
                            "target": {"type": "string"},
                            "relation": {"enum": ["contain", "import", "invoke", "inherit"]},
                        },
                    },
                },
            },
        },
    },
}
"""Seed 003, 4.2 (`cds traverse`, graph mode)."""

RETRIEVE_OUTPUT: Final[dict[str, Any]] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["entities"],
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "name", "type", "file_path"],
                "properties": {
                    "id": {"type": "string"},
                    "name": {"type": "string"},
                    "type": _ENTITY_TYPE,
                    "file_path": {"type": "string"},
                    "line_range": _LINE_RANGE,
                    "code": {"type": "string"},
                },
            },
        }
    },
}
"""Seed 003, 4.3 (`cds retrieve`)."""
