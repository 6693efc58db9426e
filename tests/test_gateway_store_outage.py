"""A store outage never answers a response as stored when it was not.

Under a gateway served over real HTTP, the store is made to fail for real: a SQLite file
and its directory made unwritable (the immutable attribute, which stops root too, and
stops writes through a descriptor already open), and a Redis server stopped and started
again.  While the store is down a request that must be stored gets a 503 with
``Retry-After`` before anything is sent, or (a stream already under way) ends with
``response.failed`` saying it was not stored; what needs no write goes on; once the
store is back the gateway uses it again by itself, and every response answered as
stored is retrievable.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_support import gateway, sdk, ws_turn
from gateway_upstream import ModelUpstream
from outage_load import check_outcomes, run_streams
from redis_server import RedisServer
from websockets.sync.client import connect

from responses_stream import parse_sse, validate_payloads
from responses_stream._runtime.gateway.store_guard import RETRY_AFTER


def _immutable(directory: Path, on: bool) -> subprocess.CompletedProcess[bytes]:
    """Set (or clear) the immutable attribute of ``directory`` and its files but SQLite's
    shared-memory index, which SQLite maps into memory: a write to a page of an immutable
    file mapped so is a bus error, not an error SQLite could report."""
    files = [p for p in directory.iterdir() if not p.name.endswith("-shm")]
    paths = [str(directory), *map(str, files)]
    return subprocess.run(["chattr", "+i" if on else "-i", *paths], capture_output=True)


@contextmanager
def unwritable(directory: Path) -> Iterator[None]:
    """``directory`` and its files cannot be written, not even by root, not even through
    a descriptor already open."""
    if shutil.which("chattr") is None or _immutable(directory, True).returncode != 0:
        pytest.skip("cannot make a file immutable here (chattr +i)")
    try:
        yield
    finally:
        _immutable(directory, False).check_returncode()


def _post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(url + "/v1/responses", json=body, timeout=30)


def _stream(url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], list[dict[str, Any]]]:
    """Status, headers and events of a streamed create."""
    with httpx.stream("POST", url + "/v1/responses", json={**body, "stream": True}) as answer:
        raw = answer.read()
        if answer.status_code != 200:
            return answer.status_code, dict(answer.headers), [json.loads(raw)]
    events = [json.loads(m.data) for m in parse_sse([raw])]
    return 200, dict(answer.headers), events


def _refused(status: int, headers: dict[str, str], body: dict[str, Any]) -> None:
    """A 503 the client may retry, naming the store."""
    assert status == 503, body
    assert 1 <= int(headers["retry-after"]) <= RETRY_AFTER + 1
    assert body["error"]["code"] == "store_unavailable", body


def _not_stored(events: list[dict[str, Any]]) -> str:
    """A valid stream that ends ``response.failed``, saying it was not stored; its id."""
    assert validate_payloads(events, strict=True) == []
    last = events[-1]
    assert last["type"] == "response.failed", [e["type"] for e in events]
    assert "not stored" in last["response"]["error"]["message"]
    assert last["response"]["output"], "the output the client saw is still in it"
    return str(last["response"]["id"])


ASK = {"model": "fake-model", "input": "Count from 1 to 3."}


def test_an_unwritable_sqlite_store_never_answers_a_response_as_stored(
    upstream: tuple[str, ModelUpstream], tmp_path: Path
) -> None:
    fake = upstream[1]
    folder = tmp_path / "store"
    with gateway(upstream[0] + "/v1", f"sqlite:///{folder / 'responses.db'}") as url:
        client = sdk(url)
        before = client.responses.create(**ASK)  # stored while the store was well
        answered: list[str] = [before.id]
        with unwritable(folder):
            # a stream under way when the write fails: failed, and said so
            status, _, events = _stream(url, ASK)
            assert status == 200
            lost = [_not_stored(events)]
            # the store is now known down: refused before the upstream is called
            calls = len(fake.requests)
            answer = _post(url, ASK)
            _refused(answer.status_code, dict(answer.headers), answer.json())
            status, headers, events = _stream(url, ASK)
            _refused(status, headers, events[0])
            assert len(fake.requests) == calls
            # what needs no write goes on: store false, and reading what was stored
            unstored = _post(url, {**ASK, "store": False})
            assert unstored.status_code == 200 and unstored.json()["status"] == "completed"
            assert client.responses.retrieve(before.id).output_text == before.output_text
            # once the refusal runs out, an answer that is not streamed is a 503 too
            time.sleep(RETRY_AFTER + 0.1)
            answer = _post(url, ASK)
            _refused(answer.status_code, dict(answer.headers), answer.json())
            assert len(fake.requests) == calls + 2  # the store false one, and this one
        time.sleep(RETRY_AFTER + 0.1)
        # back by itself: stored again, and every response answered as stored is there
        after = client.responses.create(**ASK, previous_response_id=before.id)
        answered.append(after.id)
        for response_id in answered:
            assert client.responses.retrieve(response_id).status == "completed"
        for response_id in lost:
            assert _post(url, {**ASK, "previous_response_id": response_id}).status_code == 404


def test_a_stopped_redis_is_a_503_and_the_gateway_reconnects(
    upstream: tuple[str, ModelUpstream], redis_server: RedisServer
) -> None:
    store = f"{redis_server.url}?prefix=outage-{uuid.uuid4().hex}:"
    with gateway(upstream[0] + "/v1", store) as url:
        client = sdk(url)
        before = client.responses.create(**ASK)
        redis_server.stop()
        try:
            status, headers, events = _stream(url, ASK)
            if status == 200:  # the stream began before the store was found down
                _not_stored(events)
                status, headers, events = _stream(url, ASK)
            _refused(status, headers, events[0])
            answer = httpx.get(f"{url}/v1/responses/{before.id}", timeout=30)
            _refused(answer.status_code, dict(answer.headers), answer.json())
            assert _post(url, {**ASK, "store": False}).status_code == 200
        finally:
            redis_server.start()
        time.sleep(RETRY_AFTER + 0.1)
        after = client.responses.create(**ASK, previous_response_id=before.id)
        assert client.responses.retrieve(after.id).previous_response_id == before.id


def test_streams_under_way_while_sqlite_fails_and_recovers(
    upstream: tuple[str, ModelUpstream], tmp_path: Path
) -> None:
    folder = tmp_path / "store"
    with gateway(upstream[0] + "/v1", f"sqlite:///{folder / 'responses.db'}") as url:
        sdk(url).responses.create(**ASK)  # the files exist, the tenant secret is kept
        with unwritable(folder):
            pass  # chattr works here (else the test skipped)

        def outage() -> None:
            time.sleep(1.0)
            with unwritable(folder):
                time.sleep(2.5)

        out = run_streams(url, "fake-model", workers=20, seconds=6.0, outage=outage)
        time.sleep(RETRY_AFTER + 0.1)
        check_outcomes(url, out)
    print(out.summary())
    assert out.stored and (out.lost or out.refused), out.summary()


def test_a_websocket_turn_the_store_did_not_take_ends_failed(
    upstream: tuple[str, ModelUpstream], tmp_path: Path
) -> None:
    folder = tmp_path / "store"
    with gateway(upstream[0] + "/v1", f"sqlite:///{folder / 'responses.db'}") as url:
        sdk(url).responses.create(**ASK)
        with connect("ws" + url.removeprefix("http") + "/v1/responses") as ws:
            with unwritable(folder):
                events = ws_turn(ws, {"type": "response.create", **ASK})
                _not_stored(events)
                refused = ws_turn(ws, {"type": "response.create", **ASK})
            assert refused[-1]["type"] == "error" and refused[-1]["status"] == 503
            assert refused[-1]["error"]["code"] == "store_unavailable"
            time.sleep(RETRY_AFTER + 0.1)
            events = ws_turn(ws, {"type": "response.create", **ASK})
            assert events[-1]["type"] == "response.completed"
