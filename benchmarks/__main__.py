"""``make bench``: every benchmark, one table, docs/benchmarks.md and its plot.

``python -m benchmarks [--quick]``: ``--quick`` runs fewer rounds (a smoke run; the doc
is not written).
"""

from __future__ import annotations

import sys
import time

from . import (
    bench_chunk_cost,
    bench_emit,
    bench_first_event,
    bench_from_chat,
    bench_gateway,
    bench_generate,
    bench_memory,
    bench_peer,
    bench_request,
    bench_soak,
    bench_to_chat,
    bench_validate,
    bench_workers,
    report,
)
from .harness import Machine, Report


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    rounds, cli_rounds = (2, 1) if quick else (9, 5)
    start, machine = time.time(), Machine()
    machine.before()
    print(f"python {sys.version.split()[0]}; load {machine.load_start}")
    r = Report()
    bench_emit.run(r, 3 if quick else 11)
    bench_from_chat.run(r, rounds, cli_rounds)
    bench_to_chat.run(r, rounds, cli_rounds)
    bench_validate.run(r, 1 if quick else 3)
    bench_request.run(r, rounds)
    bench_memory.run(r)
    bench_generate.run(r, 1 if quick else 3)
    gateway = bench_gateway.run(r, quick)
    cost = bench_chunk_cost.run(r, quick)
    bench_first_event.run(r, quick)
    peer = bench_peer.run(r, quick)
    workers = bench_workers.run(r, quick)
    bench_soak.run(r, quick)
    elapsed = time.time() - start
    machine.after()
    print("\n" + report.table(r))
    print(f"\n{machine.summary()}")
    if not quick:
        report.write(r, machine, elapsed, gateway, workers, cost, peer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
