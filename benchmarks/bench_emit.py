"""Per-event cost of emitting + SSE-encoding one ``response.output_text.delta`` event.

Compares, in one process, our generated emitter + encoder with (a) the openai SDK pydantic
path used by vLLM/SGLang and (b) a hand-written f-string floor. Candidates run round-robin in
every repeat so machine noise hits all of them alike; medians are reported. Informative only:
the exit code is always 0.
"""

from __future__ import annotations

import gc
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "generated"))

from openai.types.responses import ResponseTextDeltaEvent  # noqa: E402

from responses_stream import CountingIds  # noqa: E402
from responses_stream import openai as oa  # noqa: E402

NUMBER = 20_000  # events per batch
REPEAT = 15  # batches per candidate
DELTA = "Hello"
TYPE: Final = "response.output_text.delta"

Batch = Callable[[int], bytes]


def _open_message() -> Any:
    r = oa.ResponseEmitter(ids=CountingIds(), model="m")
    r.created()
    r.in_progress()
    msg = r.message()
    msg.open()
    msg.output_text_open()
    return msg


def make_ours() -> tuple[Batch, str]:
    """The SSE fast path: ``output_text_delta_sse`` emits and encodes in one call."""
    msg = _open_message()
    delta = msg.output_text_delta_sse

    def run(n: int) -> bytes:
        out = b""
        for _ in range(n):
            out = delta(DELTA)
        return out

    return run, msg.item_id


def make_typed() -> Batch:
    """The typed path: ``output_text_delta`` returns structs, the encoder frames them."""
    msg = _open_message()
    delta, encode = msg.output_text_delta, oa.DIALECT.encoder().encode

    def run(n: int) -> bytes:
        out = b""
        for _ in range(n):
            for ev in delta(DELTA):
                out = encode(ev)
        return out

    return run


def make_pydantic(item_id: str) -> Batch:
    seq = itertools.count()

    def run(n: int) -> bytes:
        out = b""
        for _ in range(n):
            ev = ResponseTextDeltaEvent(
                type=TYPE,
                sequence_number=next(seq),
                item_id=item_id,
                output_index=0,
                content_index=0,
                delta=DELTA,
                logprobs=[],
            )
            out = f"event: {ev.type}\ndata: {ev.model_dump_json()}\n\n".encode()
        return out

    return run


def make_floor(item_id: str) -> Batch:
    seq = itertools.count()
    dumps = json.dumps

    def run(n: int) -> bytes:
        out = b""
        for _ in range(n):
            out = (
                f'event: {TYPE}\ndata: {{"type":"{TYPE}","sequence_number":{next(seq)},'
                f'"item_id":"{item_id}","output_index":0,"content_index":0,'
                f'"delta":{dumps(DELTA)},"logprobs":[]}}\n\n'
            ).encode()
        return out

    return run


def frame(raw: bytes) -> tuple[str, dict[str, object]]:
    """The event line and the JSON payload (minus sequence_number) of one SSE frame."""
    head, data, tail = raw.decode().split("\n", 2)
    assert head.startswith("event: ") and data.startswith("data: ") and tail == "\n", raw
    payload = json.loads(data.removeprefix("data: "))
    payload.pop("sequence_number")
    return head, payload


def check_shapes(frames: dict[str, bytes]) -> bool:
    ref_head, ref = frame(frames["ours"])
    ok = True
    for name, raw in frames.items():
        head, payload = frame(raw)
        same = head == ref_head and payload == ref
        ok &= same
        print(f"  {name:<9} {'same' if same else 'DIFFERENT'}: {raw!r}")
    return ok


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> int:
    ours, item_id = make_ours()
    cands = {
        "ours": ours,
        "typed": make_typed(),
        "pydantic": make_pydantic(item_id),
        "floor": make_floor(item_id),
    }

    print("payload check (one frame each, sequence_number ignored):")
    fair = check_shapes({name: run(1) for name, run in cands.items()})
    print(f"  -> {'OK: identical event line and payload' if fair else 'MISMATCH'}\n")

    for run in cands.values():  # warm-up
        run(NUMBER // 10)
    times: dict[str, list[float]] = {name: [] for name in cands}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(REPEAT):
            for name, run in cands.items():
                t0 = time.perf_counter()
                run(NUMBER)
                times[name].append((time.perf_counter() - t0) / NUMBER * 1e6)
    finally:
        if gc_was_enabled:
            gc.enable()

    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"median of {REPEAT} batches x {NUMBER} events (python {sys.version.split()[0]}):")
    print(f"  {'candidate':<10}{'µs/event':>10}{'min':>9}{'max':>9}")
    for name, ts in times.items():
        print(f"  {name:<10}{med[name]:>10.3f}{min(ts):>9.3f}{max(ts):>9.3f}")
    speedup = med["pydantic"] / med["ours"]
    overhead = med["ours"] / med["floor"]
    print()
    print(f"  pydantic/ours = {speedup:5.2f}x  (target >= 5x)   {verdict(speedup >= 5)}")
    print(f"  ours/floor    = {overhead:5.2f}x  (target <= 1.3x) {verdict(overhead <= 1.3)}")
    typed = med["typed"] / med["floor"]
    print(f"  typed/floor   = {typed:5.2f}x  (structs, then SSEEncoder.encode; for reference)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
