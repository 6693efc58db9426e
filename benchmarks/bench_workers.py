"""``serve --workers 2`` beside one worker: the same waves, interleaved, in one run.

Both gateways run at once in front of one fake upstream (the ``FAST`` setup of the
gateway load: 200 concurrent streams of 200 deltas, a chunk every 5 ms), on one SQLite
file each (``--workers`` needs a store its processes share; the requests say
``store: false``, so neither writes).  Their waves alternate (1, 2, 2, 1, ...), so both
see the machine alike; each wave's streams a second and events a second are the
figures, with their spread over the waves.
"""

from __future__ import annotations

import asyncio
import tempfile
from contextlib import ExitStack
from pathlib import Path

from .bench_gateway import Bench, free_port, server, upstream_cmd
from .gateway_load import CLIENTS, FAST, WORKERS, WORKERS_SECTION, Phase, WorkersLoad
from .harness import Report, Target, python


def run(report: Report, quick: bool) -> WorkersLoad:
    rounds = 2 if quick else 6
    setup = FAST
    print(f"\n== {WORKERS_SECTION}: waves of {CLIENTS} streams, 1 worker beside 2 ==")
    phases = {n: Phase(setup) for n in WORKERS}
    up_port = free_port()
    upstream = f"http://127.0.0.1:{up_port}"
    up_cmd = upstream_cmd(up_port, "--chunks", str(setup.chunks), "--interval", str(setup.interval))
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        up_log = stack.enter_context(tempfile.TemporaryFile())
        up = stack.enter_context(server(up_cmd, f"{upstream}/health", up_log))
        benches = {}
        for n in WORKERS:
            url = f"http://127.0.0.1:{free_port()}"
            cmd = [python(), "-m", "responses_stream", "serve", "--upstream", upstream + "/v1"]
            cmd += ["--port", url.rsplit(":", 1)[1], "--workers", str(n)]
            cmd += ["--store", f"sqlite:///{folder / f'w{n}.db'}", "--log-level", "warning"]
            log = stack.enter_context(tempfile.TemporaryFile())
            gateway = stack.enter_context(server(cmd, f"{url}/health", log))
            # the CPU figures of a Bench read the supervisor alone: not reported here
            benches[n] = Bench(
                phases[n], url, upstream, {"gateway": gateway.pid, "upstream": up.pid}
            )
        asyncio.run(_drive(benches, rounds))
    result = WorkersLoad(phases)
    _record(report, result)
    return result


async def _drive(benches: dict[int, Bench], rounds: int) -> None:
    for i in range(rounds):
        for n in WORKERS if i % 2 == 0 else tuple(reversed(WORKERS)):
            wave = await benches[n].wave("gateway")
            benches[n].phase.waves.append(wave)
            print(
                f"  round {i + 1}/{rounds}, {n} worker{'s' if n > 1 else ''}: "
                f"{wave.seconds:5.2f} s, {wave.streams}/{CLIENTS} streams, "
                f"{wave.streams_per_s:,.1f} streams/s, {wave.events_per_s:,.0f} events/s"
            )
            for failure in wave.failures[:3]:
                print(f"    failed: {failure}")


def _record(report: Report, result: WorkersLoad) -> None:
    label = {n: f"{n} worker{'s' if n > 1 else ''}" for n in WORKERS}
    for name, unit, figure in (
        ("streams a second", "streams/s", "streams_per_s"),
        ("events a second", "events/s", "events_per_s"),
    ):
        samples = {label[n]: [getattr(w, figure) for w in result.phases[n].waves] for n in WORKERS}
        path = f"{CLIENTS} streams, {FAST.label}: {name}"
        report.add(WORKERS_SECTION, path, samples, unit, ours=(label[2],))
    started = sum(len(p.waves) for p in result.phases.values()) * CLIENTS
    report.targets.append(
        Target(
            WORKERS_SECTION,
            f"{started:,} streams, {CLIENTS} concurrent",
            "streams completed / streams started",
            (started - len(result.failures)) / started,
            ">=",
            1.0,
        )
    )
