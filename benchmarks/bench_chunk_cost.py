"""The gateway's CPU a chunk beside the upstream's own, each chunk arriving alone.

One fake upstream of the stack most Python inference servers run (Starlette's
``StreamingResponse`` on uvicorn, each chunk encoded as it is sent:
``fake_chat_upstream --starlette``) and one gateway in front of it, each in a process
of its own.  Waves of 200 concurrent streams, one chunk every 50 ms, so every chunk
comes alone (a read and a write of its own), as a model streams tokens.  Each round
has a short wave (25 deltas a stream) and a long one (125), order alternating; both
processes handle the same chunks, and their CPU time (user + system, ``/proc``) is
read around each wave.  A chunk's cost is the difference of the two waves over the
100 deltas a stream more, so what a stream costs once (its request, its opening and
closing events) cancels out; that once-a-stream cost is reported beside it, as is
the whole long wave's ratio.  Direct rounds (the clients read the upstream itself)
show the upstream's cost is the same either way.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from contextlib import ExitStack

from .bench_gateway import Bench, free_port, gateway_cmd, server, upstream_cmd
from .gateway_load import (
    CLIENTS,
    COST_BOUND,
    COST_SETUP,
    LONG,
    SECTION,
    SHORT,
    ChunkCost,
    Phase,
    Round,
)
from .harness import Report, Target

UPSTREAM = "upstream (Starlette)"


async def _drive(bench: Bench, rounds: int, direct: int) -> ChunkCost:
    out = ChunkCost()
    for n in range(rounds):
        kinds = ["gateway", "direct"] if n < direct else ["gateway"]
        for kind in kinds if n % 2 == 0 else list(reversed(kinds)):
            lengths = (SHORT, LONG) if n % 2 == 0 else (LONG, SHORT)
            waves = {chunks: await bench.wave(kind, chunks) for chunks in lengths}
            one = Round(waves[SHORT], waves[LONG])
            (out.gateway if kind == "gateway" else out.direct).append(one)
            line = (
                f"  round {n + 1}/{rounds} {kind:<7}: upstream {one.per_chunk('upstream'):.0f} "
                "µs a chunk"
            )
            if kind == "gateway":
                line += (
                    f", gateway {one.per_chunk('gateway'):.0f} µs a chunk "
                    f"({one.per_chunk('gateway') / one.per_chunk('upstream'):.2f}×) and "
                    f"{one.per_stream('gateway'):.0f} µs a stream"
                )
            print(line)
            for wave in (one.short, one.long):
                for failure in wave.failures[:3]:
                    print(f"    failed: {failure}")
    return out


def run(report: Report, quick: bool) -> ChunkCost:
    rounds, direct = (2, 1) if quick else (6, 2)
    print(
        f"\n== {SECTION}: CPU a chunk, {CLIENTS} streams of {SHORT} and {LONG} chunks, one "
        f"every {COST_SETUP.label}, in front of a Starlette upstream =="
    )
    with ExitStack() as stack:
        up_port, gw_port = free_port(), free_port()
        upstream, gateway = f"http://127.0.0.1:{up_port}", f"http://127.0.0.1:{gw_port}"
        up_cmd = upstream_cmd(up_port, "--interval", str(COST_SETUP.interval), "--starlette")
        gw_cmd = gateway_cmd(upstream, gw_port)
        up_log = stack.enter_context(tempfile.TemporaryFile())
        gw_log = stack.enter_context(tempfile.TemporaryFile())
        up = stack.enter_context(server(up_cmd, f"{upstream}/health", up_log))
        gw = stack.enter_context(server(gw_cmd, f"{gateway}/health", gw_log))
        bench = Bench(Phase(COST_SETUP), gateway, upstream, {"gateway": gw.pid, "upstream": up.pid})
        result = asyncio.run(_drive(bench, rounds, direct))
    _record(report, result)
    return result


def _record(report: Report, result: ChunkCost) -> None:
    if result.failures:
        report.notes.append(
            f"CPU a chunk: {len(result.failures)} streams failed; the first: {result.failures[0]}"
        )
    rounds = result.gateway
    path = f"{CLIENTS} streams, a chunk every {COST_SETUP.label}: CPU a delta chunk"
    samples = {
        "gateway": [r.per_chunk("gateway") for r in rounds],
        UPSTREAM: [r.per_chunk("upstream") for r in rounds],
        f"{UPSTREAM}, read directly": [r.per_chunk("upstream") for r in result.direct],
    }
    report.add(SECTION, path, samples, "µs", ours=("gateway",))
    streams = {
        "gateway": [r.per_stream("gateway") for r in rounds],
        UPSTREAM: [r.per_stream("upstream") for r in rounds],
    }
    report.add(
        SECTION, f"{CLIENTS} streams: CPU a stream, its chunks aside", streams, "µs", ("gateway",)
    )
    each = result.ratios()
    ratio = statistics.median(each)
    report.targets.append(
        Target(
            SECTION,
            path,
            "gateway CPU / upstream CPU, same chunks",
            ratio,
            "<=",
            COST_BOUND,
            f"{len(each)} rounds, {min(each):.2f}-{max(each):.2f}",
        )
    )
    whole = [r.whole() for r in rounds]
    print(
        f"  gateway CPU / upstream CPU a chunk: {ratio:.2f}× "
        f"(rounds {', '.join(f'{r:.2f}' for r in each)}); a stream of {LONG} chunks, "
        f"nothing taken out: {statistics.median(whole):.2f}× "
        f"({min(whole):.2f}-{max(whole):.2f})"
    )


if __name__ == "__main__":  # python -m benchmarks.bench_chunk_cost [--quick]: this one alone
    import sys

    from . import report as report_module

    r = Report()
    run(r, "--quick" in sys.argv)
    print("\n" + report_module.table(r))
