"""Per event: emit and SSE-encode one event, three kinds, against the openai SDK's pydantic
models (``model_dump_json``, as vLLM and SGLang write them) and a hand-written f-string
floor (``json.dumps`` for strings).  Every candidate's frame is checked to be the same
event (its ``sequence_number`` aside) before timing.

- a text delta: ``output_text_delta_sse``;
- an arguments delta: a function call's ``delta_sse``;
- an ``output_item.done`` carrying a whole message (a paragraph of text): the item's
  snapshot, the event and the encoder, as the emitter's ``done`` makes it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

from responses_stream import CountingIds
from responses_stream import openai as oa

from . import check
from .harness import Report, measure, steady
from .shapes import PROSE

SECTION = "Per event"
NUMBER = 20_000
DELTA = "Hello"
ARGS = '{"location": '
TEXT = PROSE * 3


def _stream() -> Any:
    r = oa.ResponseEmitter(ids=CountingIds(), model="m", created_at=1)
    r.created()
    r.in_progress()
    return r


def _text_delta() -> dict[str, Callable[[], bytes]]:
    from openai.types.responses import ResponseTextDeltaEvent

    msg = _stream().message()
    msg.open()
    msg.output_text_open()
    item_id, seq, dumps = msg.item_id, itertools.count(), json.dumps
    kind = "response.output_text.delta"

    def pydantic() -> bytes:
        ev = ResponseTextDeltaEvent(
            type=kind, sequence_number=next(seq), item_id=item_id, output_index=0,
            content_index=0, delta=DELTA, logprobs=[],
        )  # fmt: skip
        return f"event: {ev.type}\ndata: {ev.model_dump_json()}\n\n".encode()

    def floor() -> bytes:
        return (
            f'event: {kind}\ndata: {{"type":"{kind}","sequence_number":{next(seq)},'
            f'"item_id":"{item_id}","output_index":0,"content_index":0,'
            f'"delta":{dumps(DELTA)},"logprobs":[]}}\n\n'
        ).encode()

    return {"ours": lambda: msg.output_text_delta_sse(DELTA), "pydantic": pydantic, "floor": floor}


def _args_delta() -> dict[str, Callable[[], bytes]]:
    from openai.types.responses import ResponseFunctionCallArgumentsDeltaEvent

    call = _stream().function_call(call_id="call_1", name="get_weather")
    call.open()
    item_id, seq, dumps = call.item_id, itertools.count(), json.dumps
    kind = "response.function_call_arguments.delta"

    def pydantic() -> bytes:
        ev = ResponseFunctionCallArgumentsDeltaEvent(
            type=kind, sequence_number=next(seq), item_id=item_id, output_index=0, delta=ARGS
        )
        return f"event: {ev.type}\ndata: {ev.model_dump_json()}\n\n".encode()

    def floor() -> bytes:
        return (
            f'event: {kind}\ndata: {{"type":"{kind}","sequence_number":{next(seq)},'
            f'"item_id":"{item_id}","output_index":0,"delta":{dumps(ARGS)}}}\n\n'
        ).encode()

    return {"ours": lambda: call.delta_sse(ARGS), "pydantic": pydantic, "floor": floor}


def _item_done() -> dict[str, Callable[[], bytes]]:
    from openai.types.responses import (
        ResponseOutputItemDoneEvent,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    msg = _stream().message()
    msg.open()
    msg.output_text_open()
    msg.output_text_delta(TEXT)
    msg.done()
    item_id, seq, dumps = msg.item_id, itertools.count(), json.dumps
    enc, models = oa.DIALECT.encoder(), oa.models
    kind = "response.output_item.done"

    def ours() -> bytes:  # what MessageEmitter.done() does for its last event
        ev = models.ResponseOutputItemDoneEvent(
            sequence_number=next(seq), output_index=0, item=msg.snapshot()
        )
        return enc.encode(ev)

    def pydantic() -> bytes:
        part = ResponseOutputText(type="output_text", text=TEXT, annotations=[], logprobs=[])
        item = ResponseOutputMessage(
            type="message", id=item_id, status="completed", role="assistant", content=[part]
        )
        ev = ResponseOutputItemDoneEvent(
            type=kind, sequence_number=next(seq), output_index=0, item=item
        )
        return f"event: {ev.type}\ndata: {ev.model_dump_json(exclude_unset=True)}\n\n".encode()

    def floor() -> bytes:
        return (
            f'event: {kind}\ndata: {{"type":"{kind}","sequence_number":{next(seq)},'
            f'"output_index":0,"item":{{"type":"message","id":"{item_id}","status":'
            f'"completed","role":"assistant","content":[{{"type":"output_text","text":'
            f'{dumps(TEXT)},"annotations":[],"logprobs":[]}}]}}}}\n\n'
        ).encode()

    return {"ours": ours, "pydantic": pydantic, "floor": floor}


CASES = {
    "text delta": _text_delta,
    "arguments delta": _args_delta,
    "output_item.done, a whole message": _item_done,
}


def run(report: Report, rounds: int) -> None:
    print(f"\n== {SECTION} ==")
    for path, make in CASES.items():
        cands = make()
        frames = {name: check.frames(f()) for name, f in cands.items()}
        for frame in frames.values():
            for _, payload in frame:
                payload.pop("sequence_number", None)
        for name in ("pydantic", "floor"):
            if not check.same(name, frames["ours"], frames[name]):
                raise SystemExit(f"{SECTION} {path}: {name} differs from ours")
            report.check(f"{SECTION}, {path}: {name} writes the same event as ours")

        def batch(f: Callable[[], bytes]) -> Callable[[], object]:
            def run_batch() -> None:
                for _ in range(NUMBER):
                    f()

            return run_batch

        samples, tries = steady(measure, {n: batch(f) for n, f in cands.items()}, NUMBER, rounds)
        med = report.add(SECTION, path, samples, "µs/event", tries=tries)
        report.target(SECTION, path, med, "pydantic", "ours", ">=", 5)
        report.target(SECTION, path, med, "ours", "floor", "<=", 1.3)
