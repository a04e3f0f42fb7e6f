"""The JSON-RPC 2.0 gateway over HTTP, against a running gateway, NATS server and worker."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.gateways import GatewayProcess
from tests.support.graphs import build_graph_cache
from tests.support.workers import WorkerProcess
from worker.gateway.jsonrpc import API_VERSION, MAX_BODY_BYTES, VERSION_HEADER
from worker.service.embedded_nats import EmbeddedNats

REPO = "acme/shop"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A gateway in front of one worker over the shop, and an HTTP client pointed at it."""
    root = tmp_path_factory.mktemp("gateway")
    cache = build_graph_cache(root)
    with (
        EmbeddedNats() as server,
        WorkerProcess(cache.cache.root, server.url),
        GatewayProcess(root, server.url) as process,
        httpx.Client(base_url=process.url, timeout=60) as client,
    ):
        yield client


def rpc(client: httpx.Client, method: str, params: object, call_id: object = 1) -> httpx.Response:
    return client.post(
        "/v1/rpc", json={"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}
    )


def test_search_entities_answers_the_seed_shape(gateway: httpx.Client) -> None:
    """search_entities: entities with the seed's fields, total_count, query_metadata, version."""
    response = rpc(gateway, "search_entities", {"repo": REPO, "query": "sum_prices", "limit": 3})
    assert response.status_code == 200
    assert response.headers[VERSION_HEADER] == API_VERSION
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] == 1
    result = body["result"]
    first = result["entities"][0]
    assert first["id"] == "shop/models.py:sum_prices"
    assert first["entity_type"] == "function"
    assert first["line_range"] == [23, 24]
    assert first["score"] == 1.0
    assert "preview" in first["snippet"]
    assert first["license"] == "MIT"
    assert set(result["query_metadata"]) == {"used_upper_index", "used_bm25", "execution_time_ms"}


def test_traverse_retrieve_and_rebuild_shapes(gateway: httpx.Client) -> None:
    """traverse_graph gives a subgraph and metadata; retrieve_entity code; tools answer too."""
    walked = rpc(
        gateway,
        "traverse_graph",
        {"repo": REPO, "start_entities": ["go/srv/server.go:Serve"], "relations": ["invoke"]},
    ).json()["result"]
    assert walked["subgraph"]["edges"] == [
        {
            "source": "go/srv/server.go:Serve",
            "target": "go/srv/server.go:handle",
            "relation": "invoke",
        }
    ]
    assert walked["metadata"]["total_nodes"] == 2
    got = rpc(
        gateway, "retrieve_entity", {"repo": REPO, "entity_ids": ["shop/models.py:sum_prices"]}
    ).json()["result"]
    assert got["entities"][0]["code"] == "def sum_prices(items):\n    return len(items)"
    status = rpc(gateway, "repo_status", {"repo": REPO}).json()["result"]
    assert status["repo"] == REPO


def test_batches_and_notifications(gateway: httpx.Client) -> None:
    """A batch is answered in order; a notification gets no answer."""
    response = gateway.post(
        "/v1/rpc",
        json=[
            {"jsonrpc": "2.0", "id": "a", "method": "repo_status", "params": {"repo": REPO}},
            {"jsonrpc": "2.0", "method": "repo_status", "params": {"repo": REPO}},
            {"jsonrpc": "2.0", "id": "b", "method": "nope", "params": {}},
        ],
    )
    assert response.status_code == 200
    answers = response.json()
    assert [a["id"] for a in answers] == ["a", "b"]
    assert answers[1]["error"]["code"] == -32601
    alone = gateway.post(
        "/v1/rpc", json={"jsonrpc": "2.0", "method": "repo_status", "params": {"repo": REPO}}
    )
    assert (alone.status_code, alone.content) == (204, b"")


@pytest.mark.parametrize(
    ("method", "params", "code", "product"),
    [
        ("search_entities", {"repo": REPO}, -32602, "INVALID_REQUEST"),
        ("search_entities", {"repo": REPO, "query": "x", "limt": 2}, -32602, "INVALID_REQUEST"),
        ("traverse_graph", {"repo": REPO, "start_entities": ["x"], "max_nodes": 51}, -32602,
         "LIMIT_EXCEEDED"),
        ("retrieve_entity", {"repo": REPO, "entity_ids": ["shop/x.py:f"]}, -32002, "NOT_FOUND"),
        ("search_entities", {"repo": "stranger/x", "query": "x"}, -32001, "ACCESS_DENIED"),
        ("search_entities", {"repo": REPO, "query": "x", "revision": "nope"}, -32001,
         "REVISION_NOT_FOUND"),
        ("rebuild_index", {"repo_path": REPO, "output_path": "/tmp/x"}, -32602, "INVALID_REQUEST"),
    ],
)  # fmt: skip
def test_errors_map_to_the_seed_codes(
    gateway: httpx.Client, method: str, params: object, code: int, product: str
) -> None:
    """Each failure is the seed's JSON-RPC code with the product's code in error.data."""
    response = rpc(gateway, method, params)
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == code
    assert error["data"]["code"] == product


def test_invalid_params_name_the_field_and_what_it_wants(gateway: httpx.Client) -> None:
    """Params off a field's pattern are refused with the field and its description."""
    error = rpc(gateway, "code_search", {"repo": "a=b", "query": "x"}).json()["error"]
    assert error["code"] == -32602
    assert error["data"]["details"]["field"] == "repo"
    assert "repo: expected a repository as owner/name" in error["message"]


def test_malformed_requests_are_http_400_and_huge_ones_413(gateway: httpx.Client) -> None:
    """Not JSON is -32700, no JSON-RPC envelope -32600 (both 400, an invalid id answered as
    null); a body over the limit 413."""
    garbled = gateway.post(
        "/v1/rpc", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert (garbled.status_code, garbled.json()["error"]["code"]) == (400, -32700)
    bare = gateway.post("/v1/rpc", json={"method": "repo_status"})
    assert (bare.status_code, bare.json()["error"]["code"]) == (400, -32600)
    for bad_id in ({"a": 1}, [1], True, 1.5):
        odd = gateway.post("/v1/rpc", json={"jsonrpc": "2.0", "id": bad_id, "method": "x"})
        assert (odd.status_code, odd.json()["error"]["code"]) == (400, -32600)
        assert odd.json()["id"] is None
    huge = gateway.post("/v1/rpc", content=b" " * (MAX_BODY_BYTES + 1))
    assert huge.status_code == 413
    assert huge.headers[VERSION_HEADER] == API_VERSION
