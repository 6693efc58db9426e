"""What an operator watches: ``/metrics`` (Prometheus text, read with
``prometheus_client.parser``) against a scripted run, request ids on answers, upstream
calls and log lines, and JSON logs."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_support import serve_process
from gateway_upstream import ModelUpstream
from http_support import serve
from prometheus_client.parser import text_string_to_metric_families
from starlette.responses import PlainTextResponse
from websockets.sync.client import connect

from responses_stream._runtime.gateway.asgi import create_app
from responses_stream._runtime.gateway.metrics import Metrics
from responses_stream._runtime.gateway.observe import Observe


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus exposition, by name and sorted labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def scripted() -> Iterator[tuple[str, ModelUpstream]]:
    """A fresh gateway (fresh metrics) in front of the scripted upstream."""
    upstream = ModelUpstream()
    with upstream.serve() as up:
        app = create_app(up + "/v1", store="memory:", api_keys=())
        with serve(app, lifespan="on") as url:
            yield url, upstream


def stream_events(url: str, model: str) -> tuple[int, int]:
    """A streamed request: the events and bytes the client received."""
    body = {"model": model, "input": "hi", "stream": True}
    with httpx.stream("POST", url + "/v1/responses", json=body, timeout=30) as r:
        assert r.status_code == 200
        raw = r.read()
    return raw.count(b"\n\n"), len(raw)


def test_the_counters_match_a_scripted_run(scripted: tuple[str, ModelUpstream]) -> None:
    url, _ = scripted
    events = size = 0
    for _ in range(3):  # N streamed requests
        e, b = stream_events(url, "fake-model")
        events, size = events + e, size + b
    for _ in range(2):  # not streamed
        assert httpx.post(
            url + "/v1/responses", json={"model": "fake-model", "input": "x"}
        ).is_success
    # M upstream errors: two HTTP errors before the stream, one cut, one error chunk
    assert (
        httpx.post(url + "/v1/responses", json={"model": "fake-500", "input": "x"}).status_code
        == 500
    )
    assert (
        httpx.post(url + "/v1/responses", json={"model": "fake-429", "input": "x"}).status_code
        == 429
    )
    cut_events, cut_bytes = stream_events(url, "fake-cut")
    error_events, error_bytes = stream_events(url, "fake-error")
    events += cut_events + error_events
    size += cut_bytes + error_bytes
    found = samples(httpx.get(url + "/metrics").text)

    def requests(model: str, status: str) -> float:
        return value(
            found,
            "responses_stream_requests_total",
            route="responses",
            dialect="openai",
            model=model,
            status=status,
        )

    assert requests("fake-model", "200") == 5
    assert requests("fake-500", "500") == 1 and requests("fake-429", "429") == 1
    assert requests("fake-cut", "200") == 1 and requests("fake-error", "200") == 1
    errors = {
        labels: v
        for (name, labels), v in found.items()
        if name == "responses_stream_upstream_errors_total"
    }
    assert errors == {
        (("kind", "http_500"), ("upstream", "default")): 1,
        (("kind", "http_429"), ("upstream", "default")): 1,
        (("kind", "upstream_disconnected"), ("upstream", "default")): 1,
        (("kind", "stream_error"), ("upstream", "default")): 1,
    }
    assert value(found, "responses_stream_events_total", route="responses") == events
    assert value(found, "responses_stream_streamed_bytes_total", route="responses") == size
    first = "responses_stream_time_to_first_event_seconds_count"
    assert value(found, first, route="responses") == 5
    duration = "responses_stream_stream_duration_seconds_count"
    assert value(found, duration, route="responses") == 5
    assert value(found, "responses_stream_active_streams") == 0
    # every response that ended was stored: 5 completed, 2 failed mid-stream
    puts = value(found, "responses_stream_store_operations_total", operation="put", outcome="ok")
    assert puts == 7
    assert value(found, "responses_stream_store_seconds_count", operation="put") == 7


def test_other_routes_are_counted_by_name(scripted: tuple[str, ModelUpstream]) -> None:
    url, _ = scripted
    made = httpx.post(url + "/v1/responses", json={"model": "fake-model", "input": "x"}).json()
    assert httpx.get(f"{url}/openresponses/v1/responses/{made['id']}").status_code == 200
    assert httpx.get(url + "/v1/responses/resp_missing").status_code == 404
    completion = {"model": "fake-model", "messages": [{"role": "user", "content": "x"}]}
    assert httpx.post(url + "/v1/chat/completions", json=completion).status_code == 200
    found = samples(httpx.get(url + "/metrics").text)
    name = "responses_stream_requests_total"
    assert (
        value(found, name, route="retrieve", dialect="openresponses", model="", status="200") == 1
    )
    assert value(found, name, route="retrieve", dialect="openai", model="", status="404") == 1
    assert (
        value(
            found, name, route="chat_completions", dialect="chat", model="fake-model", status="200"
        )
        == 1
    )
    assert (
        value(found, "responses_stream_store_operations_total", operation="get", outcome="ok") == 2
    )


def test_a_websocket_connection_is_counted_with_its_events(
    scripted: tuple[str, ModelUpstream],
) -> None:
    url, _ = scripted
    sent = 0
    with connect(url.replace("http", "ws") + "/v1/responses") as ws:
        ws.send(json.dumps({"type": "response.create", "model": "fake-model", "input": "hi"}))
        while True:
            event = json.loads(ws.recv(timeout=10))
            sent += 1
            if event["type"] == "response.completed":
                break
        assert ws.response is not None
        assert ws.response.headers["x-request-id"].startswith("req_")
    time.sleep(0.2)  # the server counts the connection once it is closed
    found = samples(httpx.get(url + "/metrics").text)
    route = {"route": "responses_websocket"}
    assert value(found, "responses_stream_events_total", **route) == sent
    key = {**route, "dialect": "openai", "model": "fake-model", "status": "101"}
    assert value(found, "responses_stream_requests_total", **key) == 1


# -- request ids --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("trace-0001", True),
        ("01HZX3K6:span.7_a", True),
        ("has spaces", False),
        ("x" * 129, False),
        ("-leading-dash", False),
        ("line\u2028break", False),
        (None, False),
    ],
)
def test_every_answer_and_upstream_call_carries_the_request_id(
    scripted: tuple[str, ModelUpstream], given: str | None, kept: bool
) -> None:
    url, upstream = scripted
    headers = {"x-request-id": given.encode("utf-8")} if given else {}
    r = httpx.post(
        url + "/v1/responses", json={"model": "fake-model", "input": "x"}, headers=headers
    )
    rid = r.headers["x-request-id"]
    assert rid == given if kept else rid.startswith("req_") and len(rid) == 36
    assert upstream.last.headers["x-request-id"] == rid


def test_an_upstream_error_answer_keeps_the_gateways_id(
    scripted: tuple[str, ModelUpstream],
) -> None:
    url, _ = scripted
    r = httpx.post(
        url + "/v1/responses",
        json={"model": "fake-429", "input": "x"},
        headers={"x-request-id": "mine-1"},
    )
    assert r.status_code == 429 and r.headers["x-request-id"] == "mine-1"
    assert r.headers["retry-after"] == "7"


def test_a_refused_request_has_an_id_too() -> None:
    upstream = ModelUpstream()
    with upstream.serve() as up:
        app = create_app(up + "/v1", store="memory:", api_keys=["gk-only-key"])
        with serve(app, lifespan="on") as url:
            r = httpx.post(url + "/v1/responses", json={}, headers={"x-request-id": "no-key-1"})
    assert r.status_code == 401 and r.headers["x-request-id"] == "no-key-1"


# -- logs, from the real serve process ---------------------------------------------------
def serve_logs(upstream: str, log_format: str, requests: list[dict[str, Any]]) -> str:
    """Run ``serve --log-format``, send ``requests`` (each: model, stream, id), stop it,
    and return everything it logged."""
    output: list[str] = []
    args = ("--store", "memory:", "--log-format", log_format, "--log-level", "info")
    with serve_process(upstream, *args, output=output) as (url, _):
        for request in requests:
            body = {"model": request["model"], "input": "x", "stream": request["stream"]}
            headers = {"x-request-id": request["id"]}
            httpx.post(url + "/v1/responses", json=body, headers=headers, timeout=30).read()
    return output[0]


REQUESTS = [
    {"model": "fake-model", "stream": True, "id": "ok-stream-1"},
    {"model": "fake-500", "stream": False, "id": "fails-1"},
]


def test_json_logs_carry_the_request_id_on_every_line_of_a_request() -> None:
    upstream = ModelUpstream()
    with upstream.serve() as up:
        out = serve_logs(up + "/v1", "json", REQUESTS)
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert lines and all({"time", "level", "logger", "message"} <= set(x) for x in lines)
    access = [x for x in lines if x["logger"] == "uvicorn.access"]
    assert {(x["path"], x["status"], x["request_id"]) for x in access if x["method"] == "POST"} == {
        ("/v1/responses", 200, "ok-stream-1"),
        ("/v1/responses", 500, "fails-1"),
    }
    [error] = [x for x in lines if x.get("error_status") == 500]
    assert error["request_id"] == "fails-1" and error["level"] == "warning"
    # lines outside any request (start, stop) have none
    assert any(x["request_id"] is None and "upstream" in x["message"] for x in lines)


def test_text_logs_tag_each_line_of_a_request() -> None:
    upstream = ModelUpstream()
    with upstream.serve() as up:
        out = serve_logs(up + "/v1", "text", REQUESTS[1:])
    tagged = [line for line in out.splitlines() if line.endswith("[fails-1]")]
    assert any('"POST /v1/responses HTTP/1.1" 500' in line for line in tagged)
    assert any("500" in line and "WARNING" in line for line in tagged if "HTTP/1.1" not in line)


def test_metrics_add_up_across_processes(tmp_path: Path) -> None:
    """With PROMETHEUS_MULTIPROC_DIR each process writes its values there: /metrics of
    one process shows what another one counted."""
    upstream = ModelUpstream()
    shared = tmp_path / "prometheus"
    shared.mkdir()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(shared)}
    body = {"model": "fake-model", "input": "x"}
    with (
        upstream.serve() as up,
        serve_process(up + "/v1", "--store", "memory:", env=env) as (one, _),
        serve_process(up + "/v1", "--store", "memory:", env=env) as (two, _),
    ):
        for url in (one, two):
            assert httpx.post(url + "/v1/responses", json=body, timeout=30).is_success
        found = samples(httpx.get(one + "/metrics").text)
    name = "responses_stream_requests_total"
    labels = {"route": "responses", "dialect": "openai", "model": "fake-model", "status": "200"}
    assert value(found, name, **labels) == 2
    assert list(shared.glob("*.db"))


def test_a_mounted_gateway_counts_its_routes_by_the_path_under_the_mount() -> None:
    """Under a mount (``root_path``) the route is the path the router reads, not the
    full path, which no route of the gateway matches."""
    metrics = Metrics()
    app = Observe(PlainTextResponse("ok"), metrics)
    transport = httpx.ASGITransport(app=app, root_path="/llm")

    async def run() -> None:
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            assert (await client.post("/llm/v1/responses", content=b"{}")).status_code == 200
            assert (await client.get("/llm/openresponses/v1/responses/r1")).status_code == 200
            assert (await client.get("/llmx/v1/responses/r1")).status_code == 200

    asyncio.run(run())
    found = samples(metrics.exposition().decode())
    name = "responses_stream_requests_total"
    assert value(found, name, route="responses", dialect="openai", model="", status="200") == 1
    assert (
        value(found, name, route="retrieve", dialect="openresponses", model="", status="200") == 1
    )
    assert value(found, name, route="other", dialect="", model="", status="200") == 1
