"""What the gateway adds to the time to the first event, with 40 concurrent streams.

One fake upstream (``benchmarks.fake_chat_upstream``: its headers at once, then 50 ms
before each of its 20 chunks, as a model's prefill and tokens) and one gateway, each in
a process of its own.  A direct wave posts the chat request to the upstream and times
each stream to the upstream's headers: the moment the gateway can start its stream.  A
gateway wave posts the Responses request and times each stream to its first event
(``response.created``).  A first wave of each (not counted) warms both; then waves
alternate, direct first, so both see the machine alike; each wave's p50 and p99 over
its streams are figures, and the gateway adds the
difference between the medians (over the waves) of each quantile.  Beside them, the
gateway's own view from its ``/metrics`` (``time_to_first_event``, from a request's
arrival to its first event leaving): the mean of each gateway wave, and the share of
its streams within 5 ms.  On a machine whose cores the clients, the gateway and the
upstream share, the difference of the two is time the clients lose to the gateway's
work, not time the stream waits in the gateway.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from contextlib import ExitStack
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from .bench_gateway import free_port, gateway_cmd, server, upstream_cmd
from .gateway_load import SECTION
from .harness import Report, Target

CLIENTS = 40
CHUNKS = 20
INTERVAL = 0.05
BOUND_MS = 5.0  # what the gateway may add at p50
FIRST_EVENT = "responses_stream_time_to_first_event_seconds"


def first_event_metrics(gateway: str) -> tuple[float, float, float]:
    """The gateway's first-event histogram so far: streams, of them within 5 ms, and the
    sum of their times (s)."""
    text = httpx.get(f"{gateway}/metrics", timeout=10, trust_env=False).text
    found = {"_count": 0.0, "_bucket": 0.0, "_sum": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            part = sample.name.removeprefix(FIRST_EVENT)
            labels = sample.labels
            if part in found and labels.get("route") == "responses":
                if part != "_bucket" or labels.get("le") == "0.005":
                    found[part] = sample.value
    return found["_count"], found["_bucket"], found["_sum"]


async def _one(client: httpx.AsyncClient, url: str, body: dict[str, Any], kind: str) -> float:
    """ms from the request to the upstream's headers (direct) or the first event (gateway);
    the stream is then read to its end."""
    start = time.perf_counter()
    waited = 0.0
    async with client.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}")
        if kind == "direct":
            waited = time.perf_counter() - start
        async for piece in response.aiter_raw():
            if kind == "gateway" and not waited and b"\n\n" in piece:
                waited = time.perf_counter() - start
    return waited * 1000


async def _wave(kind: str, url: str) -> list[float]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(limits=limits, timeout=60, trust_env=False) as client:
        if kind == "direct":
            target = f"{url}/v1/chat/completions"
            bodies: list[dict[str, Any]] = [
                {"model": "m", "messages": [{"role": "user", "content": f"hi {n}"}], "stream": True}
                for n in range(CLIENTS)
            ]
        else:
            target = f"{url}/v1/responses"
            bodies = [
                {"model": "m", "input": f"hi {n}", "stream": True, "store": False}
                for n in range(CLIENTS)
            ]
        return list(await asyncio.gather(*(_one(client, target, b, kind) for b in bodies)))


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[round(q * (len(ordered) - 1))]


def run(report: Report, quick: bool) -> dict[str, float]:
    rounds = 2 if quick else 8
    print(f"\n== {SECTION}: time to the first event, {CLIENTS} concurrent streams ==")
    waves: dict[str, list[list[float]]] = {"direct": [], "gateway": []}
    own: list[tuple[float, float]] = []  # each gateway wave: mean ms, share within 5 ms
    with ExitStack() as stack:
        up_port, gw_port = free_port(), free_port()
        upstream, gateway = f"http://127.0.0.1:{up_port}", f"http://127.0.0.1:{gw_port}"
        up_cmd = upstream_cmd(up_port, "--chunks", str(CHUNKS), "--interval", str(INTERVAL))
        gw_cmd = gateway_cmd(upstream, gw_port)
        up_log = stack.enter_context(tempfile.TemporaryFile())
        gw_log = stack.enter_context(tempfile.TemporaryFile())
        stack.enter_context(server(up_cmd, f"{upstream}/health", up_log))
        stack.enter_context(server(gw_cmd, f"{gateway}/health", gw_log))
        for kind, url in (("direct", upstream), ("gateway", gateway)):  # warm-up, not counted
            asyncio.run(_wave(kind, url))
        for n in range(rounds):
            for kind in ("direct", "gateway") if n % 2 == 0 else ("gateway", "direct"):
                url = upstream if kind == "direct" else gateway
                before = first_event_metrics(gateway)
                waited = asyncio.run(_wave(kind, url))
                waves[kind].append(waited)
                inside = ""
                if kind == "gateway":
                    count, fast, total = (
                        a - b for a, b in zip(first_event_metrics(gateway), before, strict=True)
                    )
                    own.append((total / count * 1000, fast / count))
                    inside = (
                        f"; in the gateway: mean {own[-1][0]:.2f} ms, {fast:.0f}/{count:.0f} ≤ 5 ms"
                    )
                print(
                    f"  round {n + 1}/{rounds} {kind:<7}: p50 {_quantile(waited, 0.5):6.2f} ms, "
                    f"p99 {_quantile(waited, 0.99):6.2f} ms{inside}"
                )
    added = {}
    paths = []
    for q, name in ((0.5, "p50"), (0.99, "p99")):
        samples = {
            "gateway (response.created)": [_quantile(w, q) for w in waves["gateway"]],
            "upstream direct (headers)": [_quantile(w, q) for w in waves["direct"]],
        }
        path = f"{CLIENTS} streams: time to first event {name}"
        paths.append(path)
        med = report.add(SECTION, path, samples, "ms", ours=("gateway (response.created)",))
        added[name] = med["gateway (response.created)"] - med["upstream direct (headers)"]
        print(f"  the gateway added {added[name]:+.2f} ms at {name}")
    report.targets.append(
        Target(
            SECTION,
            f"{CLIENTS} streams: time to first event",
            "ms the gateway adds at p50",
            added["p50"],
            "<=",
            BOUND_MS,
            unit="ms",
            steady=report.steady(SECTION, paths[0], ("gateway (response.created)",))
            and report.steady(SECTION, paths[0], ("upstream direct (headers)",)),
        )
    )
    spread = statistics.median(max(w) - min(w) for w in waves["gateway"])
    print(f"  gateway waves: median spread of a wave {spread:.2f} ms")
    report.add(
        SECTION,
        f"{CLIENTS} streams: arrival to first event inside the gateway (its metrics), mean",
        {"gateway": [mean for mean, _ in own]},
        "ms",
        ours=("gateway",),
    )
    shares = ", ".join(f"{share:.0%}" for _, share in own)
    report.notes.append(
        f"{SECTION}, {CLIENTS} streams: the share whose first event left the gateway within "
        f"5 ms of the request's arrival (its metrics), each wave: {shares}."
    )
    return added
