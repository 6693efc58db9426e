"""A soak: 20,000 streams through one ``serve``, its resident set read as they go.

The fake upstream (``benchmarks.fake_chat_upstream``, 20 chunks a stream, no pause) and
the gateway run in processes of their own; the gateway keeps every response in a SQLite
file (``store`` left to its default, true), as a deployment does.  50 clients stream
without pause; after every 2,000 streams the gateway's resident set is read.  The first
2,000 are the warm-up (caches, pools, the allocator's arenas fill); every later reading
must stay within 5% of the first one after it.  A leak (a task, a buffer, a record
kept per stream) grows with the streams and shows past that bound.  ``--quick`` runs a
tenth of the streams.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

from .bench_gateway import free_port, rss, server, upstream_cmd
from .harness import Report, Target, python

SECTION = "Soak"
STREAMS, EVERY, CLIENTS = 20_000, 2_000, 50
BOUND = 1.05  # the last readings over the first after the warm-up
BODY = {"model": "soak", "input": "Tell me a story.", "stream": True}


async def _streams(url: str, count: int, failures: list[str]) -> None:
    """``count`` streams by ``CLIENTS`` clients, each read to its terminal event."""
    left = iter(range(count))
    limits = httpx.Limits(max_connections=CLIENTS)
    async with httpx.AsyncClient(timeout=60, limits=limits, trust_env=False) as client:

        async def worker() -> None:
            for _ in left:
                async with client.stream("POST", url + "/v1/responses", json=BODY) as r:
                    tail = b""
                    async for piece in r.aiter_bytes():
                        tail = (tail + piece)[-4096:]
                if r.status_code != 200 or b"response.completed" not in tail:
                    failures.append(f"{r.status_code}: {tail[-200:]!r}")

        await asyncio.gather(*(worker() for _ in range(CLIENTS)))


def run(report: Report, quick: bool) -> list[float]:
    """The gateway's resident set (MiB) after each ``EVERY`` streams."""
    streams, every = (STREAMS // 10, EVERY // 10) if quick else (STREAMS, EVERY)
    print(f"\n== {SECTION}: {streams:,} streams, resident set every {every:,} ==")
    readings: list[float] = []
    failures: list[str] = []
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="soak-")))
        up_port, gw_port = free_port(), free_port()
        up_log = stack.enter_context(open(tmp / "upstream.log", "w+b"))
        gw_log = stack.enter_context(open(tmp / "gateway.log", "w+b"))
        cmd = upstream_cmd(up_port, "--chunks", "20", "--interval", "0")
        stack.enter_context(server(cmd, f"http://127.0.0.1:{up_port}/health", up_log))
        gateway = [python(), "-m", "responses_stream", "serve"]
        gateway += ["--upstream", f"http://127.0.0.1:{up_port}/v1", "--port", str(gw_port)]
        gateway += ["--store", f"sqlite:///{tmp / 'soak.db'}", "--log-level", "warning"]
        url = f"http://127.0.0.1:{gw_port}"
        proc = stack.enter_context(server(gateway, url + "/health", gw_log))
        start = time.perf_counter()
        for done in range(every, streams + 1, every):
            asyncio.run(_streams(url, every, failures))
            readings.append(rss(proc.pid))
            print(f"  {done:>6,} streams: {readings[-1]:.1f} MiB", flush=True)
        elapsed = time.perf_counter() - start
    if failures:
        raise SystemExit(f"{SECTION}: {len(failures)} streams failed, e.g. {failures[0]}")
    base = readings[1]  # the first reading after the warm-up
    growth = max(readings[1:]) / base
    report.check(f"{SECTION}: {streams:,} streams completed, each read to response.completed")
    report.targets.append(
        Target(
            SECTION,
            f"{streams:,} streams through serve (SQLite store)",
            f"largest RSS / RSS after {2 * every:,} streams",
            growth,
            "<=",
            BOUND,
            "a leak grows with the streams",
        )
    )
    shown = ", ".join(f"{r:.1f}" for r in readings)
    report.notes.append(
        f"Soak: {streams:,} streams in {elapsed:.0f} s ({streams / elapsed:.0f} a second, "
        f"{CLIENTS} clients); the gateway's RSS after every {every:,} streams (MiB): {shown}; "
        f"the largest after the warm-up is {100 * (growth - 1):+.1f}% of the first after it."
    )
    return readings
