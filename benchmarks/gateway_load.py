"""The figures of the gateway load benchmark: its setups, and what each wave and phase
measured.  ``bench_gateway`` fills them; ``report`` writes them out."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

SECTION = "Gateway load"
CLIENTS = 200
SAMPLE_EVERY = 0.5  # seconds between two RSS samples
RSS_BOUND = 1.10


@dataclass(frozen=True)
class Setup:
    name: str
    chunks: int  # delta chunks a stream (a quarter reasoning, the rest text)
    interval: float  # seconds before each chunk

    @property
    def label(self) -> str:
        return f"{self.interval * 1000:g} ms"

    @property
    def offered(self) -> float:
        """Delta chunks a second the upstream sends when nothing holds it back."""
        return CLIENTS / self.interval


FAST = Setup("fast", 200, 0.005)
PACED = Setup("paced", 50, 0.05)


@dataclass
class Wave:
    kind: str  # "gateway" or "direct"
    seconds: float
    streams: int  # streams read to a correct end
    events: int  # SSE events received, all streams
    latencies: list[int]  # ns, send → arrival, every delta event of a correct stream
    failures: list[str]
    cpu: dict[str, float]  # process ("gateway", "upstream", "client") → CPU seconds
    chunks: int = 0  # delta chunks a stream
    first_events: list[float] = field(default_factory=list)  # ms, request → first frame

    @property
    def cpu_per_chunk(self) -> dict[str, float]:
        """µs of each process's CPU a delta chunk the wave's streams were sent."""
        chunks = max((self.streams + len(self.failures)) * self.chunks, 1)
        return {name: used / chunks * 1e6 for name, used in self.cpu.items()}

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds

    @property
    def streams_per_s(self) -> float:
        return self.streams / self.seconds

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the latencies, ms (0 when there are none)."""
        ordered = sorted(self.latencies)
        return ordered[round(q * (len(ordered) - 1))] / 1e6 if ordered else 0.0


@dataclass
class Phase:
    """The waves of one setup, on one gateway process."""

    setup: Setup
    waves: list[Wave] = field(default_factory=list)
    rss_idle: float = 0.0  # MiB, before the first wave
    rss_after: list[float] = field(default_factory=list)  # MiB, after each gateway wave
    rss_peak: float = 0.0  # MiB, the largest sample
    samples: int = 0
    logged: list[str] = field(default_factory=list)  # the gateway's log (warnings and up)

    def of(self, kind: str) -> list[Wave]:
        return [w for w in self.waves if w.kind == kind]

    def median(self, kind: str, figure: Callable[[Wave], float]) -> float:
        return statistics.median(figure(w) for w in self.of(kind))

    def added(self, q: float) -> float:
        """What the gateway adds to the ``q`` quantile of delta latency, ms."""

        def quantile(w: Wave) -> float:
            return w.quantile(q)

        return self.median("gateway", quantile) - self.median("direct", quantile)

    def cpu_per_delta(self, kind: str, process: str) -> float:
        """µs of ``process``'s CPU a delta chunk, median over the ``kind`` waves."""
        chunks = CLIENTS * self.setup.chunks
        return self.median(kind, lambda w: w.cpu[process] / chunks * 1e6)

    @property
    def failures(self) -> list[str]:
        return [f"{w.kind} wave: {f}" for w in self.waves for f in w.failures]


@dataclass
class GatewayLoad:
    """One run's figures, for the "Gateway load" section ``report.py`` writes."""

    clients: int
    fast: Phase
    paced: Phase

    @property
    def rss_ratio(self) -> float:
        return self.fast.rss_after[-1] / self.fast.rss_after[0]

    @property
    def started(self) -> int:
        return sum(len(p.waves) for p in (self.fast, self.paced)) * self.clients

    @property
    def failures(self) -> list[str]:
        return self.fast.failures + self.paced.failures


WORKERS_SECTION = "Gateway workers"
WORKERS = (1, 2)  # the worker counts set side by side


@dataclass
class WorkersLoad:
    """``serve --workers N`` for each N of :data:`WORKERS`: its gateway waves."""

    phases: dict[int, Phase]  # by worker count

    @property
    def failures(self) -> list[str]:
        return [f for p in self.phases.values() for w in p.waves for f in w.failures]


# The gateway's CPU a chunk (bench_chunk_cost): rounds of a short and a long wave.
COST_BOUND = 2.0  # the gateway's CPU a chunk / the upstream's
SHORT, LONG = 25, 125  # delta chunks a stream in the two waves of a round
COST_SETUP = Setup("alone", SHORT, 0.05)


@dataclass
class Round:
    """The short and the long wave of one round, of one kind."""

    short: Wave
    long: Wave

    def per_chunk(self, process: str) -> float:
        """µs of ``process``'s CPU a delta chunk: the waves' difference over the chunks."""
        extra = CLIENTS * (LONG - SHORT)
        return (self.long.cpu[process] - self.short.cpu[process]) / extra * 1e6

    def per_stream(self, process: str) -> float:
        """µs of ``process``'s CPU a stream costs besides its chunks."""
        return self.short.cpu[process] / CLIENTS * 1e6 - self.per_chunk(process) * SHORT

    def whole(self) -> float:
        """The gateway's CPU over the upstream's over the long wave, nothing taken out."""
        return self.long.cpu["gateway"] / self.long.cpu["upstream"]


@dataclass
class ChunkCost:
    gateway: list[Round] = field(default_factory=list)
    direct: list[Round] = field(default_factory=list)

    def ratios(self) -> list[float]:
        return [r.per_chunk("gateway") / r.per_chunk("upstream") for r in self.gateway]

    @property
    def failures(self) -> list[str]:
        waves = [w for r in self.gateway + self.direct for w in (r.short, r.long)]
        return [f"{w.kind} wave: {f}" for w in waves for f in w.failures]


# LiteLLM beside the gateway (bench_peer).
PEER_SECTION = "Gateway beside LiteLLM"
PEER_CLIENTS = 50
PEER_CHUNKS = 200
KINDS = ("gateway", "litellm", "direct")  # the waves of a round of the peer benchmark
PROCESS = {"gateway": "gateway", "litellm": "litellm", "direct": "upstream"}


@dataclass
class PeerPhase:
    """The waves of one setup through the gateway, through LiteLLM and straight to the
    upstream, and the two converters' RSS after each of their waves."""

    setup: Setup
    waves: dict[str, list[Wave]] = field(default_factory=lambda: {k: [] for k in KINDS})
    rss: dict[str, list[float]] = field(default_factory=lambda: {"gateway": [], "litellm": []})

    def figure(self, kind: str, of: str) -> list[float]:
        """One figure of each ``kind`` wave (see ``FIGURES``)."""
        return [FIGURES[of][1](w, kind) for w in self.waves[kind]]

    def added(self, kind: str, q: float) -> float:
        """What ``kind`` adds to the ``q`` quantile of delta latency, ms (medians over the
        waves)."""
        ours = statistics.median(w.quantile(q) for w in self.waves[kind])
        return ours - statistics.median(w.quantile(q) for w in self.waves["direct"])

    @property
    def failures(self) -> dict[str, int]:
        return {k: sum(len(w.failures) for w in ws) for k, ws in self.waves.items()}


def first_event(w: Wave, kind: str) -> float:
    """The median time from request to first event of a wave's streams, ms."""
    return statistics.median(w.first_events) if w.first_events else float("nan")


FIGURES = {
    "streams a second": ("streams/s", lambda w, kind: w.streams_per_s),
    "CPU a delta chunk": ("µs", lambda w, kind: w.cpu_per_chunk[PROCESS[kind]]),
    "time to first event, p50": ("ms", first_event),
    "delta latency p50": ("ms", lambda w, kind: w.quantile(0.5)),
    "delta latency p99": ("ms", lambda w, kind: w.quantile(0.99)),
}
EVERY_KIND = ("streams a second", "delta latency p50", "delta latency p99")  # direct too
