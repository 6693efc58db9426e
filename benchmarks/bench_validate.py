"""The validator on a Responses stream of about 200,000 events (the mixed shape, 48 times
over, as ours writes it), against the openai SDK consuming the same bytes: its
``SSEDecoder``, its event models (``construct_type``, as its ``Stream`` builds them) and
``ResponseStreamState`` (what ``client.responses.stream()`` runs on each event).

Throughput: both in this process, round-robin, on 64 KiB reads.  Memory: the peak
resident set of ``validate`` on that stream and on one with the same text in a quarter of
the events (deltas four times longer): bounded by the text, the two peaks are the same.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from responses_stream import StreamValidator

from . import shapes
from .bench_from_chat import ours_frames
from .harness import Report, measure, peak_rss, python, steady

SECTION = "Validator"
SCALE = 48
READ = 65536


def sdk_consume(parts: list[bytes]) -> int:
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai._types import omit
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    n = 0
    for sse in SSEDecoder().iter_bytes(iter(parts)):
        state.handle_event(construct_type(type_=ResponseStreamEvent, value=sse.json()))
        n += 1
    return n


def ours_validate(parts: list[bytes]) -> int:
    v = StreamValidator("openai")
    v.feed_sse(parts)
    errors = [x for x in v.finish() if x.severity == "error"]
    if errors:
        raise SystemExit(f"{SECTION}: our stream is not valid: {errors[:3]}")
    return v.index


def run(report: Report, rounds: int) -> None:
    data = b"".join(ours_frames(shapes.chat_mixed(SCALE)))
    wide = b"".join(ours_frames(shapes.chat_mixed(SCALE, width=4)))
    events, wide_events = data.count(b"\n\n"), wide.count(b"\n\n")
    print(f"\n== {SECTION}: {events} events, {len(data) / 1e6:.1f} MB ==")
    parts = shapes.blocks(data, READ)
    n_sdk = sdk_consume(shapes.blocks(data[: len(data) // 50], READ))  # a first look
    if n_sdk <= 0:
        raise SystemExit(f"{SECTION}: the SDK read no event")
    if ours_validate(parts) != events:
        raise SystemExit(f"{SECTION}: the validator did not count every event")
    report.check(f"{SECTION}: our {events}-event stream is valid; the SDK reads it")
    cands: dict[str, Callable[[], object]] = {
        "ours": lambda: ours_validate(parts),
        "openai SDK": lambda: sdk_consume(parts),
    }
    samples, tries = steady(measure, cands, events, rounds, warm=False)
    path = f"{events:,} events, in process"
    med = report.add(SECTION, path, samples, "µs/event", tries=tries)
    report.target(SECTION, path, med, "openai SDK", "ours", ">=", 10)
    rate = 1e6 / med["ours"]
    report.notes.append(
        f"Validator throughput: {rate:,.0f} events/s (ours), "
        f"{1e6 / med['openai SDK']:,.0f} events/s (openai SDK)."
    )

    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    narrow_file, wide_file = tmp / "narrow.sse", tmp / "wide.sse"
    narrow_file.write_bytes(data)
    wide_file.write_bytes(wide)
    ours_cmd = [python(), "-m", "responses_stream", "validate", "-"]
    sdk_cmd = [python(), "-m", "benchmarks.cli", "validate-sdk"]
    peak_narrow, _ = peak_rss(ours_cmd, narrow_file)
    peak_wide, _ = peak_rss(ours_cmd, wide_file)
    peak_sdk, _ = peak_rss(sdk_cmd, narrow_file)
    mb = 1024 * 1024
    report.memory.append(
        (
            SECTION,
            f"validate, {events:,} events ({len(data) / mb:.1f} MiB)",
            peak_narrow / mb,
            f"{wide_events:,} events, same text: {peak_wide / mb:.1f} MiB; "
            f"openai SDK on the {events:,} events: {peak_sdk / mb:.1f} MiB",
        )
    )
    report.targets.append(
        _memory_target(f"{events:,} vs {wide_events:,} events, same text", peak_narrow, peak_wide)
    )


def _memory_target(path: str, many: int, few: int) -> Any:
    from .harness import Target

    return Target(
        SECTION,
        path,
        "peak (more events) / peak (fewer events)",
        many / few,
        "<=",
        1.15,
        "memory bounded by the text, not the events",
    )
