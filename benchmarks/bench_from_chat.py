"""Chat Completions -> Responses, bytes to bytes, on the two chat shapes.

Two ways in, as servers use the package:

- the CLI, ``from-chat`` with the stream on stdin and the Responses SSE on stdout; each
  baseline is a program of the same kind (``benchmarks.cli``).  Startup is cancelled by
  timing each program on the shape and on the shape ``LARGE`` times over (four for
  openai-agents, which is slower);
- the async API, ``asse_from_chat`` fed the stream in 4 KiB reads that split events
  anywhere (as ``aiter_bytes()`` gives them), each frame written to a sink; each
  baseline is an async generator over the same reads.

Baselines: the hand-written floor (``json.loads`` + f-strings) and its msgspec twin, the
pydantic way (openai SDK event models, ``model_dump_json``) and openai-agents'
``ChatCmplStreamHandler`` on chunks parsed the way the openai SDK's stream parses them.
Every one is checked against ours before it is timed.  Cost is per input chunk.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec

from responses_stream import ChatToResponses, CountingIds, StreamProcessor, asse_from_chat

from . import check, shapes
from .baselines import HandChat, PydanticChat, split_events
from .cli import agents_frames
from .harness import Report, cli_per_unit, measure, output_of, python, steady

SECTION = "Chat → Responses"
MSGSPEC = msgspec.json.Decoder().decode


def ours_frames(shape: shapes.ChatShape) -> list[bytes]:
    proc = StreamProcessor(
        "openai", model=shapes.MODEL, created_at=shapes.CREATED, ids=CountingIds()
    )
    conv = ChatToResponses(proc)
    out = proc.drain_sse()
    for p in shape.payloads:
        out += conv.feed_data_sse(p)
    return out


# -- async sources, one per candidate --------------------------------------------------
def hand_source(make: Callable[[], HandChat], parts: list[bytes]) -> AsyncIterator[bytes]:
    async def gen() -> AsyncIterator[bytes]:
        conv = make()
        for frame in conv.start():
            yield frame
        buf = b""
        async for block in shapes.ablocks(parts):
            payloads, buf = split_events(buf, block)
            for p in payloads:
                for frame in conv.feed(p):
                    yield frame

    return gen()


def agents_source(parts: list[bytes]) -> AsyncIterator[bytes]:
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai.types.chat import ChatCompletionChunk

    async def chunks() -> AsyncIterator[Any]:
        async for sse in SSEDecoder().aiter_bytes(shapes.ablocks(parts)):
            if sse.data.startswith("[DONE]"):
                break
            yield construct_type(type_=ChatCompletionChunk, value=sse.json())

    return agents_frames(chunks())


def ours_source(parts: list[bytes]) -> AsyncIterator[bytes]:
    return asse_from_chat(
        shapes.ablocks(parts), model=shapes.MODEL, created_at=shapes.CREATED, ids=CountingIds()
    )


SOURCES: dict[str, Callable[[list[bytes]], AsyncIterator[bytes]]] = {
    "ours": ours_source,
    "floor (json)": lambda parts: hand_source(lambda: HandChat(shapes.MODEL), parts),
    "floor (msgspec)": lambda parts: hand_source(lambda: HandChat(shapes.MODEL, MSGSPEC), parts),
    "pydantic": lambda parts: hand_source(lambda: PydanticChat(shapes.MODEL), parts),
    "openai-agents": agents_source,
}
# streams per timed call: enough for ~50 ms each
STREAMS = {"ours": 4, "floor (json)": 4, "floor (msgspec)": 4, "pydantic": 2, "openai-agents": 1}
# The CLI's large input: the shape this many times over (the slow candidates' four
# times), so that the time it adds outweighs the noise of a process start.
LARGE = 16
SLOW = ("openai-agents",)
COMMANDS = {
    "ours": ["-m", "responses_stream", "from-chat", "--model", shapes.MODEL],
    "floor (json)": ["-m", "benchmarks.cli", "from-chat-floor"],
    "floor (msgspec)": ["-m", "benchmarks.cli", "from-chat-msgspec"],
    "pydantic": ["-m", "benchmarks.cli", "from-chat-pydantic"],
    "openai-agents": ["-m", "benchmarks.cli", "from-chat-agents"],
}


async def collect(source: AsyncIterator[bytes]) -> list[bytes]:
    sink: list[bytes] = []
    async for frame in source:
        sink.append(frame)
    return sink


def _verify(report: Report, how: str, shape: shapes.ChatShape, outputs: dict[str, bytes]) -> None:
    ref = check.frames(ours_frames(shape))
    for name, raw in outputs.items():
        got = check.frames(raw)
        if name == "ours" and how == "async API":
            continue  # the reference itself
        if name == "openai-agents":
            ok = check.agents_summary([p for _, p in got]) == {
                "reasoning": shape.reasoning,
                "text": shape.text,
                "calls": {cid: args for cid, _, args in shape.calls},
                "last": "response.completed",
            }
            what = "the same reasoning, text and arguments"
        else:
            ok = check.same(name, ref, got)
            what = f"the same {len(ref)} events"
        if not ok:
            raise SystemExit(f"{SECTION} {shape.name} {how}: {name} differs from ours")
        report.check(f"{SECTION}, {shape.name} shape, {how}: {name} writes {what} as ours")


def run(report: Report, rounds: int, cli_rounds: int) -> None:
    loop = asyncio.new_event_loop()
    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    for shape_name, make in shapes.CHAT_SHAPES.items():
        shape, large, larger = make(1), make(4), make(LARGE)
        parts = shapes.blocks(shape.sse())
        print(f"\n== {SECTION}, {shape_name} shape: {shape.chunks} chunks ==")

        # async API
        outputs = {
            n: b"".join(loop.run_until_complete(collect(s(parts)))) for n, s in SOURCES.items()
        }
        _verify(report, "async API", shape, outputs)

        def call(name: str, parts: list[bytes] = parts) -> Callable[[], object]:
            source, streams = SOURCES[name], STREAMS[name]

            def run_streams() -> None:
                for _ in range(streams):
                    loop.run_until_complete(collect(source(parts)))

            return run_streams

        units = {n: shape.chunks * STREAMS[n] for n in SOURCES}
        samples, tries = steady(measure, {n: call(n) for n in SOURCES}, units, rounds)
        path = f"{shape_name}, async API (4 KiB reads)"
        _targets(report, path, report.add(SECTION, path, samples, "µs/chunk", tries=tries))

        # CLI
        small, big = tmp / f"{shape_name}-1.sse", tmp / f"{shape_name}-4.sse"
        bigger = tmp / f"{shape_name}-{LARGE}.sse"
        small.write_bytes(shape.sse())
        big.write_bytes(large.sse())
        bigger.write_bytes(larger.sse())
        cmds = {n: [python(), *args] for n, args in COMMANDS.items()}
        _verify(report, "CLI", shape, {n: output_of(c, small) for n, c in cmds.items()})
        inputs = {n: big if n in SLOW else bigger for n in cmds}
        extra = {n: (large if n in SLOW else larger).chunks - shape.chunks for n in cmds}
        samples, tries = steady(cli_per_unit, cmds, small, inputs, extra, cli_rounds)
        path = f"{shape_name}, CLI (stdin → stdout)"
        _targets(report, path, report.add(SECTION, path, samples, "µs/chunk", tries=tries))
    loop.close()


def _targets(report: Report, path: str, med: dict[str, float]) -> None:
    report.target(SECTION, path, med, "ours", "floor (json)", "<=", 1.3)
    report.target(SECTION, path, med, "pydantic", "ours", ">=", 3)
    report.target(SECTION, path, med, "openai-agents", "ours", ">=", 30)
    report.target(SECTION, path, med, "ours", "floor (msgspec)", "<=", 1.25)
