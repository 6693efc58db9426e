"""Two ``serve`` replicas on one ``redis-server`` behind HAProxy (round robin, health
checks on ``/health``), all on 127.0.0.1, in front of the scripted upstream.

A conversation whose turns alternate between the replicas continues; one replica is
killed (SIGKILL) while 50 streams run: every response a client saw complete is
retrievable through the balancer afterwards, new requests succeed on the other
replica, and every record in Redis decodes.  Redis is killed and started again while 50
clients stream: nothing is answered as stored that was not, and the replicas use Redis
again by themselves.  The figures of both go to ``docs/scale-out.md``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen
from typing import Any

import httpx
import pytest
import redis
from gateway_support import free_port
from gateway_upstream import ModelUpstream
from openai import OpenAI
from outage_load import check_outcomes, run_streams
from redis_server import RedisServer
from test_clients import ROOT, running, started

from responses_stream._runtime.gateway.store import open_store
from responses_stream._runtime.gateway.store_guard import RETRY_AFTER

HAPROXY = shutil.which("haproxy") or ""
REDIS = shutil.which("redis-server") or ""
# .ci/run installs both and sets this: there, a missing one is a failure
REQUIRED = os.environ.get("RESPONSES_STREAM_REQUIRE_HAPROXY") == "1"
pytestmark = pytest.mark.skipif(
    not (HAPROXY and REDIS) and not REQUIRED,
    reason="needs haproxy and redis-server (Debian's packages)",
)
PREFIX = "scale-out:"
REPORT = ROOT / "docs" / "scale-out.md"
HAPROXY_CONFIG = """\
global
    maxconn 2000
defaults
    mode http
    option http-no-delay
    timeout connect 2s
    timeout client 60s
    timeout server {server_timeout}
    retries 2
    option redispatch
frontend gateway
    bind 127.0.0.1:{port}
    default_backend replicas
    http-response set-header x-served-by %[srv_name]
backend replicas
    balance roundrobin
    option httpchk GET /health
    default-server inter 200ms fall 2 rise 2
    server r1 127.0.0.1:{r1} check
    server r2 127.0.0.1:{r2} check
frontend silent
    bind 127.0.0.1:{silent_port}
    default_backend silent
backend silent
    option httpchk GET /health
    server r3 127.0.0.1:{r3} check inter 200ms
"""
# A balancer's idle timeout far below the usual 60 s, and replicas that beat faster than
# it (r3 does not beat: the control that shows the timeout cuts a silent stream).
SERVER_TIMEOUT = 2.0
HEARTBEATS = {"r1": "1", "r2": "1", "r3": "0"}
BACKGROUND_LEASE = 2.0  # seconds a replica holds a background response between renewals


@dataclass
class Cluster:
    url: str  # the balancer
    replicas: dict[str, Popen[Any]]  # by HAProxy's server name
    store: str  # the replicas' store URL
    upstream: ModelUpstream
    redis: RedisServer
    direct: dict[str, str]  # each replica's own URL, by name
    silent_url: str  # the balancer's frontend for r3, which sends no heartbeat


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    upstream = ModelUpstream()
    server = RedisServer(REDIS, tmp_path)
    server.start()
    store = f"{server.url}?prefix={PREFIX}"
    try:
        with ExitStack() as stack:
            up = stack.enter_context(upstream.serve()) + "/v1"
            replicas: dict[str, Popen[Any]] = {}
            ports = {}
            for name, beat in HEARTBEATS.items():
                port = free_port()
                cmd = [sys.executable, "-m", "responses_stream", "serve", "--upstream", up]
                cmd += ["--port", str(port), "--store", store, "--log-level", "warning"]
                cmd += ["--heartbeat", beat, "--background-lease", str(BACKGROUND_LEASE)]
                log = tmp_path / f"{name}.log"
                _, replicas[name] = stack.enter_context(
                    started(cmd, log, port, 30, cwd=ROOT / "generated")
                )
                ports[name] = port
            port, silent_port = free_port(), free_port()
            config = tmp_path / "haproxy.cfg"
            text = HAPROXY_CONFIG.format(
                port=port, silent_port=silent_port, server_timeout=f"{SERVER_TIMEOUT:g}s", **ports
            )
            config.write_text(text, encoding="utf-8")
            cmd = [HAPROXY, "-f", str(config), "-db"]
            url = stack.enter_context(running(cmd, tmp_path / "haproxy.log", port, 10))
            _wait_both_up(url)
            direct = {name: f"http://127.0.0.1:{p}" for name, p in ports.items()}
            silent = f"http://127.0.0.1:{silent_port}"
            yield Cluster(url, replicas, store, upstream, server, direct, silent)
    finally:
        server.stop()


def _wait_both_up(url: str) -> None:
    """Until HAProxy has seen both replicas healthy (each answers in turn)."""
    deadline = time.monotonic() + 10
    while {httpx.get(url + "/health").headers.get("x-served-by") for _ in range(4)} != {
        "r1",
        "r2",
    }:
        assert time.monotonic() < deadline, "HAProxy did not see both replicas up"
        time.sleep(0.1)


KEY = "scale-out"  # one client: one tenant, who sees all its responses
AUTH = {"authorization": f"Bearer {KEY}"}


def sdk(url: str) -> OpenAI:
    return OpenAI(base_url=url + "/v1", api_key=KEY, _strict_response_validation=True)


def test_a_conversation_alternating_between_replicas_continues(cluster: Cluster) -> None:
    client = sdk(cluster.url)
    previous = None
    served, said = [], []
    for turn in range(4):
        raw = client.responses.with_raw_response.create(
            model="echo", input=f"turn {turn}", previous_response_id=previous
        )
        served.append(raw.headers["x-served-by"])
        answer = raw.parse()
        said.append(answer.output_text)
        previous = answer.id
    assert served in (["r1", "r2", "r1", "r2"], ["r2", "r1", "r2", "r1"])
    # each turn's model saw the whole conversation, though the other replica kept it
    for turn in range(4):
        earlier = [f"user: turn {n}\nassistant: {said[n]}" for n in range(turn)]
        assert said[turn] == "\n".join([*earlier, f"user: turn {turn}"])


def _stream(url: str, n: int, into: dict[int, dict[str, Any]]) -> None:
    """One slow stream (about 3 s): its terminal response, or how it broke."""
    body = {"model": "fake-slow", "input": f"stream {n:02d} " + "x" * 20, "stream": True}
    outcome: dict[str, Any] = {"events": 0}
    try:
        with httpx.stream("POST", url + "/v1/responses", json=body, headers=AUTH, timeout=60) as r:
            outcome["served_by"] = r.headers.get("x-served-by")
            for line in r.iter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    outcome["events"] += 1
                    if event["type"].startswith("response.") and "response" in event:
                        outcome["response"] = event["response"]
    except httpx.HTTPError as exc:
        outcome["broke"] = type(exc).__name__
    into[n] = outcome


def _records(store: str) -> dict[str, str]:
    """Every response record in Redis, decoded by the store itself: id -> status."""
    client = redis.Redis.from_url(store.split("?")[0])
    ids = [
        key.decode()[len(PREFIX) :]
        for key in client.scan_iter(match=f"{PREFIX}resp_*")
        if b":item:" not in key
    ]
    client.close()

    async def read() -> dict[str, str]:
        opened = open_store(store)
        try:
            found = {}
            for response_id in ids:
                record = await opened.get(response_id)
                assert record is not None, response_id
                found[response_id] = record.response["status"]
            return found
        finally:
            await opened.close()

    return asyncio.run(read())


def test_a_replica_killed_under_load(cluster: Cluster) -> None:
    outcomes: dict[int, dict[str, Any]] = {}
    threads = [threading.Thread(target=_stream, args=(cluster.url, n, outcomes)) for n in range(50)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while sum(1 for r in cluster.upstream.requests if r.method == "POST") < 50:
        assert time.monotonic() < deadline, "the streams did not all start"
        time.sleep(0.02)
    time.sleep(0.5)  # every stream under way
    victim = cluster.replicas["r1"]
    victim.kill()
    victim.wait(10)
    for thread in threads:
        thread.join(60)
    complete = {
        n: o["response"]
        for n, o in outcomes.items()
        if o.get("response", {}).get("status") == "completed"
    }
    cut = sorted(n for n in outcomes if n not in complete)
    assert len(outcomes) == 50
    assert complete and cut, "the kill must land while streams run on both replicas"
    assert {outcomes[n].get("served_by") for n in cut} == {"r1"}
    # HAProxy sees r1 down within a few checks; what was seen complete is all there
    client = sdk(cluster.url)
    retrieved = {n: client.responses.retrieve(r["id"]) for n, r in complete.items()}
    assert all(
        retrieved[n].output_text == complete[n]["output"][-1]["content"][0]["text"]
        for n in complete
    )
    fresh = [
        client.responses.with_raw_response.create(model="fake-model", input=f"after {n}")
        for n in range(10)
    ]
    assert {r.headers["x-served-by"] for r in fresh} == {"r2"}
    assert all(r.parse().status == "completed" for r in fresh)
    records = _records(cluster.store)
    assert all(records[r["id"]] == "completed" for r in complete.values())
    assert set(records.values()) <= {"completed", "failed", "incomplete"}
    _report(
        "One replica killed",
        "50 streams of about 3 s run; one replica is killed with SIGKILL half a second in.\n\n"
        "| figure | count |\n|---|---|\n"
        f"| streams started | {len(outcomes)} |\n"
        f"| completed (seen complete by their client) | {len(complete)} |\n"
        f"| cut by the kill (all on the killed replica) | {len(cut)} |\n"
        f"| completed ones retrievable afterwards through the balancer | {len(retrieved)} |\n"
        f"| new requests after the kill that succeeded (on the other replica) | "
        f"{sum(1 for r in fresh if r.parse().status == 'completed')} of {len(fresh)} |\n"
        f"| records in Redis, each decoded by the store | {len(records)} |\n",
    )


def _report(title: str, text: str) -> None:
    """Write the section ``title`` of ``docs/scale-out.md`` (each test writes its own)."""
    head = (
        "# Two replicas behind HAProxy, under faults\n\n"
        "Written by `make e2e` (`tests/e2e/test_scale_out.py`): two `serve` replicas on one\n"
        "`redis-server`, behind HAProxy (round robin, `option httpchk GET /health` every\n"
        "200 ms, `option redispatch`), all on 127.0.0.1, in front of the scripted upstream.\n"
    )
    old = REPORT.read_text(encoding="utf-8") if REPORT.exists() else ""
    sections = {part.split("\n", 1)[0]: part for part in old.split("\n## ")[1:] if part.strip()}
    sections[title] = f"{title}\n\n{text}"
    body = "\n## ".join(sections[name].rstrip("\n") + "\n" for name in sorted(sections))
    REPORT.write_text(f"{head}\n## {body}", encoding="utf-8")


def test_redis_killed_and_started_again_under_load(cluster: Cluster) -> None:
    """50 clients stream through the balancer while Redis is killed (SIGKILL) and started
    again: no 5xx but the store's 503, nothing answered as stored that was not, and the
    replicas use Redis again by themselves."""
    down: list[float] = []

    def outage() -> None:
        time.sleep(1.5)
        assert cluster.redis.process is not None
        cluster.redis.process.kill()
        cluster.redis.process.wait(10)
        cluster.redis.process = None
        down.append(time.monotonic())
        time.sleep(3.0)
        cluster.redis.start()
        down.append(time.monotonic())

    out = run_streams(cluster.url, "fake-model", workers=50, seconds=9.0, outage=outage)
    time.sleep(RETRY_AFTER + 0.5)
    check_outcomes(cluster.url, out)
    assert out.stored and (out.lost or out.refused), out.summary()
    _report(
        "Redis killed and started again",
        "50 clients stream for 9 s (each waits as a 503's `Retry-After` says); Redis is\n"
        f"killed with SIGKILL 1.5 s in and started again {down[1] - down[0]:.1f} s later.\n"
        "Every stream was checked by the validator (`--strict`).\n\n"
        "| figure | count |\n|---|---|\n"
        f"| answered as stored (`response.completed`), each retrievable afterwards | "
        f"{len(out.stored)} |\n"
        f"| ended `response.failed` saying it was not stored, each a 404 afterwards | "
        f"{len(out.lost)} |\n"
        f"| refused with 503 `store_unavailable` before anything was sent | {out.refused} |\n"
        f"| any other answer (a 500, a hang, a broken stream) | {len(out.invalid)} |\n",
    )


def _silent_stream(url: str) -> tuple[int, list[str], bytes]:
    """A stream whose upstream falls silent for 5 s mid-way: status, event types, the
    raw body (its end tells how it ended)."""
    body = {"model": "fake-pause-5", "input": "Count from 1 to 5.", "stream": True}
    raw = b""
    with httpx.stream("POST", url + "/v1/responses", json=body, headers=AUTH, timeout=30) as r:
        status = r.status_code
        try:
            for piece in r.iter_raw():
                raw += piece
        except httpx.RemoteProtocolError:  # the balancer cut it
            pass
    types = [
        json.loads(line[6:])["type"]
        for line in raw.decode(errors="replace").split("\n")
        if line.startswith("data: ")
    ]
    return status, types, raw


def test_heartbeats_keep_a_silent_stream_past_the_balancer_timeout(cluster: Cluster) -> None:
    """``timeout server 2s``: the replicas beating every second keep a stream whose
    upstream is silent for 5 s; the one that does not beat is cut by HAProxy."""
    status, types, raw = _silent_stream(cluster.url)
    assert status == 200 and types[-1] == "response.completed", types[-3:]
    assert raw.count(b": keep-alive") >= 4
    client = sdk(cluster.url)
    with client.responses.create(model="fake-pause-5", input="Count.", stream=True) as events:
        assert [e.type for e in events][-1] == "response.completed"
    status, types, raw = _silent_stream(cluster.silent_url)
    assert b": keep-alive" not in raw
    assert "response.completed" not in types, "without a beat the balancer must cut it"
    _report(
        "A silent upstream behind a short idle timeout",
        f"HAProxy's `timeout server` is {SERVER_TIMEOUT:g} s; the upstream says nothing for\n"
        "5 s mid-stream. Replicas with `--heartbeat 1` keep the stream (a comment line a\n"
        "second; the strict openai SDK reads it to `response.completed`); the replica with\n"
        f"`--heartbeat 0` has it cut by the balancer (its client saw {len(types)} events\n"
        "and no terminal one).\n",
    )


def _delta_times(client: httpx.Client, n: int) -> list[float]:
    """Seconds from the request to each ``output_text.delta`` of a paced stream, sent on
    ``client``'s kept connection (its setup, which a balancer lengthens, is left out)."""
    body = {"model": "fake-slow", "input": f"delta timing {n}", "stream": True}
    start, times = time.perf_counter(), []
    with client.stream("POST", "/v1/responses", json=body, headers=AUTH, timeout=30) as r:
        for line in r.iter_lines():
            if line.startswith("data: ") and '"response.output_text.delta"' in line[:60]:
                times.append(time.perf_counter() - start)
    return times


def test_delta_latency_through_the_balancer(cluster: Cluster) -> None:
    """The same paced streams straight to a replica and through HAProxy, alternated: what
    the balancer adds to each delta's arrival (``option http-no-delay``)."""
    direct, balanced = [], []
    with (
        httpx.Client(base_url=cluster.direct["r1"]) as straight,
        httpx.Client(base_url=cluster.url) as through,
    ):
        for client in (straight, through):
            client.get("/health")  # the kept connection is open before the first stream
        for n in range(8):
            direct.append(_delta_times(straight, n))
            balanced.append(_delta_times(through, n))
    count = min(map(len, direct + balanced))
    assert count >= 5
    added = sorted(
        statistics.median(b[i] for b in balanced) - statistics.median(d[i] for d in direct)
        for i in range(count)
    )
    p50 = statistics.median(added) * 1000
    worst = added[-1] * 1000
    assert p50 < 20, f"the balancer holds deltas back: {p50:.1f} ms at the median"
    _report(
        "Delta latency through the balancer",
        "8 paced streams (a chunk every 0.2 s) straight to a replica and 8 through HAProxy,\n"
        "alternated, each path on one kept connection; for each of the first\n"
        f"{count} deltas, its median time from the request through the balancer, less the\n"
        "same direct:\n\n"
        "| added by the balancer | ms |\n|---|---|\n"
        f"| median over the deltas | {p50:.1f} |\n"
        f"| largest | {worst:.1f} |\n",
    )


def _background(url: str, stop_after: int | None = None) -> tuple[str, list[dict[str, Any]], str]:
    """A streamed background response started through ``url``: its id, the events read
    (up to ``stop_after``, then the client leaves) and the replica that served it."""
    body = {"model": "fake-slow", "input": "x" * 40, "background": True, "stream": True}
    events: list[dict[str, Any]] = []
    with httpx.stream("POST", url + "/v1/responses", json=body, headers=AUTH, timeout=60) as r:
        served = r.headers.get("x-served-by", "")
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if stop_after is not None and events[-1]["sequence_number"] == stop_after:
                    break
    return events[0]["response"]["id"], events, served


def _resumed(url: str, response_id: str, after: int) -> tuple[list[dict[str, Any]], str]:
    path = f"{url}/v1/responses/{response_id}?stream=true&starting_after={after}"
    with httpx.stream("GET", path, headers=AUTH, timeout=60) as r:
        assert r.status_code == 200, r.read()
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
        return [json.loads(line[6:]) for line in lines], r.headers.get("x-served-by", "")


def test_a_background_response_resumes_and_fails_across_replicas(cluster: Cluster) -> None:
    """Through the balancer: a background stream left after its event 5 is resumed through
    the other replica to its end; a replica killed (SIGKILL) while it runs one has it
    failed within the lease, and a resumed stream ends with that failure."""
    response_id, first, started_on = _background(cluster.url, stop_after=5)
    rest, resumed_on = _resumed(cluster.url, response_id, 5)
    assert {started_on, resumed_on} == {"r1", "r2"}  # round robin: the other replica
    assert [e["sequence_number"] for e in rest] == list(range(6, 6 + len(rest)))
    assert rest[-1]["type"] == "response.completed"
    kept = sdk(cluster.url).responses.retrieve(response_id)
    assert (
        kept.status == "completed"
        and kept.output_text == rest[-1]["response"]["output"][-1]["content"][0]["text"]
    )

    body = {"model": "fake-slow", "input": "y" * 40, "background": True}
    victim_id = ""
    for _ in range(4):  # until the balancer gives it to r1, the replica to kill
        raw = httpx.post(cluster.url + "/v1/responses", json=body, headers=AUTH, timeout=30)
        if raw.headers.get("x-served-by") == "r1":
            victim_id = raw.json()["id"]
            break
    assert victim_id, "no background response landed on r1"
    time.sleep(0.5)
    cluster.replicas["r1"].kill()
    cluster.replicas["r1"].wait(10)
    killed = time.monotonic()
    status = "queued"
    while status in ("queued", "in_progress") and time.monotonic() - killed < 15:
        status = httpx.get(f"{cluster.direct['r2']}/v1/responses/{victim_id}", headers=AUTH).json()[
            "status"
        ]
        time.sleep(0.1)
    failed_after = time.monotonic() - killed
    assert status == "failed"
    assert failed_after < BACKGROUND_LEASE + 3
    tail, _ = _resumed(cluster.direct["r2"], victim_id, 2)
    assert [e["type"] for e in tail[-2:]] == ["error", "response.failed"]
    assert tail[-2]["code"] == "replica_lost"
    _report(
        "Background responses across replicas",
        "A background stream started through the balancer and left after its event 5 is\n"
        f"resumed through the balancer on the other replica ({started_on} then {resumed_on}):\n"
        f"events 6 to {rest[-1]['sequence_number']}, ending `response.completed`.\n\n"
        "A replica is killed (SIGKILL) half a second into a background response it runs;\n"
        f"the other replica reports it `failed` {failed_after:.1f} s later (lease "
        f"{BACKGROUND_LEASE:g} s), and a resumed stream ends `error` (`replica_lost`),\n"
        "`response.failed`.\n",
    )
