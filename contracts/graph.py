"""The `graph.*` message family (seed 003): the code entity graph of a repository at a revision.

Entities are directories, files, classes and functions (a method is a function whose parent
is its class). Ids are stable across unrelated edits: a path for a directory or file,
`path:Qualified.name` for a definition (`src/app.py:Flask.route`; `#2` for a second
definition of the same name in a file). Edges go from the container, importer, caller or
subclass: `contain`, `import`, `invoke`, `inherit`. A reference the repository's own code
cannot resolve (a library, a method of an object of unknown type) has no edge.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec
from msgspec import Meta

from contracts.errors import ResponseEnvelope
from contracts.types import RepoRef, Revision

EntityType = Literal["directory", "file", "class", "function"]
"""An entity type a request names: the set is closed, another is refused."""
RelationType = Literal["contain", "import", "invoke", "inherit"]
"""A relation a request names: the set is closed, another is refused."""
AnsweredEntityType = Annotated[str, Meta(examples=list(get_args(EntityType)))]
"""An entity type in an answer: one of `EntityType` when this version sends it, read as text
so that an answer from a newer server, with a type this client does not know, decodes."""
AnsweredRelation = Annotated[str, Meta(examples=list(get_args(RelationType)))]
"""A relation in an answer: one of `RelationType` when this version sends it, read as text
for the same reason."""
Change = Annotated[str, Meta(examples=["added", "removed", "changed"])]
"""How an entity or edge differs between two revisions (`changed`: an entity's code only),
read as text for the same reason."""
EntityId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=4200,
        description="An entity id: a path, or `path:Qualified.name` for a definition.",
        examples=["src/flask/app.py:Flask.route"],
    ),
]
EntityTypes = Annotated[tuple[EntityType, ...], Meta(min_length=1, max_length=4)]
LineRange = tuple[int, int]


class Snippet(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An entity's code at the detail asked for; the modes not asked for are left out."""

    fold: str | None = None
    """One line: the definition's first line (a file's path and line count)."""
    preview: str | None = None
    """The first lines (about five)."""
    full: str | None = None
    """The whole entity, up to the server's excerpt bound (`truncated` says it was cut)."""
    truncated: bool = False


class GraphEntity(msgspec.Struct, frozen=True, kw_only=True):
    """One entity found by a search, with its code's license."""

    id: str
    name: str
    entity_type: AnsweredEntityType
    file_path: str
    line_range: LineRange | None = None
    """1-based, inclusive; None for a directory."""
    score: float
    """Relevance in [0, 1]: 1.0 is an exact match of the name."""
    snippet: Snippet | None = None
    license: str = ""
    license_source: str = ""
    license_confidence: float | None = None
    """0..1: how sure the license detection is (1.0 for a declaration: an SPDX tag or package
    metadata); None when no license was found."""
    swhid: str | None = None
    """The SWHID of the file's content, qualified with the entity's lines."""


class QueryMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """How a search was answered."""

    used_upper_index: bool
    """Entity names and paths matched the query."""
    used_bm25: bool
    """The text index (BM25 over code chunks) was asked because names alone found too few."""
    execution_time_ms: float


class GraphSearchRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Find entities by name, qualified name or path; BM25 over their code when names fall short."""

    repo: RepoRef
    query: Annotated[str, Meta(min_length=1, max_length=1000)]
    revision: Revision | None = None
    entity_types: EntityTypes | None = None
    limit: Annotated[int, Meta(ge=1, le=100)] = 10
    use_bm25: bool = True
    snippet_mode: Literal["fold", "preview", "full"] = "preview"
    require_license: bool = True


class GraphSearchResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """The entities found, best first."""

    repo: str = ""
    commit: str = ""
    ref: str = ""
    entities: tuple[GraphEntity, ...] = ()
    total_count: int = 0
    """Entities that matched (more than returned when `truncated`)."""
    truncated: bool = False
    query_metadata: QueryMetadata | None = None


class GraphNode(msgspec.Struct, frozen=True, kw_only=True):
    """A node of a traversal, with its distance from the nearest start."""

    id: str
    name: str
    entity_type: AnsweredEntityType
    file_path: str
    line_range: LineRange | None = None
    depth: int


class GraphEdge(msgspec.Struct, frozen=True, kw_only=True):
    """A directed edge between two entity ids."""

    source: str
    target: str
    relation: AnsweredRelation


class TraverseMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """What the traversal reached."""

    total_nodes: int
    total_edges: int
    max_depth_reached: int
    execution_time_ms: float


class GraphTraverseRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Walk the graph from some entities, breadth first, along the relations asked for."""

    repo: RepoRef
    start_entities: Annotated[tuple[EntityId, ...], Meta(min_length=1, max_length=50)]
    revision: Revision | None = None
    depth: Annotated[int, Meta(ge=1, le=5)] = 1
    relations: Annotated[tuple[RelationType, ...], Meta(min_length=1, max_length=4)] | None = None
    entity_types: EntityTypes | None = None
    direction: Literal["forward", "backward", "bidirectional"] = "forward"
    format: Literal["graph", "tree"] = "graph"
    max_nodes: Annotated[int, Meta(ge=1, le=10000)] | None = None
    """How many nodes to return (server default 200, ceiling from the server's config)."""


class GraphTraverseResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """The subgraph reached: nodes by depth, edges between them; `tree` text when asked."""

    repo: str = ""
    commit: str = ""
    ref: str = ""
    start_entities: tuple[str, ...] = ()
    nodes: tuple[GraphNode, ...] = ()
    edges: tuple[GraphEdge, ...] = ()
    tree: str | None = None
    """The seed's tree text (format `tree`): each node under the one it was reached from."""
    truncated: bool = False
    """`max_nodes` stopped the walk before it reached everything within `depth`."""
    metadata: TraverseMetadata | None = None


class EntityMetadata(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the definition's own text says (read from it, never inferred)."""

    parameters: tuple[str, ...] | None = None
    return_type: str | None = None
    docstring: str | None = None
    decorators: tuple[str, ...] | None = None
    parent_class: str | None = None


class EntityDetails(msgspec.Struct, frozen=True, kw_only=True):
    """An entity's code (bounded), its surroundings, metadata and license."""

    id: str
    name: str
    entity_type: AnsweredEntityType
    file_path: str
    line_range: LineRange | None = None
    code: str | None = None
    """The entity's lines (a directory has none), cut at the server's excerpt bound."""
    code_truncated: bool = False
    context_before: str | None = None
    context_after: str | None = None
    metadata: EntityMetadata | None = None
    license: str = ""
    license_source: str = ""
    license_confidence: float | None = None
    """0..1: how sure the license detection is (1.0 for a declaration: an SPDX tag or package
    metadata); None when no license was found."""
    swhid: str | None = None


class GraphRetrieveRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Read entities by id: their code, and optionally lines around it and their metadata."""

    repo: RepoRef
    entity_ids: Annotated[tuple[EntityId, ...], Meta(min_length=1, max_length=50)]
    revision: Revision | None = None
    include_context: Annotated[int, Meta(ge=0, le=50)] = 0
    include_metadata: bool = False
    require_license: bool = True


class GraphRetrieveResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """The entities asked for, in request order."""

    repo: str = ""
    commit: str = ""
    ref: str = ""
    entities: tuple[EntityDetails, ...] = ()


class EntityChange(msgspec.Struct, frozen=True, kw_only=True):
    """An entity added, removed, or whose code changed, between two revisions."""

    id: str
    name: str
    entity_type: AnsweredEntityType
    file_path: str
    change: Change
    line_range: LineRange | None = None
    """In `head` (in `base` for a removed one)."""


class EdgeChange(msgspec.Struct, frozen=True, kw_only=True):
    """An edge present in one revision only."""

    source: str
    target: str
    relation: AnsweredRelation
    change: Change


class GraphDiffRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What entities and edges differ between two revisions of one repository."""

    repo: RepoRef
    base: Revision
    head: Revision
    entity_types: EntityTypes | None = None
    max_changes: Annotated[int, Meta(ge=1, le=2000)] = 500
    """Entity and edge changes returned, each (in id order)."""


class GraphDiffResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """Entity and edge changes from `base` to `head`, in id order."""

    repo: str = ""
    base_commit: str = ""
    head_commit: str = ""
    entities: tuple[EntityChange, ...] = ()
    edges: tuple[EdgeChange, ...] = ()
    entity_changes: int = 0
    """Entity changes in all (more than returned when `truncated`)."""
    edge_changes: int = 0
    truncated: bool = False
