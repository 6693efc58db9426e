"""Peak memory of each converter over a 1,000,000-delta text stream, made as it is read.

Each probe (``benchmarks.cli memory-*``) runs in its own process and reports its peak
resident set.  The same text in a quarter of the deltas (each four times longer) must
peak at the same size: the peak grows with the accumulated text only, not with the
number of events.
"""

from __future__ import annotations

from .harness import Report, Target, peak_rss, python

SECTION = "Memory"
DELTAS = 1_000_000
MIB = 1024 * 1024


def run(report: Report) -> None:
    print(f"\n== {SECTION}: {DELTAS:,} deltas ==")
    for name, probe in (
        ("Chat → Responses", "memory-from-chat"),
        ("Responses → Chat", "memory-to-chat"),
    ):
        peaks = {}
        for deltas, width in ((DELTAS, 1), (DELTAS // 4, 4)):
            peak, printed = peak_rss(
                [python(), "-m", "benchmarks.cli", probe, str(deltas), str(width)]
            )
            peaks[deltas] = (peak, int(printed.split()[1]))
        (many, text), (few, _) = peaks[DELTAS], peaks[DELTAS // 4]
        detail = (
            f"{DELTAS // 4:,} deltas with the same text: {few / MIB:.1f} MiB; "
            f"text {text / 1e6:.1f} M characters"
        )
        report.memory.append((SECTION, f"{name}, {DELTAS:,} deltas", many / MIB, detail))
        report.targets.append(
            Target(
                SECTION,
                f"{name}, {DELTAS:,} vs {DELTAS // 4:,} deltas, same text",
                "peak (more events) / peak (fewer events)",
                many / few,
                "<=",
                1.15,
                "grows with the text only",
            )
        )
        print(f"  {name}: {many / MIB:.1f} MiB ({detail})")
