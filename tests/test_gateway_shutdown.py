"""``serve`` as operators run it: ``--workers N`` on one SQLite store, and SIGTERM with
streams in flight (the real process, the real signal)."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_support import serve_process
from gateway_upstream import ModelUpstream
from test_gateway_observe import samples, value

from responses_stream import validate_payloads

GRACE = 3.0


def streamed(url: str, text: str, into: dict[str, list[dict[str, Any]]], name: str) -> None:
    """One slow stream (0.2 s a piece of 4 characters), its events kept in ``into``."""
    events: list[dict[str, Any]] = []
    body = {"model": "fake-slow", "input": text, "stream": True}
    try:
        with httpx.stream("POST", url + "/v1/responses", json=body, timeout=60) as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
    finally:
        into[name] = events


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_lets_short_streams_finish_and_ends_the_rest_failed(
    tmp_path: Path, workers: int
) -> None:
    store = f"sqlite:///{tmp_path / 'responses.db'}"
    upstream = ModelUpstream()
    seen: dict[str, list[dict[str, Any]]] = {}
    args = ("--store", store, "--shutdown-grace", str(GRACE), "--workers", str(workers))
    with upstream.serve() as up:
        with serve_process(up + "/v1", *args) as (url, proc):
            # 10 streams of about 1 s, 10 of about 20 s
            threads = [
                threading.Thread(target=streamed, args=(url, "hi", seen, f"short{n}"))
                for n in range(10)
            ] + [
                threading.Thread(target=streamed, args=(url, "x" * 400, seen, f"long{n}"))
                for n in range(10)
            ]
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 30
            while len(upstream.requests) < 20:  # every stream under way
                assert time.monotonic() < deadline
                time.sleep(0.02)
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            # no longer accepting, well before the grace period is over (with workers the
            # signal reaches each worker through the supervisor: it may take a moment)
            while True:
                try:
                    httpx.post(url + "/v1/responses", json={"model": "fake-model", "input": "x"})
                except httpx.TransportError:
                    break
                assert time.monotonic() - signalled < GRACE / 2, "still accepting"
                time.sleep(0.1)
            for thread in threads:
                thread.join(60)
            # uvicorn ends by raising the signal it handled again, as Unix expects
            assert proc.wait(30) in (0, -signal.SIGTERM)
            ended = time.monotonic() - signalled
        assert GRACE <= ended < GRACE + 8
        with serve_process(up + "/v1", "--store", store) as (again, _):
            kept = {
                name: httpx.get(f"{again}/v1/responses/{events[-1]['response']['id']}").json()
                for name, events in seen.items()
            }
    for name, events in seen.items():
        errors = [str(v) for v in validate_payloads(events, strict=True) if v.severity == "error"]
        assert errors == [], (name, errors)
        said = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
        final = events[-1]["response"]
        if name.startswith("short"):
            assert final["status"] == "completed" and said == "Hello! You said: hi"
        else:
            assert final["status"] == "failed", name
            [error] = [e for e in events if e["type"] == "error"]
            assert error["code"] == "gateway_shutdown"
            assert said and len(said) < len("Hello! You said: " + "x" * 400)
        # the record written is the response the client saw end
        record = kept[name]
        assert (record["status"], record["output"]) == (final["status"], final["output"])


def test_workers_share_the_store_and_the_metrics(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'responses.db'}"
    upstream = ModelUpstream()
    with (
        upstream.serve() as up,
        serve_process(up + "/v1", "--store", store, "--workers", "2") as (
            url,
            _,
        ),
    ):
        made = [
            httpx.post(url + "/v1/responses", json={"model": "fake-model", "input": str(n)})
            for n in range(12)
        ]
        assert all(r.status_code == 200 for r in made)
        for r in made:
            got = httpx.get(f"{url}/v1/responses/{r.json()['id']}")
            assert got.status_code == 200 and got.json()["output"] == r.json()["output"]
        found = samples(httpx.get(url + "/metrics").text)
    labels = {"route": "responses", "dialect": "openai", "model": "fake-model", "status": "200"}
    assert value(found, "responses_stream_requests_total", **labels) == 12
    retrieved = {"route": "retrieve", "dialect": "openai", "model": "", "status": "200"}
    assert value(found, "responses_stream_requests_total", **retrieved) == 12


def test_workers_need_a_store_they_share() -> None:
    with pytest.raises(RuntimeError) as raised:
        with serve_process("http://127.0.0.1:9/v1", "--store", "memory:", "--workers", "2"):
            pass
    assert "exited with 2" in str(raised.value)
    assert "the memory: store is one per process" in str(raised.value)
