"""The gateway under load: waves of 200 concurrent streams; throughput, latency, memory.

Three processes on this machine: the fake Chat Completions upstream
(``benchmarks.fake_chat_upstream``), the gateway (``python -m responses_stream serve
--store memory:``) and this one, which runs waves of ``CLIENTS`` concurrent streaming
clients and reads every stream to its end.  Each wave has an ``httpx.AsyncClient`` of
its own, so each stream has a connection of its own (see ``Bench.wave``).

- A gateway wave posts ``{"model": "m", "input": "hi N", "stream": true, "store": false}``
  to the gateway's ``/v1/responses``: every stream must end with ``response.completed``
  and carry one text or reasoning delta event per delta chunk the upstream sent.  A
  direct wave posts the chat request the gateway would send straight to the upstream
  and reads its chunks to ``[DONE]``.
- Latency: the upstream stamps every chunk with its send time (``"t"``, ns).  A direct
  client reads it from the chunk; through the gateway, which drops it, the k-th delta
  event of a stream is matched to the k-th delta chunk the upstream sent for that
  stream (``GET /sent``, keyed by the input text).  Latency is arrival (the read that
  completed the event) minus send; the gateway adds the difference between the two
  paths' medians (over their waves) of each quantile.
- Throughput: events and streams a second over each wave; CPU: each process's user +
  system time over each wave (``/proc/PID/stat``; this process's own for the clients).
- Memory: the gateway's resident set (``VmRSS``), sampled every 0.5 s and read after
  every gateway wave; after the last wave it must be within 10% of after the first.

Two phases, each with processes of its own: ``FAST`` (the upstream sends a chunk every
5 ms, 200 a stream: the throughput, the memory series and the latency at that load) and
``PACED`` (every 50 ms, 50 a stream: latency at a load this machine carries).  In each,
direct waves alternate with the first gateway waves so both paths see the machine alike.
``store`` is false: the ``memory:`` store keeps every stored response by design (it is
for tests), which would measure the store, not the gateway.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from .gateway_load import (
    CLIENTS,
    FAST,
    PACED,
    RSS_BOUND,
    SAMPLE_EVERY,
    SECTION,
    GatewayLoad,
    Phase,
    Setup,
    Wave,
)
from .harness import ROOT, Report, Row, Target, python

MIB = 1024 * 1024
TICK = os.sysconf("SC_CLK_TCK")


# -- processes -------------------------------------------------------------------------
def upstream_cmd(port: int, *args: str) -> list[str]:
    """The fake upstream on ``port``, with its ``args`` (``--chunks``, ``--interval``, ...)."""
    return [python(), "-m", "benchmarks.fake_chat_upstream", "--port", str(port), *args]


def gateway_cmd(upstream: str, port: int) -> list[str]:
    """``serve`` on ``port`` in front of ``upstream`` (its base URL), as every load test
    runs it: the ``memory:`` store, warnings only."""
    cmd = [python(), "-m", "responses_stream", "serve", "--upstream", f"{upstream}/v1"]
    return cmd + ["--port", str(port), "--store", "memory:", "--log-level", "warning"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server(
    cmd: list[str],
    health: str,
    log: IO[bytes],
    *,
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
    wait: float = 30,
) -> Iterator[subprocess.Popen[bytes]]:
    """``cmd`` running (its output in ``log``) until the block ends, once ``health`` is 200
    (within ``wait`` seconds)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + wait
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {log.read()!r}")
            try:
                if httpx.get(health, timeout=1, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{health} did not answer 200 within {wait:g} s")
            time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def rss(pid: int) -> float:
    """The resident set of process ``pid``, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 / MIB
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


# -- clients ---------------------------------------------------------------------------
@dataclass
class Read:
    """One stream as its client read it."""

    events: int = 0
    arrivals: list[int] = field(default_factory=list)  # ns, every delta event
    sent: list[int] = field(default_factory=list)  # ns, every delta chunk (direct only)
    last: bytes = b""  # the last event's name (gateway) or frame (direct)
    error: str = ""
    began: int = 0  # ns, the request sent
    first: int = 0  # ns, the first frame's arrival


def _event(out: Read, name: bytes, now: int) -> None:
    """One Responses event, by its name, read at ``now``."""
    out.events += 1
    out.last = name
    if name.endswith(b"_text.delta"):  # output_text, reasoning_text, reasoning_summary_text
        out.arrivals.append(now)


def gateway_frame(out: Read, frame: bytes, now: int) -> None:
    _event(out, frame[7 : frame.find(b"\n")] if frame.startswith(b"event: ") else frame[:80], now)


_TYPE = re.compile(rb'^data: \{"type":\s*"([^"]+)"')


def data_frame(out: Read, frame: bytes, now: int) -> None:
    """A Responses frame with no ``event:`` line (a server that sends only ``data:``,
    the event's ``type`` its first key, as LiteLLM does); a ``[DONE]`` after the
    terminal event, which the openai SDK skips, is not counted."""
    if frame == b"data: [DONE]":  # sent after the terminal event by some; no event
        return
    found = _TYPE.match(frame)
    _event(out, found.group(1) if found else frame[:80], now)


def direct_frame(out: Read, frame: bytes, now: int) -> None:
    out.events += 1
    out.last = frame[:80]
    if b'content":"' in frame:  # content, reasoning_content
        out.arrivals.append(now)
        out.sent.append(int(frame[frame.rindex(b'"t":') + 4 : -1]))


async def read_stream(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    on_frame: Callable[[Read, bytes, int], None],
) -> Read:
    """POST ``body`` and read the SSE answer to its end, each frame to ``on_frame``."""
    out = Read(began=time.time_ns())
    try:
        async with client.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                out.error = f"HTTP {response.status_code}: {(await response.aread())[:300]!r}"
                return out
            buf = b""
            async for data in response.aiter_raw():
                now = time.time_ns()
                *frames, buf = (buf + data).split(b"\n\n")
                if frames and not out.first:
                    out.first = now
                for frame in frames:
                    on_frame(out, frame, now)
    except httpx.HTTPError as exc:
        cause = exc.__cause__ or exc.__context__
        out.error = f"{exc!r} (from {cause!r}) after {out.events} events"
    return out


def bodies(kind: str, texts: list[str], chunks: int | None = None) -> list[dict[str, Any]]:
    """The requests of a wave; ``chunks`` asks the fake upstream for that many deltas."""
    if kind == "gateway":
        limit = {"max_output_tokens": chunks} if chunks else {}
        return [{"model": "m", "input": t, "stream": True, "store": False, **limit} for t in texts]
    return [
        {
            "model": "m",
            "messages": [{"role": "user", "content": t}],
            "stream": True,
            "stream_options": {"include_usage": True},
            **({"max_completion_tokens": chunks} if chunks else {}),
        }
        for t in texts
    ]


@dataclass(frozen=True)
class Route:
    """Where the streams of a wave go and how each is read."""

    url: str
    on_frame: Callable[[Read, bytes, int], None]
    end: bytes  # the last event's name (or frame) of a correct stream
    body: str = "gateway"  # the Responses request ("gateway") or the chat one ("direct")
    headers: dict[str, str] = field(default_factory=dict)


async def run_wave(
    kind: str,
    route: Route,
    upstream: str,
    chunks: int,
    cpu_now: Callable[[], dict[str, float]],
    *,
    clients: int = CLIENTS,
    ask: int | None = None,
) -> Wave:
    """``clients`` concurrent streams to ``route``, each read to its end and checked: it
    ends as the route's streams end, with one delta event per delta chunk the upstream
    sent (``chunks`` a stream; ``ask`` asks the upstream for that many)."""
    # A client of its own: no connection is kept from wave to wave.  Under this load
    # a client reads a stream's end seconds after the server wrote it, so a kept
    # connection can outlive the server's keep-alive (uvicorn's 5 s) and a request
    # on it fail with a reset after 0 events, whatever the client's own expiry.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=clients)
    timeout = httpx.Timeout(120, connect=30, pool=None)
    texts = [f"hi {i}" for i in range(clients)]
    async with httpx.AsyncClient(
        limits=limits, timeout=timeout, trust_env=False, headers=route.headers
    ) as client:
        cpu0, t0 = cpu_now(), time.perf_counter()
        reads = await asyncio.gather(
            *(
                read_stream(client, route.url, b, route.on_frame)
                for b in bodies(route.body, texts, ask)
            )
        )
        seconds = time.perf_counter() - t0
        cpu1 = cpu_now()
        sent = (await client.get(f"{upstream}/sent")).json()  # the upstream forgets
    failures: list[str] = []
    latencies: list[int] = []
    firsts: list[float] = []
    streams = events = 0
    for text, r in zip(texts, reads, strict=True):
        times = r.sent if route.body == "direct" else sent.get(text, [])
        events += r.events
        if r.first:
            firsts.append((r.first - r.began) / 1e6)
        if r.error:
            failures.append(r.error)
        elif r.last != route.end:
            failures.append(f"the stream ended with {r.last!r}, not {route.end.decode()}")
        elif len(r.arrivals) != len(times) or len(times) != chunks:
            failures.append(
                f"{len(r.arrivals)} delta events for {len(times)} delta chunks sent (of {chunks})"
            )
        else:
            streams += 1
            latencies += [a - s for a, s in zip(r.arrivals, times, strict=True)]
    used = {name: cpu1[name] - cpu0[name] for name in cpu0}
    return Wave(kind, seconds, streams, events, latencies, failures, used, chunks, firsts)


class Bench:
    """The waves of one phase against one upstream and one gateway."""

    def __init__(self, phase: Phase, gateway: str, upstream: str, pids: dict[str, int]):
        self.phase, self.gateway, self.upstream, self.pids = phase, gateway, upstream, pids

    def cpu_now(self) -> dict[str, float]:
        out = {name: cpu(pid) for name, pid in self.pids.items()}
        out["client"] = time.process_time()
        return out

    def route(self, kind: str) -> Route:
        if kind == "gateway":
            return Route(f"{self.gateway}/v1/responses", gateway_frame, b"response.completed")
        return Route(
            f"{self.upstream}/v1/chat/completions", direct_frame, b"data: [DONE]", "direct"
        )

    async def wave(self, kind: str, chunks: int | None = None) -> Wave:
        """One wave of ``kind`` ("gateway" or "direct"), each stream of ``chunks`` deltas
        (by default the setup's)."""
        every = chunks or self.phase.setup.chunks
        return await run_wave(
            kind, self.route(kind), self.upstream, every, self.cpu_now, ask=chunks
        )

    async def drive(self, schedule: list[str]) -> None:
        phase, pid = self.phase, self.pids["gateway"]
        samples: list[float] = []

        async def sample() -> None:
            while True:
                samples.append(rss(pid))
                await asyncio.sleep(SAMPLE_EVERY)

        phase.rss_idle = rss(pid)
        sampler = asyncio.create_task(sample())
        try:
            for n, kind in enumerate(schedule, 1):
                w = await self.wave(kind)
                phase.waves.append(w)
                after = ""
                if kind == "gateway":
                    phase.rss_after.append(rss(pid))
                    after = f"; gateway RSS {phase.rss_after[-1]:.1f} MiB"
                cpus = ", ".join(f"{k} {v:.1f}" for k, v in w.cpu.items())
                print(
                    f"  {phase.setup.label} wave {n:>2}/{len(schedule)} {kind:<7} "
                    f"{w.seconds:5.2f} s: {w.streams}/{CLIENTS} streams, "
                    f"{w.events_per_s:,.0f} events/s, delta p50 {w.quantile(0.5):,.0f} ms "
                    f"p99 {w.quantile(0.99):,.0f} ms; CPU s {cpus}{after}"
                )
                for failure in w.failures[:3]:
                    print(f"    failed: {failure}")
        finally:
            sampler.cancel()
        phase.rss_peak = max(samples)
        phase.samples = len(samples)


def schedule(gateway_waves: int, direct_waves: int) -> list[str]:
    """Gateway waves, a direct wave beside each of the first ones (order alternating)."""
    out: list[str] = []
    for i in range(gateway_waves):
        pair = ["direct", "gateway"] if i % 2 == 0 else ["gateway", "direct"]
        out += pair if i < direct_waves else ["gateway"]
    return out


def run_phase(
    setup: Setup, gateway_waves: int, direct_waves: int, upstream_args: tuple[str, ...] = ()
) -> Phase:
    """The waves of one setup, on an upstream and a gateway of their own (the upstream
    started with ``upstream_args`` besides the setup's)."""
    phase = Phase(setup)
    up_port, gw_port = free_port(), free_port()
    upstream, gateway = f"http://127.0.0.1:{up_port}", f"http://127.0.0.1:{gw_port}"
    up_cmd = upstream_cmd(
        up_port, "--chunks", str(setup.chunks), "--interval", str(setup.interval), *upstream_args
    )
    gw_cmd = gateway_cmd(upstream, gw_port)
    with (
        tempfile.TemporaryFile() as up_log,
        tempfile.TemporaryFile() as gw_log,
        server(up_cmd, f"{upstream}/health", up_log) as up,
        server(gw_cmd, f"{gateway}/health", gw_log) as gw,
    ):
        bench = Bench(phase, gateway, upstream, {"gateway": gw.pid, "upstream": up.pid})
        asyncio.run(bench.drive(schedule(gateway_waves, direct_waves)))
        gw_log.seek(0)
        phase.logged = gw_log.read().decode(errors="replace").splitlines()
    for line in phase.logged[:10]:
        print(f"  gateway logged: {line}")
    return phase


def run(report: Report, quick: bool) -> GatewayLoad:
    """Both phases (fewer waves with ``quick``); rows, targets and checks in ``report``."""
    print(f"\n== {SECTION}: waves of {CLIENTS} concurrent streams ==")
    waves = {FAST: (2, 1), PACED: (1, 1)} if quick else {FAST: (10, 3), PACED: (2, 2)}
    phases = {}
    for setup, (gateway_waves, direct_waves) in waves.items():
        print(
            f"  {setup.name}: {setup.chunks} delta chunks a stream, one every {setup.label} "
            f"({setup.offered:,.0f} chunks/s offered)"
        )
        phases[setup] = run_phase(setup, gateway_waves, direct_waves)
    result = GatewayLoad(CLIENTS, phases[FAST], phases[PACED])
    _record(report, result)
    return result


def _record(report: Report, result: GatewayLoad) -> None:
    failures = result.failures
    if failures:
        report.notes.append(
            f"Gateway load: {len(failures)} of {result.started:,} streams failed; the first: "
            f"{failures[0]}"
        )
    else:
        gateway_streams = sum(len(p.of("gateway")) for p in (result.fast, result.paced))
        report.check(
            f"gateway load: each of {gateway_streams * CLIENTS:,} streams through the gateway "
            f"ended with response.completed, one delta event per delta chunk sent"
        )
    figures: dict[str, tuple[str, Callable[[Wave], float]]] = {
        "streams a second": ("streams/s", lambda w: w.streams_per_s),
        "events a second": ("events/s", lambda w: w.events_per_s),
        "delta latency p50": ("ms", lambda w: w.quantile(0.5)),
        "delta latency p99": ("ms", lambda w: w.quantile(0.99)),
    }
    for phase in (result.fast, result.paced):
        cands = {"gateway": phase.of("gateway"), "upstream direct": phase.of("direct")}
        for name, (unit, figure) in figures.items():
            if phase is result.paced and not name.startswith("delta"):
                continue
            samples = {cand: [figure(w) for w in ws] for cand, ws in cands.items()}
            path = f"{CLIENTS} streams, {phase.setup.label}: {name}"
            report.add(SECTION, path, samples, unit, ours=("gateway",))
    fast = result.fast
    report.rows.append(
        Row(
            SECTION,
            f"gateway RSS after each of {len(fast.rss_after)} waves",
            "gateway",
            statistics.median(fast.rss_after),
            "MiB",
            fast.rss_after,
            True,
        )
    )
    report.targets.append(
        Target(
            SECTION,
            f"{result.started:,} streams, {CLIENTS} concurrent",
            "streams completed / streams started",
            (result.started - len(failures)) / result.started,
            ">=",
            1.0,
        )
    )
    last = len(fast.rss_after)
    report.targets.append(
        Target(
            SECTION,
            f"gateway RSS over {last} waves of {CLIENTS} streams",
            f"RSS after wave {last} / after wave 1",
            result.rss_ratio,
            "<=",
            RSS_BOUND,
            "memory stays flat",
        )
    )
    for phase in (result.fast, result.paced):
        print(
            f"  {phase.setup.label}: the gateway added {phase.added(0.5):+,.0f} ms (p50) and "
            f"{phase.added(0.99):+,.0f} ms (p99) to each delta; its CPU "
            f"{phase.cpu_per_delta('gateway', 'gateway'):.0f} µs a delta chunk"
        )
    print(
        f"  gateway RSS: idle {fast.rss_idle:.1f} MiB, after wave 1 {fast.rss_after[0]:.1f}, "
        f"after wave {last} {fast.rss_after[-1]:.1f} ({result.rss_ratio:.2f}×), "
        f"peak {fast.rss_peak:.1f} ({fast.samples} samples)"
    )


if __name__ == "__main__":  # python -m benchmarks.bench_gateway [--quick]: this one alone
    import sys

    from . import report as report_module

    r = Report()
    run(r, "--quick" in sys.argv)
    print("\n" + report_module.table(r))
