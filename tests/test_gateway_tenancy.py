"""Gateway keys and tenancy: no one reads, continues or deletes another's conversation.

Over real HTTP and WebSocket on 127.0.0.1, on every store (SQLite, Redis, memory): a
stored response is seen only by the credential that made it (or, with gateway keys, the
key); another tenant's id answers exactly as an id that does not exist.  With gateway
keys, a request without a known key is 401 before anything is read, and the upstream
receives only ``UPSTREAM_API_KEY``.  The real ``serve`` command: restarts, its log.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_support import gateway, serve_process, ws_turn
from gateway_upstream import ModelUpstream
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

SECRET = "my secret is 42"
ALICE, BOB = "Bearer sk-alice-0123456789", "Bearer sk-bob-9876543210"
KEYS = ("gk-first-key-0123456789abcdef", "gk-second-key-fedcba9876543210")


def store_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'tenancy.db'}"
    if kind == "redis":
        base: str = request.getfixturevalue("redis_url")
        return base + ("&" if "?" in base else "?") + f"prefix=tenancy-{uuid.uuid4().hex}:"
    return "memory:"


@pytest.fixture(params=["sqlite", "redis", "memory"])
def open_gw(
    request: pytest.FixtureRequest, upstream: tuple[str, ModelUpstream], tmp_path: Path
) -> Iterator[str]:
    with gateway(upstream[0] + "/v1", store_url(request.param, tmp_path, request)) as url:
        yield url


def headers(authorization: str | None) -> dict[str, str]:
    return {"authorization": authorization} if authorization else {}


def create(url: str, authorization: str | None, **body: Any) -> httpx.Response:
    body = {"model": "scripted-text", "input": SECRET, **body}
    return httpx.post(url + "/v1/responses", json=body, headers=headers(authorization), timeout=30)


def same_as_missing(url: str, method: str, path: str, response_id: str, who: str | None) -> None:
    """``who`` gets for ``response_id`` exactly what any caller gets for an id that does
    not exist (the id aside)."""
    ghost = "resp_" + uuid.uuid4().hex
    seen = httpx.request(method, url + path.format(response_id), headers=headers(who), timeout=30)
    missing = httpx.request(method, url + path.format(ghost), headers=headers(who), timeout=30)
    assert seen.status_code == missing.status_code == 404
    assert seen.text.replace(response_id, "ID") == missing.text.replace(ghost, "ID")


ROUTES = [
    ("GET", "/v1/responses/{}"),
    ("GET", "/v1/responses/{}/input_items"),
    ("DELETE", "/v1/responses/{}"),
    ("GET", "/openresponses/v1/responses/{}"),
]


def test_another_credential_sees_nothing_of_a_stored_response(
    open_gw: str, upstream: tuple[str, ModelUpstream]
) -> None:
    fake = upstream[1]
    made = create(open_gw, ALICE)
    assert made.status_code == 200
    own = made.json()
    rid = own["id"]
    [message] = [o for o in own["output"] if o["type"] == "message"]
    for who in (BOB, None, "Bearer", ALICE + " "):  # another key, none, a blank, a near miss
        if who == ALICE + " ":
            continue  # the same credential once stripped: Alice's own
        for method, path in ROUTES:
            same_as_missing(open_gw, method, path, rid, who)
        before = len(fake.requests)
        follow = create(open_gw, who, input="and?", previous_response_id=rid)
        assert follow.status_code == 404
        assert follow.json()["error"]["code"] == "previous_response_not_found"
        reference = create(open_gw, who, input=[{"type": "item_reference", "id": message["id"]}])
        assert reference.status_code == 400
        assert reference.json()["error"]["code"] == "item_not_found"
        compact = httpx.post(
            open_gw + "/v1/responses/compact",
            json={"model": "scripted-text", "previous_response_id": rid},
            headers=headers(who),
            timeout=30,
        )
        assert compact.status_code == 404
        assert len(fake.requests) == before, "the upstream was called"
        ws = connect(
            "ws" + open_gw.removeprefix("http") + "/v1/responses",
            additional_headers=headers(who),
        )
        with ws:
            frame = {"type": "response.create", "model": "scripted-text", "input": "and?"}
            [error] = ws_turn(ws, {**frame, "previous_response_id": rid})
            assert error["error"]["code"] == "previous_response_not_found"
        assert all(SECRET not in json.dumps(r.body) for r in fake.requests[before:])
    # its owner still can, everywhere
    assert httpx.get(open_gw + f"/v1/responses/{rid}", headers=headers(ALICE)).status_code == 200
    items = httpx.get(open_gw + f"/v1/responses/{rid}/input_items", headers=headers(ALICE))
    assert SECRET in items.text
    follow = create(open_gw, ALICE, input="and?", previous_response_id=rid)
    assert follow.status_code == 200
    assert SECRET in json.dumps(fake.last.body["messages"])
    reference = create(open_gw, ALICE, input=[{"type": "item_reference", "id": message["id"]}])
    assert reference.status_code == 200
    deleted = httpx.delete(open_gw + f"/v1/responses/{rid}", headers=headers(ALICE))
    assert deleted.status_code == 200


def test_no_credential_is_a_tenant_of_its_own(open_gw: str) -> None:
    rid = create(open_gw, None).json()["id"]
    assert httpx.get(open_gw + f"/v1/responses/{rid}").status_code == 200
    same_as_missing(open_gw, "GET", "/v1/responses/{}", rid, ALICE)


@pytest.mark.parametrize(
    "response_id",
    ["../../etc/passwd", "..%2F..%2Fx", "%00", "a" * 5000, "résumé-😀", "resp_1%0d%0aX: y", "*"],
)
def test_odd_ids_are_not_found(open_gw: str, response_id: str) -> None:
    for method, path in ROUTES:
        answer = httpx.request(method, open_gw + path.format(response_id), timeout=30)
        assert answer.status_code == 404, (method, path, answer.text)
        assert answer.json()["error"]["message"]


# -- gateway keys ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def keyed_gw(upstream: tuple[str, ModelUpstream]) -> Iterator[str]:
    with gateway(upstream[0] + "/v1", api_key="sk-upstream-key", api_keys=KEYS) as url:
        yield url


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Bearer gk-wrong", f"Basic {KEYS[0]}", KEYS[0], f"Bearer {KEYS[0]}x"],
)
def test_without_a_known_key_every_route_is_401(keyed_gw: str, authorization: str | None) -> None:
    body = {"model": "scripted-text", "input": "hi"}
    chat = {"model": "scripted-text", "messages": [{"role": "user", "content": "hi"}]}
    for method, path, payload in [
        ("POST", "/v1/responses", body),
        ("POST", "/openresponses/v1/responses", body),
        ("GET", "/v1/responses/resp_x", None),
        ("DELETE", "/v1/responses/resp_x", None),
        ("POST", "/v1/responses/compact", body),
        ("POST", "/v1/chat/completions", chat),
        ("GET", "/v1/models", None),
        ("GET", "/nowhere", None),
    ]:
        answer = httpx.request(
            method, keyed_gw + path, json=payload, headers=headers(authorization), timeout=30
        )
        assert answer.status_code == 401, (path, answer.text)
        assert answer.json()["error"]["code"] == "invalid_api_key"
    with pytest.raises(InvalidStatus) as info:
        connect(
            "ws" + keyed_gw.removeprefix("http") + "/v1/responses",
            additional_headers=headers(authorization),
        )
    assert info.value.response.status_code == 401
    assert httpx.get(keyed_gw + "/health", timeout=30).status_code == 200


def test_each_key_is_its_own_tenant_and_the_upstream_gets_only_its_key(
    keyed_gw: str, upstream: tuple[str, ModelUpstream]
) -> None:
    first, second = (f"Bearer {k}" for k in KEYS)
    rid = create(keyed_gw, first).json()["id"]
    assert upstream[1].last.authorization == "Bearer sk-upstream-key"
    assert httpx.get(keyed_gw + f"/v1/responses/{rid}", headers=headers(first)).status_code == 200
    same_as_missing(keyed_gw, "GET", "/v1/responses/{}", rid, second)
    with connect(
        "ws" + keyed_gw.removeprefix("http") + "/v1/responses", additional_headers=headers(second)
    ) as ws:
        done = ws_turn(ws, {"type": "response.create", "model": "scripted-text", "input": "x"})
        assert done[-1]["type"] == "response.completed"
    assert upstream[1].last.authorization == "Bearer sk-upstream-key"


def test_with_keys_and_no_upstream_key_nothing_is_forwarded(
    upstream: tuple[str, ModelUpstream],
) -> None:
    with gateway(upstream[0] + "/v1", api_keys=KEYS) as url:
        assert create(url, f"Bearer {KEYS[1]}").status_code == 200
        assert upstream[1].last.authorization is None


# -- the serve command ------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_tenancy_survives_a_restart(
    upstream: tuple[str, ModelUpstream], tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    store = store_url(kind, tmp_path, request)
    with serve_process(upstream[0] + "/v1", "--store", store) as (url, _):
        rid = create(url, ALICE).json()["id"]
    with serve_process(upstream[0] + "/v1", "--store", store) as (url, _):
        assert httpx.get(url + f"/v1/responses/{rid}", headers=headers(ALICE)).status_code == 200
        same_as_missing(url, "GET", "/v1/responses/{}", rid, BOB)
    env = {"RESPONSES_STREAM_API_KEYS": ",".join(KEYS)}
    with serve_process(upstream[0] + "/v1", "--store", store, env=env) as (url, _):
        rid = create(url, f"Bearer {KEYS[0]}").json()["id"]
    with serve_process(upstream[0] + "/v1", "--store", store, "--api-key", KEYS[0]) as (url, _):
        owner = headers(f"Bearer {KEYS[0]}")
        assert httpx.get(url + f"/v1/responses/{rid}", headers=owner).status_code == 200
        assert httpx.get(url + f"/v1/responses/{rid}").status_code == 401


def test_records_from_before_tenancy_are_seen_by_no_one_unless_shared(
    upstream: tuple[str, ModelUpstream], tmp_path: Path
) -> None:
    path = tmp_path / "old.db"
    store = f"sqlite:///{path}"
    with serve_process(upstream[0] + "/v1", "--store", store) as (url, _):
        rid = create(url, None).json()["id"]
    with sqlite3.connect(path) as db:  # as the format-1 store wrote it: no tenant
        [(data,)] = db.execute("SELECT record FROM responses WHERE id = ?", (rid,)).fetchall()
        record = json.loads(data)
        old = {"format": 1, "response": record["response"], "input_items": record["input_items"]}
        db.execute("UPDATE responses SET record = ? WHERE id = ?", (json.dumps(old).encode(), rid))
    db.close()
    with serve_process(upstream[0] + "/v1", "--store", store) as (url, _):
        for who in (None, ALICE):
            assert httpx.get(url + f"/v1/responses/{rid}", headers=headers(who)).status_code == 404
    with serve_process(upstream[0] + "/v1", "--store", store, "--legacy-records", "shared") as (
        url,
        _,
    ):
        for who in (None, ALICE):
            assert httpx.get(url + f"/v1/responses/{rid}", headers=headers(who)).status_code == 200


def test_no_key_secret_or_prompt_in_the_log_at_debug(upstream: tuple[str, ModelUpstream]) -> None:
    env = {"RESPONSES_STREAM_API_KEYS": ",".join(KEYS), "UPSTREAM_API_KEY": "sk-upstream-secret"}
    args = ("--store", "memory:", "--log-level", "debug", "--tenant-secret", "tenant-secret-xyz")
    with serve_process(upstream[0] + "/v1", *args, env=env) as (url, proc):
        owner = f"Bearer {KEYS[0]}"
        rid = create(url, owner).json()["id"]
        httpx.get(url + f"/v1/responses/{rid}/input_items", headers=headers(owner), timeout=30)
        create(url, "Bearer gk-wrong-key-123456")
        create(url, owner, input=SECRET, colour=1)
        with connect(
            "ws" + url.removeprefix("http") + "/v1/responses", additional_headers=headers(owner)
        ) as ws:
            ws_turn(ws, {"type": "response.create", "model": "scripted-text", "input": SECRET})
        proc.terminate()
        proc.wait(10)
        log = proc.stdout.read() if proc.stdout else ""
    assert "answered 401 invalid_api_key" in log and "DEBUG" in log.upper(), log[-2000:]
    for secret in (*KEYS, "gk-wrong-key-123456", "sk-upstream-secret", "tenant-secret-xyz", SECRET):
        assert secret not in log, secret
