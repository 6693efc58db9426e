"""The table ``make bench`` prints, and docs/benchmarks.md with its plot."""

from __future__ import annotations

import os
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .gateway_load import PEER_SECTION
from .harness import ROOT, SPREAD_BOUND, Machine, Report, Row, Target, fmt

T = TypeVar("T")

if TYPE_CHECKING:
    from collections.abc import Callable

    from .gateway_load import ChunkCost, GatewayLoad, PeerPhase, Phase, Wave, WorkersLoad

DOC = ROOT / "docs" / "benchmarks.md"
PLOT = ROOT / "docs" / "benchmarks.png"
NOTES = Path(__file__).resolve().parent / "notes.md"
# Not costs beside baselines: seconds of a whole run, and the gateway's rates and latencies.
NOT_PLOTTED = ("make generate", "Gateway load", "Gateway workers")


def _ratio(value: float) -> str:
    return f"{value:.2f}×" if value < 100 else f"{value:,.0f}×"


def figure(row: Row) -> str:
    """A row's median with its rounds' range and spread; never a figure at or below zero
    (a difference of timings that noise outweighed)."""
    low, high = row.spread
    if row.median <= 0:
        return f"below the noise ({row.unit})"
    if low <= 0:
        return f"{fmt(row.median)} {row.unit} (unsteady: a round at or below zero)"
    mark = "" if row.steady else ", unsteady"
    return f"{fmt(row.median)} {row.unit} ({fmt(low)}–{fmt(high)}, {row.spread_ratio:.2f}×{mark})"


def _target_figure(t: Target, unit: str) -> str:
    """A target's figure with its unit; one at or below zero (a difference that noise
    outweighed) is not printed as a figure."""
    if t.ratio <= 0:
        return "≤ 0 (noise)"
    return f"{t.ratio:.2f}{unit}" if t.ratio < 100 else f"{t.ratio:,.0f}{unit}"


def verdict(t: Target) -> str:
    """met or missed, and whether the medians it compares were steady."""
    if t.bound == float("inf"):
        return t.note
    said = "met" if t.met else "missed"
    return said if t.steady else f"{said} (from unsteady medians)"


def table(report: Report) -> str:
    """One table: every path's medians, each candidate's ratio to ours."""
    lines = [
        f"{'section':<20} {'path':<36} {'candidate':<16} {'median':>10} {'unit':<9} {'÷ ours':>8}"
        f" {'spread':>8}",
    ]
    ours = {(r.section, r.path): r.median for r in report.rows if r.ours}
    for r in report.rows:
        base = ours.get((r.section, r.path))
        rel = _ratio(r.median / base) if base and base > 0 and r.median > 0 else ""
        median = fmt(r.median) if r.median > 0 else "noise"
        spread = f"{r.spread_ratio:.2f}×" if r.spread[0] > 0 else "—"
        flag = "" if r.steady else "  unsteady"
        lines.append(
            f"{r.section:<20} {r.path:<36} {r.candidate:<16} {median:>10} {r.unit:<9} {rel:>8}"
            f" {spread:>8}{flag}"
        )
    lines.append("")
    lines.append(f"{'section':<20} {'path':<36} {'ratio':<42} {'got':>9} {'target':>9}  verdict")
    for t in report.targets:
        bound = "—" if t.bound == float("inf") else f"{t.op} {t.bound:g}"
        said = verdict(t)
        said = said.replace("missed", "MISSED") if t.bound != float("inf") else said
        if t.label == "seconds" or t.unit != "×":
            got = _target_figure(t, f" {'s' if t.label == 'seconds' else t.unit}")
        else:
            got = _ratio(t.ratio)
        lines.append(f"{t.section:<20} {t.path:<36} {t.label:<42} {got:>9} {bound:>9}  {said}")
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


def colours(names: Sequence[str], palette: Sequence[T]) -> dict[str, T]:
    """A colour for each candidate, the palette's in turn (again from its start when there
    are more candidates than colours)."""
    return {name: palette[n % len(palette)] for n, name in enumerate(names)}


def plot(report: Report) -> None:
    """Our cost beside each baseline, per path (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    units: dict[tuple[str, str], str] = {}

    def plotted(r: Row) -> bool:
        if r.section == PEER_SECTION:
            return not r.unit.endswith("/s") and r.median > 0
        return r.section not in NOT_PLOTTED and r.median > 0

    for r in report.rows:
        if not plotted(r):
            continue
        groups[(r.section, r.path)][r.candidate] = r.median
        units[(r.section, r.path)] = r.unit
    names = list(dict.fromkeys(r.candidate for r in report.rows if plotted(r)))
    colors = colours(names, plt.get_cmap("tab20").colors)
    keys = list(groups)
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(keys) * 1.6 + 1.5))
    for i, key in enumerate(keys):
        present = [name for name in names if name in groups[key]]
        for name, (y, height) in zip(present, bar_slots(i, len(present)), strict=True):
            ax.barh(y, groups[key][name], height, color=colors[name], label=name)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([f"{s}: {p} ({units[(s, p)]})" for s, p in keys], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("median cost, log scale (lower is faster)")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=False))
    # beside the bars, never over them
    ax.legend(
        unique.values(), unique.keys(), fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1)
    )
    ax.set_title("responses-stream: our cost beside each baseline, per path")
    fig.tight_layout()
    PLOT.parent.mkdir(exist_ok=True)
    fig.savefig(PLOT, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def bar_slots(row: int, count: int, band: float = 0.8) -> list[tuple[float, float]]:
    """Where the ``count`` bars of plot row ``row`` go (centre, height): the row's band
    shared among the candidates it has, not among every candidate of the plot, so a
    path with two bars gets two wide ones centred on its label."""
    if count == 0:
        return []
    height = band / count
    return [(row - band / 2 + height * (k + 0.5), height) for k in range(count)]


def _ms(value: float) -> str:
    return f"{value:,.0f} ms" if abs(value) >= 10 else f"{value:.1f} ms"


def _phase_table(phase: Phase) -> list[str]:
    """One phase's medians over its waves, gateway beside the upstream read directly."""

    def q(p: float) -> Callable[[Wave], float]:
        return lambda w: w.quantile(p)

    def both(figure: Callable[[Wave], float], fmt: Callable[[float], str]) -> list[str]:
        gw, direct = phase.median("gateway", figure), phase.median("direct", figure)
        return [fmt(gw), fmt(direct)]

    def rate(value: float) -> str:
        return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"

    def cpu(process: str) -> list[str]:
        kinds = ("gateway",) if process == "gateway" else ("gateway", "direct")
        out = [f"{phase.cpu_per_delta(kind, process):.0f} µs" for kind in kinds]
        return out if len(out) == 2 else [*out, "—"]

    rows = [
        ("wave (200 streams), wall time", both(lambda w: w.seconds, lambda v: f"{v:.2f} s")),
        ("streams a second", both(lambda w: w.streams_per_s, rate)),
        ("events a second (Responses events / chat chunks)", both(lambda w: w.events_per_s, rate)),
        ("delta latency p50, send → arrival", both(q(0.5), _ms)),
        ("delta latency p99, send → arrival", both(q(0.99), _ms)),
        ("CPU a delta chunk: gateway process", cpu("gateway")),
        ("CPU a delta chunk: upstream process", cpu("upstream")),
        ("CPU a delta chunk: the clients' process", cpu("client")),
    ]
    out = [
        f"| {phase.setup.label} between chunks | through the gateway | upstream direct |",
        "| --- | ---: | ---: |",
    ]
    out += [f"| {name} | {gw} | {direct} |" for name, (gw, direct) in rows]
    out += [
        "",
        f"Added by the gateway: **{_ms(phase.added(0.5))} at p50, {_ms(phase.added(0.99))} "
        f"at p99** ({len(phase.of('gateway'))} gateway and {len(phase.of('direct'))} direct "
        "waves; medians over the waves of each wave's quantile over all its deltas).",
    ]
    return out


def gateway_section(g: GatewayLoad, cores: int | None) -> list[str]:
    """The "Gateway load" section of docs/benchmarks.md."""
    from .gateway_load import RSS_BOUND

    fast, paced = g.fast, g.paced
    last = len(fast.rss_after)
    flat = g.rss_ratio <= RSS_BOUND
    out = [
        "",
        "## Gateway load",
        "",
        f"`python -m responses_stream serve --store memory:` in a process of its own, in front "
        f"of a fake Chat Completions upstream in another (`benchmarks.fake_chat_upstream`, "
        f"uvicorn), both on this machine ({cores} cores, shared with the clients' process and "
        f"whatever else ran: see the load average above).  Each wave is {g.clients} concurrent "
        "streaming clients (httpx, a connection each) posting "
        '`{"model": "m", "input": "hi N", "stream": true, "store": false}` and reading the '
        "SSE to its end; every stream must end with `response.completed` and carry one delta "
        "event per delta chunk sent.  A direct wave sends the same chat request to the "
        "upstream itself.  The upstream streams a chunk with the role, then the deltas (the "
        "first quarter `reasoning_content`, the rest `content`, a few words each), a "
        "`finish_reason` chunk, a usage chunk and `[DONE]`, pausing before each chunk; each "
        "chunk carries its send time, so latency is each delta's arrival at the client "
        "minus its send (the k-th delta event through the gateway matched to the k-th delta "
        "chunk of its stream).  `store` is false: the `memory:` store keeps every stored "
        "response by design, which would measure the store.",
        "",
        f"**{fast.setup.label} between chunks, {fast.setup.chunks} deltas a stream** "
        f"({fast.setup.offered:,.0f} chunks a second offered, more than the three processes "
        "get through on this machine: waves last longer than the "
        f"{fast.setup.chunks * fast.setup.interval:g} s of pauses, chunks queue in socket "
        "buffers and latency is mostly that queue):",
        "",
        *_phase_table(fast),
        "",
        f"**{paced.setup.label} between chunks, {paced.setup.chunks} deltas a stream** "
        f"({paced.setup.offered:,.0f} chunks a second offered, a tenth of the above; when "
        "every chunk comes alone, each costs a read and a write of its own, so the CPU a "
        "chunk is higher than above, where reads carry several):",
        "",
        *_phase_table(paced),
        "",
        f"**Memory** (the gateway's VmRSS, the {fast.setup.label} phase): idle "
        f"{fast.rss_idle:.1f} MiB; after each of its {last} gateway waves "
        + ", ".join(f"{v:.1f}" for v in fast.rss_after)
        + f" MiB; the largest of {fast.samples} samples (every 0.5 s) {fast.rss_peak:.1f} MiB.  "
        f"After wave {last} / after wave 1: {g.rss_ratio:.2f}× (target ≤ {RSS_BOUND:g}): "
        + (
            "**flat**: it did not grow with the streams served beyond the bound."
            if flat
            else "**not flat**: it grew with the streams served beyond the bound."
        ),
    ]
    failures = g.failures
    failed = f"{len(failures)} of {g.started:,} streams"
    if failures:
        out += ["", f"**Failures**: {failed}; the first: `{failures[0]}`."]
    else:
        out += ["", f"**Failures**: none of {g.started:,} streams."]
    logged = fast.logged + paced.logged
    if logged:
        out += ["", f"The gateway logged {len(logged)} lines; the first:", ""]
        out += [f"    {line}" for line in logged[:5]]
    return out


def cost_section(c: ChunkCost) -> list[str]:
    """The "CPU a chunk" part of the gateway's section of docs/benchmarks.md."""
    import statistics

    from .gateway_load import CLIENTS, COST_BOUND, COST_SETUP, LONG, SHORT

    def spread(values: list[float], fmt: str = "{:.0f}") -> str:
        mid = fmt.format(statistics.median(values))
        return f"{mid} ({fmt.format(min(values))}-{fmt.format(max(values))})"

    rounds = c.gateway
    ratios = c.ratios()
    met = statistics.median(ratios) <= COST_BOUND
    return [
        "",
        "## Gateway CPU a chunk",
        "",
        f"The gateway in front of a Starlette upstream (`fake_chat_upstream --starlette`: a "
        "`StreamingResponse` on uvicorn, each chunk encoded with `json.dumps` as it is sent, "
        f"the stack of most Python inference servers), {CLIENTS} concurrent streams, a chunk "
        f"every {COST_SETUP.label} so that each comes alone.  Each round a wave of {SHORT} deltas a "
        f"stream and one of {LONG}; each process's CPU (`/proc`) over the {LONG - SHORT} "
        "deltas a stream more is its cost a chunk, what a stream costs once cancelled out.",
        "",
        "| | gateway | upstream |",
        "| --- | ---: | ---: |",
        f"| CPU a delta chunk, µs | {spread([r.per_chunk('gateway') for r in rounds])} | "
        f"{spread([r.per_chunk('upstream') for r in rounds])} |",
        f"| CPU a stream besides its chunks, µs | "
        f"{spread([r.per_stream('gateway') for r in rounds])} | "
        f"{spread([r.per_stream('upstream') for r in rounds])} |",
        "",
        f"Gateway / upstream a chunk: **{spread(ratios, '{:.2f}')}×** over {len(ratios)} "
        f"rounds (target ≤ {COST_BOUND:g}: {'met' if met else '**missed**'}); over a whole stream "
        f"of {LONG} deltas, nothing taken out: {spread([r.whole() for r in rounds], '{:.2f}')}×.  "
        "The upstream read directly by the clients spent "
        f"{spread([r.per_chunk('upstream') for r in c.direct])} µs a chunk.",
    ]


def peer_section(phases: list[PeerPhase]) -> list[str]:
    """The "Gateway beside LiteLLM" section of docs/benchmarks.md."""
    import statistics

    from .gateway_load import FIGURES, PEER_CHUNKS, PEER_CLIENTS

    out = [
        "",
        f"## {PEER_SECTION}",
        "",
        "`serve` and LiteLLM's proxy (its Responses bridge over a chat model, "
        "`use_chat_completions_api`, no database, access log off as ours) in front of one "
        f"fake upstream, each in a process of its own; waves of {PEER_CLIENTS} concurrent "
        f"streams of {PEER_CHUNKS} deltas through each and straight to the upstream, in "
        "turn (the order rotating each round).  Every stream must end with "
        "`response.completed` and carry one delta event per delta chunk sent.  Medians "
        "over the waves, with the range of the waves:",
    ]
    for phase in phases:
        setup = phase.setup
        pace = "every chunk at once" if setup.interval == 0 else f"a chunk every {setup.label}"
        out += [
            "",
            f"**{setup.name}** ({pace}):",
            "",
            "| | gateway | LiteLLM | gateway ahead by |",
            "| --- | ---: | ---: | ---: |",
        ]
        for name, (unit, _) in FIGURES.items():
            ours, theirs = phase.figure("gateway", name), phase.figure("litellm", name)
            mid, peer_mid = statistics.median(ours), statistics.median(theirs)
            # a rate is better higher, a cost lower: the ratio is the gateway's lead
            lead = mid / peer_mid if unit.endswith("/s") else peer_mid / mid
            out.append(
                f"| {name}, {unit} | {fmt(mid)} ({fmt(min(ours))}–{fmt(max(ours))}) | "
                f"{fmt(peer_mid)} ({fmt(min(theirs))}–{fmt(max(theirs))}) | "
                f"{_ratio(lead) if mid > 0 and peer_mid > 0 else '—'} |"
            )
        rss_ours, rss_peer = phase.rss["gateway"], phase.rss["litellm"]
        out.append(
            f"| RSS after a wave, MiB | {fmt(statistics.median(rss_ours))} | "
            f"{fmt(statistics.median(rss_peer))} | "
            f"{_ratio(statistics.median(rss_peer) / statistics.median(rss_ours))} |"
        )
        failed = phase.failures
        started = len(phase.waves["gateway"]) * PEER_CLIENTS
        out += [
            "",
            f"Failed streams: gateway {failed['gateway']} of {started}, LiteLLM "
            f"{failed['litellm']} of {started}.  Straight from the upstream: "
            f"{statistics.median(phase.figure('direct', 'streams a second')):.1f} streams a "
            "second.",
        ]
    return out


def workers_section(w: WorkersLoad, cores: int | None) -> list[str]:
    """The "Gateway workers" section of docs/benchmarks.md."""
    from .gateway_load import CLIENTS, WORKERS

    one, two = (w.phases[n] for n in WORKERS)
    ratio = two.median("gateway", lambda x: x.streams_per_s) / one.median(
        "gateway", lambda x: x.streams_per_s
    )
    return [
        "",
        "## Gateway workers",
        "",
        f"`serve --workers 2` beside `serve` with one worker, both running at once in front "
        f"of one fake upstream ({one.setup.chunks} deltas a stream, one every "
        f"{one.setup.label}), their waves of {CLIENTS} concurrent "
        "streams alternating; each on a SQLite file of its own (`--workers` needs a store "
        "its processes share; the requests do not store).  Two workers served "
        f"**{ratio:.2f}×** the streams a second of one (medians over "
        f"{len(one.waves)} waves each; the rows above give each wave's spread).  On this "
        f"machine ({cores} cores) the upstream and the clients take their share of the same "
        "cores, so a second worker has little idle CPU to use: this figure says nothing of "
        "a machine with cores to spare.",
    ]


def markdown(
    report: Report,
    machine: Machine,
    elapsed: float,
    gateway: GatewayLoad | None = None,
    workers: WorkersLoad | None = None,
    cost: ChunkCost | None = None,
    peer: list[PeerPhase] | None = None,
) -> str:
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
        f"- load average at the start: {machine.load_start}; at the end: {machine.load_end}",
        f"- {machine.summary()}",
        f"- the run took {elapsed / 60:.1f} minutes, {time.strftime('%Y-%m-%d', time.gmtime())}",
        "",
        "Ratios are of candidates that ran in the same rounds.  Each median is given with",
        "the range of its rounds and their spread (largest over smallest); a path whose",
        f"spread is {SPREAD_BOUND:g}× or more is measured again (three times at most), and",
        "a median still that spread is marked unsteady, with a note below.",
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
        rel = _ratio(r.median / base) if base and base > 0 and r.median > 0 else ""
        out.append(f"| {r.section} | {r.path} | {r.candidate} | {figure(r)} | {rel} |")
    out += ["", "## Targets", "", "| section | path | ratio | got | target | verdict |"]
    out.append("| --- | --- | --- | ---: | ---: | --- |")
    for t in report.targets:
        bound = "—" if t.bound == float("inf") else f"{t.op} {t.bound:g}"
        said = verdict(t)
        said = said.replace("missed", "**missed**")
        unit = " s" if t.label == "seconds" else ("×" if t.unit == "×" else f" {t.unit}")
        got = _target_figure(t, unit)
        out.append(f"| {t.section} | {t.path} | {t.label} | {got} | {bound} | {said} |")
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
    if gateway is not None:
        out += gateway_section(gateway, os.cpu_count())
    if cost is not None:
        out += cost_section(cost)
    if peer:
        out += peer_section(peer)
    if workers is not None:
        out += workers_section(workers, os.cpu_count())
    out += ["", "## Checks made before timing", ""]
    out += [f"- {c}" for c in report.checks]
    if NOTES.exists():
        out += ["", NOTES.read_text().strip()]
    return "\n".join(out) + "\n"


def write(
    report: Report,
    machine: Machine,
    elapsed: float,
    gateway: GatewayLoad | None = None,
    workers: WorkersLoad | None = None,
    cost: ChunkCost | None = None,
    peer: list[PeerPhase] | None = None,
) -> None:
    plot(report)
    DOC.write_text(markdown(report, machine, elapsed, gateway, workers, cost, peer))
    print(f"\nwrote {DOC.relative_to(ROOT)} and {PLOT.relative_to(ROOT)}")
