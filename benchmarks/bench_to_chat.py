"""Responses -> Chat Completions, bytes to bytes, on the Responses stream of the mixed
shape (about 4,400 events: reasoning, text and two tool calls), the way ours makes it.

The same two ways in as chat -> Responses: the CLI (``to-chat``, startup cancelled by
two sizes) and the async API (``achat_sse_from_sse`` over 4 KiB reads, each frame to a
sink).  Baselines: a hand-written floor
(``json.loads`` + f-string chunks) and its msgspec twin.  Cost is per input event.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import msgspec

from responses_stream import achat_sse_from_sse

from . import check, shapes
from .baselines import HandToChat, split_events
from .bench_from_chat import collect, ours_frames
from .harness import Report, cli_per_unit, measure, output_of, python, steady

SECTION = "Responses → Chat"
MSGSPEC = msgspec.json.Decoder().decode


def ours_source(parts: list[bytes]) -> AsyncIterator[bytes]:
    return achat_sse_from_sse(shapes.ablocks(parts))


def hand_source(make: Callable[[], HandToChat], parts: list[bytes]) -> AsyncIterator[bytes]:
    async def gen() -> AsyncIterator[bytes]:
        conv = make()
        buf = b""
        async for block in shapes.ablocks(parts):
            payloads, buf = split_events(buf, block)
            for p in payloads:
                for frame in conv.feed(p):
                    yield frame

    return gen()


SOURCES: dict[str, Callable[[list[bytes]], AsyncIterator[bytes]]] = {
    "ours": ours_source,
    "floor (json)": lambda parts: hand_source(HandToChat, parts),
    "floor (msgspec)": lambda parts: hand_source(lambda: HandToChat(MSGSPEC), parts),
}
COMMANDS = {
    "ours": ["-m", "responses_stream", "to-chat"],
    "floor (json)": ["-m", "benchmarks.cli", "to-chat-floor"],
    "floor (msgspec)": ["-m", "benchmarks.cli", "to-chat-msgspec"],
}
STREAMS = 4


def run(report: Report, rounds: int, cli_rounds: int) -> None:
    small_sse = b"".join(ours_frames(shapes.chat_mixed(1)))
    large_sse = b"".join(ours_frames(shapes.chat_mixed(16)))  # its time outweighs startup
    events = small_sse.count(b"\n\n")
    extra = large_sse.count(b"\n\n") - events
    print(f"\n== {SECTION}: {events} events ==")
    parts = shapes.blocks(small_sse)
    loop = asyncio.new_event_loop()
    outputs = {n: loop.run_until_complete(collect(s(parts))) for n, s in SOURCES.items()}
    ref = check.frames(outputs["ours"])
    for name, frames in outputs.items():
        if name != "ours" and not check.same(name, ref, check.frames(frames)):
            raise SystemExit(f"{SECTION}: {name} differs from ours")
        if name != "ours":
            report.check(f"{SECTION}, async API: {name} writes the same {len(ref)} chunks as ours")

    def call(name: str) -> Callable[[], object]:
        source = SOURCES[name]

        def run_streams() -> None:
            for _ in range(STREAMS):
                loop.run_until_complete(collect(source(parts)))

        return run_streams

    samples, tries = steady(measure, {n: call(n) for n in SOURCES}, events * STREAMS, rounds)
    path = "mixed, async API (4 KiB reads)"
    med = report.add(SECTION, path, samples, "µs/event", tries=tries)
    report.target(SECTION, path, med, "ours", "floor (json)", "<=", 1.3)
    report.target(SECTION, path, med, "ours", "floor (msgspec)", "<=", float("inf"), "reference")
    loop.close()

    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    small, big = tmp / "responses-1.sse", tmp / "responses-16.sse"
    small.write_bytes(small_sse)
    big.write_bytes(large_sse)
    cmds = {n: [python(), *args] for n, args in COMMANDS.items()}
    ref = check.frames(output_of(cmds["ours"], small))
    for name, cmd in cmds.items():
        if name != "ours":
            if not check.same(name, ref, check.frames(output_of(cmd, small))):
                raise SystemExit(f"{SECTION} CLI: {name} differs from ours")
            report.check(f"{SECTION}, CLI: {name} writes the same {len(ref)} chunks as ours")
    samples, tries = steady(cli_per_unit, cmds, small, big, extra, cli_rounds)
    path = "mixed, CLI (stdin → stdout)"
    med = report.add(SECTION, path, samples, "µs/event", tries=tries)
    report.target(SECTION, path, med, "ours", "floor (json)", "<=", 1.3)
    report.target(SECTION, path, med, "ours", "floor (msgspec)", "<=", float("inf"), "reference")
