"""graph.search, graph.traverse, graph.retrieve and graph.diff over NATS, against a real worker."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import pytest

from contracts.errors import ErrorCode
from contracts.graph import (
    GraphDiffRequest,
    GraphRetrieveRequest,
    GraphSearchRequest,
    GraphTraverseRequest,
)
from tests.support.graphs import VIEWS_PY_2, GraphCache, build_graph_cache
from tests.support.toolcalls import ToolCaller
from tests.support.workers import WorkerProcess
from worker.service.embedded_nats import EmbeddedNats

REPO = "acme/shop"


@pytest.fixture(scope="module")
def graph_cache(tmp_path_factory: pytest.TempPathFactory) -> GraphCache:
    """The mirrored shop every test of this module reads."""
    return build_graph_cache(tmp_path_factory.mktemp("graph"))


@pytest.fixture(scope="module")
def served(graph_cache: GraphCache) -> Iterator[ToolCaller]:
    """A NATS server and one worker process over the graph cache."""
    with (
        EmbeddedNats() as server,
        WorkerProcess(graph_cache.cache.root, server.url, concurrency=2),
    ):
        yield ToolCaller(server.url)


def edges_of(served: ToolCaller, start: str, **options: object) -> set[tuple[str, str, str]]:
    answer = served.ask(GraphTraverseRequest(repo=REPO, start_entities=(start,), **options))  # type: ignore[arg-type]
    return {(e.source, e.target, e.relation) for e in answer.edges}


# graph.search


def test_search_finds_a_definition_by_name_with_code_license_and_swhid(served: ToolCaller) -> None:
    """An exact name scores 1.0 and comes first, with a preview of its code, MIT and an SWHID."""
    answer = served.ask(GraphSearchRequest(repo=REPO, query="sum_prices"))
    first = answer.entities[0]
    assert (first.id, first.entity_type, first.score) == (
        "shop/models.py:sum_prices",
        "function",
        1.0,
    )
    assert first.line_range == (23, 24)
    assert first.snippet is not None
    assert first.snippet.preview == ("def sum_prices(items):\n    return len(items)")
    assert (first.license, first.license_source) == ("MIT", "LICENSE")
    assert first.swhid is not None
    assert first.swhid.startswith("swh:1:cnt:")
    assert "lines=23-24" in first.swhid
    assert answer.query_metadata is not None
    assert answer.query_metadata.used_upper_index
    assert [e.score for e in answer.entities] == sorted(
        (e.score for e in answer.entities), reverse=True
    )


def test_search_filters_types_and_folds_snippets(served: ToolCaller) -> None:
    """entity_types keeps only classes; fold gives the definition's first line only."""
    answer = served.ask(
        GraphSearchRequest(repo=REPO, query="order", entity_types=("class",), snippet_mode="fold")
    )
    assert [e.id for e in answer.entities] == ["shop/models.py:Order"]
    assert answer.entities[0].snippet is not None
    assert answer.entities[0].snippet.fold == "class Order(Base):"
    assert answer.entities[0].snippet.preview is None


def test_search_falls_back_to_bm25_over_code(served: ToolCaller) -> None:
    """Words found only in code bodies reach their entity through the text index."""
    answer = served.ask(GraphSearchRequest(repo=REPO, query="dumps json", limit=5))
    assert answer.query_metadata is not None
    assert answer.query_metadata.used_bm25
    assert "shop/views.py:checkout" in [e.id for e in answer.entities]
    without = served.ask(GraphSearchRequest(repo=REPO, query="dumps json", use_bm25=False))
    assert "shop/views.py:checkout" not in [e.id for e in without.entities]


def test_search_is_deterministic(served: ToolCaller) -> None:
    """The same search gives the same bytes."""
    request = GraphSearchRequest(repo=REPO, query="validate", limit=20)
    first, second = served.ask(request), served.ask(request)
    assert msgspec.msgpack.encode(first.entities) == msgspec.msgpack.encode(second.entities)


# graph.traverse


def test_calls_resolve_through_imports_aliases_and_scope(served: ToolCaller) -> None:
    """checkout calls Order (a class), the save its local `order = Order()` inherits,
    models.sum_prices; library calls are not invented; the head commit's refund replaced
    render."""
    edges = edges_of(served, "shop/views.py:checkout", relations=("invoke",))
    assert edges == {
        ("shop/views.py:checkout", "shop/models.py:Order", "invoke"),
        ("shop/views.py:checkout", "shop/models.py:Base.save", "invoke"),
        ("shop/views.py:checkout", "shop/models.py:sum_prices", "invoke"),
        ("shop/views.py:checkout", "shop/views.py:refund", "invoke"),
    }


def test_methods_resolve_through_self_and_bases(served: ToolCaller) -> None:
    """self.validate in Base.save is Base's; self.total in Order.validate is Order's."""
    assert edges_of(served, "shop/models.py:Base.save", relations=("invoke",)) == {
        ("shop/models.py:Base.save", "shop/models.py:Base.validate", "invoke")
    }
    assert edges_of(served, "shop/models.py:Order", relations=("inherit",)) == {
        ("shop/models.py:Order", "shop/models.py:Base", "inherit")
    }
    assert ("shop/models.py:Order.validate", "shop/models.py:Order.total", "invoke") in edges_of(
        served, "shop/models.py:Order.validate"
    )


def test_imports_and_containment(served: ToolCaller) -> None:
    """views.py imports the class and the module; a directory holds files, a class methods."""
    imports = edges_of(served, "shop/views.py", relations=("import",))
    assert imports == {
        ("shop/views.py", "shop/models.py:Order", "import"),
        ("shop/views.py", "shop/models.py", "import"),
    }
    contains = edges_of(served, "shop", relations=("contain",), depth=3)
    assert ("shop/models.py:Order", "shop/models.py:Order.total", "contain") in contains
    assert ("shop", "shop/models.py", "contain") in contains


def test_other_languages_resolve_calls(served: ToolCaller) -> None:
    """Each language's own rules resolve: Go through a method's receiver, C by the one
    definition, TS private methods, JS functions assigned to objects, their `this` and what
    `require` binds, Ruby's bare calls and modules, PHP's `use`, C#'s namespaces, Kotlin's
    packages."""
    assert edges_of(served, "web/timer.ts:Timer.wait", relations=("invoke",)) == {
        ("web/timer.ts:Timer.wait", "web/timer.ts:Timer.#delay", "invoke")
    }
    assert edges_of(served, "web/response.js:res.json", relations=("invoke",)) == {
        ("web/response.js:res.json", "web/response.js:stringify", "invoke"),
        ("web/response.js:res.json", "web/response.js:res.send", "invoke"),
    }
    assert edges_of(served, "web/cjs/main.js:run", relations=("invoke",)) == {
        ("web/cjs/main.js:run", "web/cjs/util.js:exports.clamp", "invoke")
    }
    assert ("web/cjs/main.js:again", "web/cjs/util.js:exports.clamp", "invoke") in edges_of(
        served, "web/cjs/main.js:again"
    )
    assert edges_of(served, "web/view.js:View", relations=("invoke",)) == {
        ("web/view.js:View", "web/view.js:View.lookup", "invoke")
    }
    assert edges_of(served, "go/srv/server.go:Serve", relations=("invoke",)) == {
        ("go/srv/server.go:Serve", "go/srv/server.go:handle", "invoke")
    }
    assert edges_of(served, "go/srv/conn.go:Conn.Close", relations=("invoke",)) == {
        ("go/srv/conn.go:Conn.Close", "go/srv/flush.go:Conn.flush", "invoke")
    }
    assert edges_of(served, "ruby/app.rb:App.route", relations=("invoke",)) == {
        ("ruby/app.rb:App.route", "ruby/app.rb:App.normalize", "invoke")
    }
    assert ("ruby/app.rb", "ruby/helpers.rb", "import") in edges_of(served, "ruby/app.rb")
    assert edges_of(served, "ruby/shop/engine.rb:Shop.Engine", relations=("inherit",)) == {
        ("ruby/shop/engine.rb:Shop.Engine", "ruby/shop/base.rb:Shop.Base", "inherit")
    }
    assert edges_of(served, "ruby/shop/engine.rb:Shop.Engine.start", relations=("invoke",)) == {
        ("ruby/shop/engine.rb:Shop.Engine.start", "ruby/shop/base.rb:Shop.Base.run", "invoke")
    }
    assert edges_of(served, "php/Group.php:Group.collect", relations=("invoke",)) == {
        ("php/Group.php:Group.collect", "php/Group.php:Group.register", "invoke"),
        ("php/Group.php:Group.collect", "php/Util/Clamp.php:Clamp.clamp", "invoke"),
    }
    engine = "cs/Engine.cs:Acme.Shop.Engine"
    assert edges_of(served, engine, relations=("inherit",)) == {
        (engine, "cs/Base.cs:Acme.Shop.Base", "inherit")
    }
    assert edges_of(served, f"{engine}.Run", relations=("invoke",)) == {
        (f"{engine}.Run", f"{engine}.Step", "invoke"),
        (f"{engine}.Run", "cs/Util/Clamp.cs:Acme.Util.Clamp.Limit", "invoke"),
    }
    kt = "kt/src/main/kotlin"
    assert edges_of(served, f"{kt}/shop/Engine.kt:Engine", relations=("inherit",)) == {
        (f"{kt}/shop/Engine.kt:Engine", f"{kt}/shop/Base.kt:Base", "inherit")
    }
    assert edges_of(served, f"{kt}/shop/Engine.kt:Engine.start", relations=("invoke",)) == {
        (f"{kt}/shop/Engine.kt:Engine.start", f"{kt}/shop/Base.kt:Base.run", "invoke"),
        (f"{kt}/shop/Engine.kt:Engine.start", f"{kt}/util/Clamp.kt:clamp", "invoke"),
    }
    assert edges_of(served, "c/list.c:list_len", relations=("invoke",)) == {
        ("c/list.c:list_len", "c/list.c:count_nodes", "invoke")
    }
    assert ("c/list.c", "c/list.h", "import") in edges_of(served, "c/list.c")


def test_cpp_namespaces_span_files_and_headers_are_cpp(served: ToolCaller) -> None:
    """A base and a method in a namespace another file opens resolve; a C++ header is read
    as C++; neither a destructor's nor a class's own name is a call of itself."""
    circle = edges_of(served, "cpp/circle.cpp:geo.Circle", relations=("inherit",))
    assert circle == {("cpp/circle.cpp:geo.Circle", "cpp/shape.h:geo.Shape", "inherit")}
    doubled = edges_of(served, "cpp/circle.cpp:geo.Circle.doubled", relations=("invoke",))
    assert doubled == {
        ("cpp/circle.cpp:geo.Circle.doubled", "cpp/shape.h:geo.Shape.twice", "invoke")
    }
    twice = edges_of(served, "cpp/shape.h:geo.Shape.twice", relations=("invoke",))
    assert twice == {("cpp/shape.h:geo.Shape.twice", "cpp/shape.h:geo.Shape.size", "invoke")}
    destructor = edges_of(served, "cpp/circle.cpp:geo.Circle.~Circle", relations=("invoke",))
    assert destructor == {
        ("cpp/circle.cpp:geo.Circle.~Circle", "cpp/circle.cpp:geo.Circle.release", "invoke")
    }
    assert not edges_of(served, "cpp/shape.h:geo.Shape", relations=("invoke",))


def test_backward_traversal_finds_callers_by_depth(served: ToolCaller) -> None:
    """Backward from sum_prices: its callers at depth 1, theirs at depth 2."""
    answer = served.ask(
        GraphTraverseRequest(
            repo=REPO,
            start_entities=("shop/models.py:sum_prices",),
            depth=2,
            relations=("invoke",),
            direction="backward",
        )
    )
    depth = {n.id: n.depth for n in answer.nodes}
    assert depth["shop/models.py:sum_prices"] == 0
    assert depth["shop/models.py:Order.total"] == 1
    assert depth["shop/views.py:refund"] == 1
    assert depth["shop/models.py:Order.validate"] == 2
    assert answer.metadata is not None
    assert answer.metadata.max_depth_reached == 2
    assert answer.nodes[0].id == "shop/models.py:sum_prices"


def test_tree_format_draws_each_node_under_its_caller(served: ToolCaller) -> None:
    """The seed's tree text, with relation and direction on each branch."""
    answer = served.ask(
        GraphTraverseRequest(
            repo=REPO,
            start_entities=("go/srv/server.go:Serve",),
            relations=("invoke",),
            format="tree",
        )
    )
    assert answer.tree == (
        "Serve (function) [go/srv/server.go:Serve] - go/srv/server.go:3\n"
        "└─[invoke]→ handle (function) [go/srv/server.go:handle] - go/srv/server.go:7"
    )


def test_traversal_is_bounded_by_max_nodes(served: ToolCaller) -> None:
    """A walk that reaches more than max_nodes stops and says so."""
    answer = served.ask(
        GraphTraverseRequest(repo=REPO, start_entities=("shop",), depth=3, max_nodes=3)
    )
    assert len(answer.nodes) == 3
    assert answer.truncated


# graph.retrieve


def test_retrieve_gives_code_context_and_metadata(served: ToolCaller) -> None:
    """A method's code, a line of context, its parameters, return type, docstring and class."""
    answer = served.ask(
        GraphRetrieveRequest(
            repo=REPO,
            entity_ids=("shop/models.py:Order.total", "shop/views.py:checkout"),
            include_context=1,
            include_metadata=True,
        )
    )
    total, checkout = answer.entities
    assert total.code is not None
    assert total.code.startswith("    def total(self, items: list")
    assert total.context_before == ""
    assert total.metadata is not None
    assert total.metadata.parameters == ("self", "items: list", "*", "tax=0")
    assert total.metadata.return_type == "int"
    assert total.metadata.docstring == "Sum the items."
    assert total.metadata.parent_class == "Order"
    assert checkout.metadata is not None
    assert checkout.metadata.decorators == ('@route("/orders")',)
    assert checkout.license == "MIT"
    assert checkout.swhid is not None
    assert "lines=8-" in checkout.swhid


def test_a_file_spans_the_lines_git_counts(served: ToolCaller) -> None:
    """A file entity ends on its last line: no line is counted after the final line break."""
    answer = served.ask(GraphRetrieveRequest(repo=REPO, entity_ids=("shop/views.py",)))
    (views,) = answer.entities
    lines = VIEWS_PY_2.count("\n")  # the head's views.py, as `wc -l` counts it
    assert views.line_range == (1, lines)
    assert views.swhid is not None
    assert views.swhid.endswith(f";lines=1-{lines}")


def test_retrieve_at_a_pinned_revision(served: ToolCaller, graph_cache: GraphCache) -> None:
    """The first commit (not mirrored as head) is built on demand: render exists there."""
    answer = served.ask(
        GraphRetrieveRequest(
            repo=REPO, revision=graph_cache.first, entity_ids=("shop/views.py:render",)
        )
    )
    assert answer.commit == graph_cache.first
    assert answer.entities[0].code is not None
    assert answer.entities[0].code.startswith("def render(order):")


# graph.diff


def test_diff_names_added_removed_and_changed_entities_and_edges(
    served: ToolCaller, graph_cache: GraphCache
) -> None:
    """refund added, render and web/util.js removed, Order.total changed; their edges too."""
    answer = served.ask(
        GraphDiffRequest(repo=REPO, base=graph_cache.first, head=graph_cache.second)
    )
    changes = {(e.id, e.change) for e in answer.entities}
    assert ("shop/views.py:refund", "added") in changes
    assert ("shop/views.py:render", "removed") in changes
    assert ("web/util.js:helper", "removed") in changes
    assert ("shop/models.py:Order.total", "changed") in changes
    assert ("shop/models.py:Order.validate", "changed") not in changes
    assert ("shop/models.py:sum_prices", "changed") not in changes
    edges = {(e.source, e.target, e.relation, e.change) for e in answer.edges}
    assert ("shop/views.py:render", "shop/models.py:sum_prices", "invoke", "removed") in edges
    assert ("shop/views.py:checkout", "shop/views.py:refund", "invoke", "added") in edges
    assert answer.entity_changes == len(answer.entities)


# Errors


def test_errors_are_structured(served: ToolCaller) -> None:
    """Unknown entity, unregistered repository, unknown revision, a limit above its ceiling,
    an unlicensed repository unless NOASSERTION is accepted."""
    missing = served.refusal(
        GraphRetrieveRequest(repo=REPO, entity_ids=("shop/views.py:nope", "x.py"))
    )
    assert missing.code == ErrorCode.NOT_FOUND
    assert missing.details["entity_ids"] == ["shop/views.py:nope", "x.py"]
    assert served.refusal(GraphSearchRequest(repo="acme/none", query="x")).code == (
        ErrorCode.ACCESS_DENIED
    )
    bad_revision = GraphSearchRequest(repo=REPO, query="x", revision="no-such-branch")
    assert served.refusal(bad_revision).code == ErrorCode.REVISION_NOT_FOUND
    too_many = GraphTraverseRequest(repo=REPO, start_entities=("shop",), max_nodes=51)
    assert served.refusal(too_many).code == ErrorCode.LIMIT_EXCEEDED
    unlicensed = GraphSearchRequest(repo="acme/unlicensed", query="main")
    assert served.refusal(unlicensed).code == ErrorCode.LICENSE_UNAVAILABLE
    accepted = served.ask(
        GraphSearchRequest(repo="acme/unlicensed", query="main", require_license=False)
    )
    assert accepted.entities[0].license == "NOASSERTION"
