"""The table ``make bench`` prints, and docs/benchmarks.md with its plot."""

from __future__ import annotations

import os
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

from .harness import ROOT, Report, load

DOC = ROOT / "docs" / "benchmarks.md"
PLOT = ROOT / "docs" / "benchmarks.png"
NOTES = Path(__file__).resolve().parent / "notes.md"


def _fmt(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def _ratio(value: float) -> str:
    return f"{value:.2f}×" if value < 100 else f"{value:,.0f}×"


def table(report: Report) -> str:
    """One table: every path's medians, each candidate's ratio to ours."""
    lines = [
        f"{'section':<20} {'path':<36} {'candidate':<16} {'median':>10} {'unit':<9} {'÷ ours':>8}",
    ]
    ours = {(r.section, r.path): r.median for r in report.rows if r.ours}
    for r in report.rows:
        base = ours.get((r.section, r.path))
        rel = _ratio(r.median / base) if base else ""
        lines.append(
            f"{r.section:<20} {r.path:<36} {r.candidate:<16} {_fmt(r.median):>10} {r.unit:<9} {rel:>8}"
        )
    lines.append("")
    lines.append(f"{'section':<20} {'path':<36} {'ratio':<42} {'got':>9} {'target':>9}  verdict")
    for t in report.targets:
        bound = "—" if t.bound == float("inf") else f"{t.op} {t.bound:g}"
        verdict = t.note or "" if t.bound == float("inf") else ("met" if t.met else "MISSED")
        got = f"{t.ratio:.2f} s" if t.label == "seconds" else _ratio(t.ratio)
        lines.append(f"{t.section:<20} {t.path:<36} {t.label:<42} {got:>9} {bound:>9}  {verdict}")
    for section, path, mib, detail in report.memory:
        lines.append(f"{section:<20} {path:<36} peak {mib:.1f} MiB ({detail})")
    return "\n".join(lines)


def _machine() -> list[str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return [
        f"- processor: {cpu}, {os.cpu_count()} cores",
        f"- system: {platform.system()} {platform.release()}",
        f"- Python {sys.version.split()[0]} ({platform.python_implementation()})",
    ]


def plot(report: Report) -> None:
    """Our cost beside each baseline, per path (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    units: dict[tuple[str, str], str] = {}
    for r in report.rows:
        if r.section in ("make generate",):
            continue
        groups[(r.section, r.path)][r.candidate] = r.median
        units[(r.section, r.path)] = r.unit
    names = list(dict.fromkeys(r.candidate for r in report.rows if r.section != "make generate"))
    colors = dict(zip(names, plt.get_cmap("tab10").colors, strict=False))
    keys = list(groups)
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(keys) * 1.6 + 1.5))
    height = 0.8 / max(len(names), 1)
    for i, key in enumerate(keys):
        for j, name in enumerate(names):
            if name in groups[key]:
                y = i + j * height
                ax.barh(y, groups[key][name], height, color=colors[name], label=name)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(keys))])
    ax.set_yticklabels([f"{s}: {p} ({units[(s, p)]})" for s, p in keys], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("median cost, log scale (lower is faster)")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=False))
    ax.legend(unique.values(), unique.keys(), fontsize=8, loc="lower right")
    ax.set_title("responses-stream: our cost beside each baseline, per path")
    fig.tight_layout()
    PLOT.parent.mkdir(exist_ok=True)
    fig.savefig(PLOT, dpi=110, metadata={"Software": None})
    plt.close(fig)


def markdown(report: Report, load_start: str, load_end: str, elapsed: float) -> str:
    out = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`python -m benchmarks`); the figures below are one run's.",
        "Every comparison ran in one process (or one run of processes), round-robin, against",
        "baselines checked to write what ours writes; medians, and ratios of medians.",
        "",
        "## Machine",
        "",
        *_machine(),
        f"- load average at the start: {load_start}; at the end: {load_end}",
        f"- the run took {elapsed / 60:.1f} minutes, {time.strftime('%Y-%m-%d', time.gmtime())}",
        "",
        "The machine had other work running (its load is above), so the absolute figures",
        "are pessimistic; the ratios are of candidates that ran in the same rounds.",
        "",
        "## Plot",
        "",
        "![our cost beside each baseline, per path](benchmarks.png)",
        "",
        "## Medians",
        "",
        "| section | path | candidate | median | ÷ ours |",
        "| --- | --- | --- | ---: | ---: |",
    ]
    ours = {(r.section, r.path): r.median for r in report.rows if r.ours}
    for r in report.rows:
        base = ours.get((r.section, r.path))
        rel = _ratio(r.median / base) if base else ""
        lo, hi = r.spread
        out.append(
            f"| {r.section} | {r.path} | {r.candidate} | {_fmt(r.median)} {r.unit} "
            f"({_fmt(lo)}–{_fmt(hi)}) | {rel} |"
        )
    out += ["", "## Targets", "", "| section | path | ratio | got | target | verdict |"]
    out.append("| --- | --- | --- | ---: | ---: | --- |")
    for t in report.targets:
        if t.bound == float("inf"):
            bound, verdict = "—", t.note
        else:
            bound, verdict = f"{t.op} {t.bound:g}", "met" if t.met else "**missed**"
        unit = " s" if t.label == "seconds" else "×"
        got = f"{t.ratio:.2f}{unit}" if t.ratio < 100 else f"{t.ratio:,.0f}{unit}"
        out.append(f"| {t.section} | {t.path} | {t.label} | {got} | {bound} | {verdict} |")
    if report.memory:
        out += [
            "",
            "## Memory",
            "",
            "| section | stream | peak | alongside |",
            "| --- | --- | ---: | --- |",
        ]
        for section, path, mib, detail in report.memory:
            out.append(f"| {section} | {path} | {mib:.1f} MiB | {detail} |")
    if report.notes:
        out += ["", *[f"- {n}" for n in report.notes]]
    out += ["", "## Checks made before timing", ""]
    out += [f"- {c}" for c in report.checks]
    if NOTES.exists():
        out += ["", NOTES.read_text().strip()]
    return "\n".join(out) + "\n"


def write(report: Report, load_start: str, elapsed: float) -> None:
    plot(report)
    DOC.write_text(markdown(report, load_start, load(), elapsed))
    print(f"\nwrote {DOC.relative_to(ROOT)} and {PLOT.relative_to(ROOT)}")
