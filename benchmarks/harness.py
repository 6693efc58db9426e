"""Timing and bookkeeping shared by every benchmark module.

``measure`` runs candidates round-robin: every round runs each candidate once, in an
order that rotates from round to round, so a slow phase of a busy machine falls on all of
them alike; the garbage collector is off while a candidate runs and collects between
runs.  ``steady`` takes a measurement again while a candidate's rounds spread more than
``SPREAD_BOUND`` (their largest over their smallest).  Each module adds rows (medians)
and targets (ratios of medians) to one ``Report``, which prints the table and writes
docs/benchmarks.md; a row whose rounds still spread that much is marked unsteady there.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPREAD_BOUND = 1.5  # a median is published as steady when max / min of its rounds is under this
TRIES = 3  # measurements of one path, at most, to get there
BUSY = 0.25  # share of the machine's CPU others may use before a run is flagged busy
BEST_OF = 3  # process timings a CLI sample keeps the shortest of


def spread_of(samples: Sequence[float]) -> float:
    """The largest sample over the smallest; infinite when one is not positive (a
    difference of timings that noise outweighed)."""
    low = min(samples)
    return max(samples) / low if low > 0 else float("inf")


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
    tries: int = 1  # measurements made of the path (see ``steady``)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.samples), max(self.samples)

    @property
    def spread_ratio(self) -> float:
        return spread_of(self.samples)

    @property
    def steady(self) -> bool:
        return self.spread_ratio < SPREAD_BOUND


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
    steady: bool = True  # every median it is made of is steady

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
        tries: int = 1,
    ) -> dict[str, float]:
        """Rows for each candidate's samples (taken in ``tries`` measurements); returns
        the medians."""
        med = {name: statistics.median(ts) for name, ts in samples.items()}
        for name, ts in samples.items():
            row = Row(section, path, name, med[name], unit, ts, name in ours, tries)
            self.rows.append(row)
            if not row.steady:
                self.notes.append(unsteady_note(row))
        return med

    def steady(self, section: str, path: str, names: Sequence[str]) -> bool:
        """Whether the rows of ``names`` on ``path`` are all steady."""
        rows = [r for r in self.rows if (r.section, r.path) == (section, path)]
        return all(r.steady for r in rows if r.candidate in names)

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
        t.steady = self.steady(section, path, (num, den))
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


def unsteady_note(row: Row) -> str:
    """Why a row's median is not steady: how far its rounds spread, after how many tries,
    and whether one round alone made the spread."""
    low, high = row.spread
    n = len(row.samples)
    if low <= 0:
        how = "a round measured no time at all (the noise outweighed the difference timed)"
    else:
        how = f"its {n} rounds spread {row.spread_ratio:.2f}× ({fmt(low)} to {fmt(high)})"
    tries = f", in each of {row.tries} measurements" if row.tries > 1 else ""
    why = ""
    ordered = sorted(row.samples)
    for odd, rest in ((ordered[-1], ordered[:-1]), (ordered[0], ordered[1:])):
        if n > 2 and spread_of(rest) < SPREAD_BOUND:
            why = (
                f": one round stood apart ({fmt(odd)} {row.unit}, the median "
                f"{fmt(row.median)}); the other {n - 1} spread {spread_of(rest):.2f}×"
            )
            break
    return (
        f"Unsteady: {row.section}, {row.path}, {row.candidate}: {how}{tries}{why}.  Its "
        "median is a weaker figure than a steady one."
    )


def fmt(value: float) -> str:
    """A figure in three significant digits, or whole with thousands separated."""
    return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"


def steady(
    take: Callable[..., dict[str, list[float]]], *args: Any, tries: int = TRIES, **kw: Any
) -> tuple[dict[str, list[float]], int]:
    """The samples of ``take(*args, **kw)`` (``measure``, ``cli_per_unit``), taken again
    (``tries`` times at most) while a candidate's spread is over ``SPREAD_BOUND``; the
    steadiest measurement, and how many were made."""
    best: dict[str, list[float]] = {}
    best_worst = float("inf")
    for n in range(1, tries + 1):
        got = take(*args, **kw)
        worst = max(spread_of(ts) for ts in got.values())
        if not best or worst < best_worst:
            best, best_worst = got, worst
        if worst < SPREAD_BOUND:
            return got, n
        print(f"  spread {worst:.2f}× over the bound {SPREAD_BOUND:g}: measuring again")
    return best, tries


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
    large: Path | dict[str, Path],
    units: int | dict[str, int],
    rounds: int,
) -> dict[str, list[float]]:
    """µs per input unit through a command, startup cancelled.

    Each round times every command on the small and the large input (round-robin, order
    rotating), each the shortest of ``BEST_OF`` runs (what a process spends starting
    varies, and only ever adds); a sample is (large - small) / ``units``, the units the
    large input has more.  ``large`` and ``units`` may be given per command: a fast one
    needs a larger input for the difference to outweigh the noise of a process start.
    """
    names = list(cmds)
    out: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm the page cache and the bytecode caches
        run_process(cmds[name], small)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            big = large if isinstance(large, Path) else large[name]
            extra = units if isinstance(units, int) else units[name]
            t_small = min(run_process(cmds[name], small) for _ in range(BEST_OF))
            t_large = min(run_process(cmds[name], big) for _ in range(BEST_OF))
            out[name].append((t_large - t_small) / extra * 1e6)
    return out


def python() -> str:
    return sys.executable


def load() -> str:
    """The load averages and the processor count, for the record."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min) on {os.cpu_count()} cores"


def _cpu_times() -> tuple[int, int]:
    """Busy and total jiffies of all processors since boot (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle, iowait
    total = sum(fields[:8])  # guest time is counted in user already
    return total - idle, total


def busy_share(seconds: float = 2.0) -> float | None:
    """The share of the machine's CPU in use over ``seconds`` (0 to 1), by whatever runs;
    None where ``/proc/stat`` cannot be read."""
    try:
        busy0, total0 = _cpu_times()
        time.sleep(seconds)
        busy1, total1 = _cpu_times()
    except (OSError, ValueError, IndexError):
        return None
    return (busy1 - busy0) / max(total1 - total0, 1)


@dataclass
class Machine:
    """The machine's state around a run: its load averages and the share of its CPU
    other work used, measured while no benchmark ran (before the first and after the
    last)."""

    load_start: str = ""
    load_end: str = ""
    busy_start: float | None = None
    busy_end: float | None = None

    def before(self) -> None:
        self.load_start, self.busy_start = load(), busy_share()

    def after(self) -> None:
        self.load_end, self.busy_end = load(), busy_share()

    @property
    def busy(self) -> bool:
        return any(b is not None and b > BUSY for b in (self.busy_start, self.busy_end))

    def summary(self) -> str:
        def share(value: float | None) -> str:
            return "unknown" if value is None else f"{value:.0%}"

        text = (
            f"CPU in use by other work: {share(self.busy_start)} before the run, "
            f"{share(self.busy_end)} after it"
        )
        if self.busy:
            return f"{text}: **a busy machine** (over {BUSY:.0%}); its figures are noisier"
        return f"{text}: a quiet machine (under {BUSY:.0%} each time)"
