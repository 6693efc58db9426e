"""Timing and bookkeeping shared by every benchmark module.

``measure`` runs candidates round-robin: every round runs each candidate once, in an
order that rotates from round to round, so a slow phase of a busy machine falls on all of
them alike; the garbage collector is off while a candidate runs and collects between
runs.  Each module adds rows (medians) and targets (ratios of medians) to one ``Report``,
which prints the table and writes docs/benchmarks.md.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    """One candidate's median on one path."""

    section: str
    path: str
    candidate: str
    median: float
    unit: str
    samples: list[float]
    ours: bool = False

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.samples), max(self.samples)


@dataclass
class Target:
    """A ratio of two medians of one path, and the bound the issue sets for it."""

    section: str
    path: str
    label: str  # e.g. "ours / floor (json)"
    ratio: float
    op: str  # "<=" or ">="
    bound: float
    note: str = ""
    unit: str = "×"  # what ``ratio`` and ``bound`` count, when not a ratio (e.g. "ms")

    @property
    def met(self) -> bool:
        return self.ratio <= self.bound if self.op == "<=" else self.ratio >= self.bound


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what a module has to say, one line each
    checks: list[str] = field(default_factory=list)  # the equivalence checks that passed
    memory: list[tuple[str, str, float, str]] = field(default_factory=list)  # MiB peaks
    started: float = field(default_factory=time.time)

    def add(
        self,
        section: str,
        path: str,
        samples: dict[str, list[float]],
        unit: str,
        ours: Sequence[str] = ("ours",),
    ) -> dict[str, float]:
        """Rows for each candidate's samples; returns the medians."""
        med = {name: statistics.median(ts) for name, ts in samples.items()}
        for name, ts in samples.items():
            self.rows.append(Row(section, path, name, med[name], unit, ts, name in ours))
        return med

    def target(
        self,
        section: str,
        path: str,
        med: dict[str, float],
        num: str,
        den: str,
        op: str,
        bound: float,
        note: str = "",
    ) -> Target:
        t = Target(section, path, f"{num} / {den}", med[num] / med[den], op, bound, note)
        self.targets.append(t)
        return t

    def check(self, line: str) -> None:
        self.checks.append(line)
        print(f"  check: {line}")


def measure(
    cands: dict[str, Callable[[], object]],
    units: dict[str, int] | int,
    rounds: int,
    *,
    scale: float = 1e6,
    warm: bool = True,
) -> dict[str, list[float]]:
    """Per-unit time of each candidate (µs by default), one sample a round.

    ``units`` is how many input units (chunks, events) one call handles, per candidate or
    for all.  A warm-up call of each comes first.
    """
    names = list(cands)
    for name in names if warm else ():
        cands[name]()
    out: dict[str, list[float]] = {name: [] for name in names}
    was = gc.isenabled()
    try:
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                gc.collect()
                gc.disable()
                t0 = time.perf_counter()
                cands[name]()
                dt = time.perf_counter() - t0
                gc.enable()
                n = units if isinstance(units, int) else units[name]
                out[name].append(dt / n * scale)
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()
    return out


def run_process(cmd: list[str], stdin: Path, env: dict[str, str] | None = None) -> float:
    """Wall time of ``cmd`` reading ``stdin`` and writing to /dev/null."""
    with stdin.open("rb") as f:
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, stdin=f, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
        dt = time.perf_counter() - t0
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}")
    return dt


def output_of(cmd: list[str], stdin: Path) -> bytes:
    with stdin.open("rb") as f:
        proc = subprocess.run(cmd, stdin=f, capture_output=True, cwd=ROOT)
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]!r}")
    return proc.stdout


def peak_rss(cmd: list[str], stdin: Path | None = None) -> tuple[int, bytes]:
    """The peak resident set (bytes) of ``python -m MODULE ...`` (``cmd``) and its output.

    The process reports its own high-water mark (see ``benchmarks.peak``).
    """
    assert cmd[1] == "-m", cmd
    with tempfile.NamedTemporaryFile(prefix="bench-peak-", delete=False) as tmp:
        where = Path(tmp.name)
    try:
        wrapped = [cmd[0], "-m", "benchmarks.peak", str(where), *cmd[1:]]
        with stdin.open("rb") if stdin else open(os.devnull, "rb") as f:
            proc = subprocess.run(wrapped, stdin=f, stdout=subprocess.PIPE, cwd=ROOT)
        if proc.returncode not in (0, 1, 3):
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}")
        return int(where.read_text()), proc.stdout
    finally:
        where.unlink(missing_ok=True)


def cli_per_unit(
    cmds: dict[str, list[str]],
    small: Path,
    large: Path,
    units: int,
    rounds: int,
) -> dict[str, list[float]]:
    """µs per input unit through a command, startup cancelled.

    Each round times every command on the small and the large input (round-robin, order
    rotating); a sample is (large - small) / ``units``, the units the large input has more.
    """
    names = list(cmds)
    out: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm the page cache and the bytecode caches
        run_process(cmds[name], small)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            t_small = run_process(cmds[name], small)
            t_large = run_process(cmds[name], large)
            out[name].append((t_large - t_small) / units * 1e6)
    return out


def python() -> str:
    return sys.executable


def load() -> str:
    """The load averages and the processor count, for the record."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min) on {os.cpu_count()} cores"
