"""The gateway beside its peer, LiteLLM's Responses bridge, in front of one upstream.

Four processes on this machine: the fake Chat Completions upstream, ``serve
--store memory:``, LiteLLM's proxy (``litellm --config``, no database, the model marked
``use_chat_completions_api`` so that it converts, offline cost map, access log off as
ours is) and this one, running waves of ``PEER_CLIENTS`` concurrent streams of
``PEER_CHUNKS`` deltas.  Each round runs a wave through the gateway, one through
LiteLLM and one straight to the upstream, in an order that rotates from round to round,
so that all three see the machine alike.  Two phases, each with processes of its own:
``unpaced`` (the upstream sends every chunk at once: what each can get through) and
``paced`` (a chunk every 5 ms).

Every stream is checked as in the gateway load: it ends with ``response.completed`` and
carries one delta event per delta chunk sent; a stream that does not is a failure.  The
figures of each wave: streams a second, the CPU of the converting process a delta
chunk, its resident set after the wave, the time from each request to its first event,
and each delta's latency from its send (matched to the upstream's send times) less the
same quantile straight from the upstream.

LiteLLM runs from a virtualenv of its own (``make bench`` builds it from
requirements-litellm.txt, outside the repository, and names its ``litellm`` command in
``RESPONSES_STREAM_BENCH_LITELLM``): it pins other versions of packages this project
pins (openai, httpx, uvicorn).  Without it, the section is left out and says why.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path

from .bench_gateway import (
    Route,
    cpu,
    data_frame,
    direct_frame,
    free_port,
    gateway_cmd,
    gateway_frame,
    rss,
    run_wave,
    server,
    upstream_cmd,
)
from .gateway_load import (
    EVERY_KIND,
    FIGURES,
    KINDS,
    PEER_CHUNKS,
    PEER_CLIENTS,
    PEER_SECTION,
    PROCESS,
    PeerPhase,
    Setup,
    Wave,
    first_event,
)
from .harness import Report, Target

SECTION = PEER_SECTION
LITELLM_ENV = "RESPONSES_STREAM_BENCH_LITELLM"
MASTER_KEY = "sk-bench-master"
UNPACED = Setup("unpaced", PEER_CHUNKS, 0.0)
PACED = Setup("paced", PEER_CHUNKS, 0.005)
# uvicorn's access log off, as ``serve --log-level warning`` has it
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "loggers": {
        "uvicorn": {"level": "WARNING"},
        "uvicorn.access": {"level": "WARNING"},
        "uvicorn.error": {"level": "WARNING"},
    },
}


def litellm_command() -> str | None:
    """The ``litellm`` command to run, if one was given and exists."""
    given = os.environ.get(LITELLM_ENV)
    return given if given and Path(given).is_file() else None


def _config(folder: Path, upstream: str) -> tuple[Path, Path]:
    config = folder / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: m\n"
        "    litellm_params:\n"
        "      model: openai/m\n"
        f"      api_base: {upstream}/v1\n"
        "      api_key: unused\n"
        "      use_chat_completions_api: true\n"
        "general_settings:\n"
        f"  master_key: {MASTER_KEY}\n"
    )
    log_config = folder / "log.json"
    log_config.write_text(json.dumps(LOG_CONFIG))
    return config, log_config


def run_phase(setup: Setup, litellm: str, rounds: int) -> PeerPhase:
    phase = PeerPhase(setup)
    up_port, gw_port, ll_port = free_port(), free_port(), free_port()
    upstream = f"http://127.0.0.1:{up_port}"
    gateway, peer = f"http://127.0.0.1:{gw_port}", f"http://127.0.0.1:{ll_port}"
    up_cmd = upstream_cmd(up_port, "--chunks", str(setup.chunks), "--interval", str(setup.interval))
    gw_cmd = gateway_cmd(upstream, gw_port)
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-peer-")))
        config, log_config = _config(folder, upstream)
        ll_cmd = [litellm, "--config", str(config), "--host", "127.0.0.1", "--port", str(ll_port)]
        ll_cmd += ["--num_workers", "1", "--log_config", str(log_config)]
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
        logs = [stack.enter_context(tempfile.TemporaryFile()) for _ in range(3)]
        up = stack.enter_context(server(up_cmd, f"{upstream}/health", logs[0]))
        gw = stack.enter_context(server(gw_cmd, f"{gateway}/health", logs[1]))
        ll = stack.enter_context(
            server(ll_cmd, f"{peer}/health/liveliness", logs[2], env=env, cwd=folder, wait=180)
        )
        pids = {"gateway": gw.pid, "litellm": ll.pid, "upstream": up.pid}
        routes = {
            "gateway": Route(f"{gateway}/v1/responses", gateway_frame, b"response.completed"),
            "litellm": Route(
                f"{peer}/v1/responses",
                data_frame,
                b"response.completed",
                headers={"authorization": f"Bearer {MASTER_KEY}"},
            ),
            "direct": Route(
                f"{upstream}/v1/chat/completions", direct_frame, b"data: [DONE]", "direct"
            ),
        }

        def cpu_now() -> dict[str, float]:
            return {name: cpu(pid) for name, pid in pids.items()}

        async def drive() -> None:
            for kind in ("gateway", "litellm"):  # a first wave each, not counted
                await run_wave(
                    kind, routes[kind], upstream, setup.chunks, cpu_now, clients=PEER_CLIENTS
                )
            for n in range(rounds):
                order = KINDS[n % 3 :] + KINDS[: n % 3]
                for kind in order:
                    w = await run_wave(
                        kind, routes[kind], upstream, setup.chunks, cpu_now, clients=PEER_CLIENTS
                    )
                    phase.waves[kind].append(w)
                    if kind in phase.rss:
                        phase.rss[kind].append(rss(pids[kind]))
                    _print(setup, n, rounds, kind, w)

        asyncio.run(drive())
    return phase


def _print(setup: Setup, n: int, rounds: int, kind: str, w: Wave) -> None:
    first = f", first event p50 {first_event(w, kind):.1f} ms" if kind != "direct" else ""
    print(
        f"  {setup.name} round {n + 1}/{rounds} {kind:<8} {w.seconds:5.2f} s: "
        f"{w.streams}/{PEER_CLIENTS} streams, {w.streams_per_s:.1f} streams/s, CPU "
        f"{w.cpu_per_chunk[PROCESS[kind]]:.0f} µs a chunk{first}"
    )
    for failure in w.failures[:2]:
        print(f"    failed: {failure}")


def run(report: Report, quick: bool) -> list[PeerPhase]:
    """Both phases, fewer rounds with ``quick``; nothing when LiteLLM is not installed."""
    print(f"\n== {SECTION}: waves of {PEER_CLIENTS} streams of {PEER_CHUNKS} deltas ==")
    litellm = litellm_command()
    if litellm is None:
        why = f"LiteLLM not measured: {LITELLM_ENV} names no litellm command (make bench sets it)"
        print(f"  {why}")
        report.notes.append(why)
        return []
    rounds = 2 if quick else 5
    phases = [run_phase(setup, litellm, rounds) for setup in (UNPACED, PACED)]
    _record(report, phases)
    return phases


def _record(report: Report, phases: list[PeerPhase]) -> None:
    for phase in phases:
        label = f"{PEER_CLIENTS} streams, {phase.setup.name}"
        for name, (unit, _) in FIGURES.items():
            kinds = KINDS if name in EVERY_KIND else ("gateway", "litellm")
            samples = {_name(k): phase.figure(k, name) for k in kinds}
            report.add(SECTION, f"{label}: {name}", samples, unit, ours=("gateway",))
        report.add(
            SECTION,
            f"{label}: RSS after each wave",
            {_name(k): v for k, v in phase.rss.items()},
            "MiB",
            ours=("gateway",),
        )
        for q, quantile in ((0.5, "p50"), (0.99, "p99")):
            said = []
            for kind in ("gateway", "litellm"):
                added = phase.added(kind, q)
                said.append(
                    f"{_name(kind)} {added:.1f} ms"
                    if added > 0
                    else f"{_name(kind)} no more than the noise between waves"
                )
            report.notes.append(
                f"{SECTION}, {label}: added to each delta's latency at {quantile}, over the "
                f"upstream's own: {'; '.join(said)}."
            )
        failed = phase.failures
        started = len(phase.waves["gateway"]) * PEER_CLIENTS
        for kind in ("gateway", "litellm"):
            report.targets.append(
                Target(
                    SECTION,
                    f"{label}: {started} streams each",
                    f"{_name(kind)}: streams completed / started",
                    (started - failed[kind]) / started,
                    ">=",
                    1.0 if kind == "gateway" else float("inf"),
                    "" if kind == "gateway" else f"{failed[kind]} failed",
                )
            )
        rate = statistics.median(phase.figure("gateway", "streams a second"))
        peer_rate = statistics.median(phase.figure("litellm", "streams a second"))
        report.targets.append(
            Target(
                SECTION,
                label,
                "streams a second: gateway / LiteLLM",
                rate / peer_rate if peer_rate else float("inf"),
                ">=",
                1.0,
            )
        )


def _name(kind: str) -> str:
    return {"gateway": "gateway", "litellm": "LiteLLM", "direct": "upstream direct"}[kind]


if __name__ == "__main__":  # python -m benchmarks.bench_peer [--quick]: this one alone
    import sys

    from . import report as report_module

    r = Report()
    run(r, "--quick" in sys.argv)
    print("\n" + report_module.table(r))
    for note in r.notes:
        print(note)
