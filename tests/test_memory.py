"""What accumulated text costs the producer, measured with tracemalloc.

An item's texts (a part's ``text``, a call's ``arguments``...) live in a ``TextAcc``
until the item closes.  A delta must cost a few bytes beyond its characters, not a
string object of its own: the bound is checked on a million two-character deltas, and
the same measurement of the old scheme (every delta kept as its own string in a list
until the part closes) shows the bound tells the two apart.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from invariants import check_stream

import responses_stream as rs
from responses_stream import CountingIds, StreamProcessor
from responses_stream._runtime.core.stream import COMPACT_EVERY, TextAcc

N = 1_000_000
BOUND = 8.0  # bytes per delta beyond the final text's own size, at the peak


class ListOfStrings(TextAcc):
    """The old scheme, as a baseline: every delta its own string until the end."""

    def compact(self) -> None:
        pass

    def value(self) -> str:
        return "".join(self)


def _payloads(events: list[Any], dialect: str = "openai") -> list[dict[str, Any]]:
    enc = rs.DIALECTS[dialect].encoder()
    return [json.loads(enc.encode(ev).decode().split("data: ", 1)[1]) for ev in events]


def _measure(
    open_item: Callable[[StreamProcessor], tuple[Any, Callable[[str], Any]]],
    final_text: Callable[[Any], str],
    text: str,
    acc: type[TextAcc] | None,
) -> float:
    """Peak bytes per delta beyond the text, feeding ``text`` two characters at a time."""
    proc = StreamProcessor("openai", model="m", ids=CountingIds())
    proc.start()
    handle, feed = open_item(proc)
    if acc is not None:  # put the baseline scheme in the emitter's place
        emitter = handle.emitter
        if getattr(emitter, "_part", None) is not None:
            emitter._part.text = acc()
        else:
            emitter._acc_arguments = acc()
    proc.drain()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(0, len(text), 2):
            feed(text[i : i + 2])  # a new string each time, as a parser makes them
        handle.close()
        proc.finish()
        events = proc.drain()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    final = final_text(events[-1].response.output[0])
    assert final == text
    text_bytes = len(final.encode("latin-1")) if final.isascii() else len(final) * 2
    return (peak - base - text_bytes) / (len(text) // 2)


def _message(proc: StreamProcessor) -> tuple[Any, Callable[[str], Any]]:
    msg = proc.open("message")
    msg.part("output_text")
    return msg, msg.emitter.output_text_delta


def _call(proc: StreamProcessor) -> tuple[Any, Callable[[str], Any]]:
    call = proc.open("function_call", name="f", call_id="call_1")
    return call, call.emitter.delta


CASES = {
    "output_text": (_message, lambda item: item.content[0].text),
    "arguments": (_call, lambda item: item.arguments),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_million_deltas_cost_a_few_bytes_each(case: str) -> None:
    """1,000,000 two-character deltas: peak minus the text < 8 bytes a delta (old scheme > 40)."""
    open_item, final_text = CASES[case]
    text = "ab" * N
    ours = _measure(open_item, final_text, text, None)
    old = _measure(open_item, final_text, "cd" * (N // 4), ListOfStrings)
    assert ours < BOUND, f"{ours:.1f} bytes per delta"
    assert old > 5 * BOUND, f"baseline {old:.1f} bytes per delta: the bound would not tell"


def test_through_the_processor_a_delta_costs_no_more() -> None:
    """The direct API (ItemHandle.text) adds nothing per delta once events are drained."""
    proc = StreamProcessor("openai", model="m", ids=CountingIds())
    proc.start()
    msg = proc.open("message")
    msg.part("output_text")
    n = 200_000
    text = "xy" * n
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(0, len(text), 2):
            msg.text(text[i : i + 2])
            if len(proc.out) >= 1024:
                proc.drain()
        msg.close()
        proc.finish()
        events = proc.drain()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert events[-1].response.output[0].content[0].text == text
    assert (peak - base - len(text)) / n < BOUND


@pytest.mark.parametrize("pieces", [1, 1_000, 100_000])
@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
def test_ten_megabytes_of_arguments(pieces: int, dialect: str) -> None:
    """10 MB of arguments in one delta or many: the final Response carries them exactly.

    Up to 1,000 deltas the stream is also checked by the validator and (one delta) the
    SDK's strict models; the validator joins texts as it goes, which costs too much
    with 100,000 deltas of 10 MB, so that case checks the texts themselves.
    """
    unit = '{"k": "\u00e9\u2028\\u0000", "n": 12345678}'
    text = (unit * (10_000_000 // len(unit) + 1))[:10_000_000]
    proc = StreamProcessor(dialect, model="m", ids=CountingIds())
    proc.start()
    call = proc.open("function_call", name="f", call_id="call_1")
    size = len(text) // pieces
    for i in range(0, len(text), size):
        call.delta(text[i : i + size])
    call.close()
    proc.finish()
    events = proc.drain()
    assert events[-1].response.output[0].arguments == text
    payloads = _payloads(events, dialect)
    assert payloads[-1]["response"]["output"][0]["arguments"] == text
    deltas = "".join(p["delta"] for p in payloads if p["type"].endswith("arguments.delta"))
    assert deltas == text
    assert payloads[-1]["type"] == "response.completed"
    if pieces <= 1_000:
        check_stream(payloads, dialect, validate=pieces == 1)


ODD = ["a", "\u00e9", "\U0001f600", "\u2028", "\x00", "\r\n", "\r", "x" * 5000, ""]


def test_text_survives_compaction_in_order() -> None:
    """Deltas across many compactions, odd characters included, come out once and in order."""
    deltas = [ODD[i % len(ODD)] + str(i) for i in range(COMPACT_EVERY * 5 + 7)]
    acc = TextAcc()
    for d in deltas:
        acc.add(d)
        if len(acc.chunks) % 3 == 1:  # snapshots in between
            acc.value()
    assert acc.value() == "".join(deltas)
    assert acc.value() is acc.value()  # one string, shared by every snapshot
    assert "".join(acc.pieces()) == "".join(deltas)
    proc = StreamProcessor("openai", model="m", ids=CountingIds())
    proc.start()
    msg = proc.open("message")
    msg.part("output_text")
    for d in deltas:
        msg.text(d)
    msg.close()
    proc.finish()
    payloads = _payloads(proc.drain())
    assert payloads[-1]["response"]["output"][0]["content"][0]["text"] == "".join(deltas)
    check_stream(payloads, "openai")


@pytest.mark.parametrize("route", ["content", "tool_call"])
def test_from_chat_a_delta_costs_no_more(route: str) -> None:
    """From chat (text on the fast path, arguments on the general one): no copy per delta.

    The arguments of a call that streams live are not also kept in the converter.
    """
    proc = StreamProcessor("openai", model="m", ids=CountingIds())
    proc.start()
    conv = rs.ChatToResponses(proc)
    first: dict[str, Any] = (
        {"content": ""}
        if route == "content"
        else {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "f", "arguments": ""},
                }
            ]
        }
    )
    conv.feed({"choices": [{"index": 0, "delta": first}]})
    n = 100_000
    text = "pq" * n
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(0, len(text), 2):
            piece = text[i : i + 2]
            delta: dict[str, Any] = (
                {"content": piece}
                if route == "content"
                else {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
            )
            conv.feed({"choices": [{"index": 0, "delta": delta}]})
            proc.drain()  # as a server does after each chunk (the fast path needs it)
        conv.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        conv.end()
        events = proc.drain()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    item = events[-1].response.output[0]
    assert (item.content[0].text if route == "content" else item.arguments) == text
    assert (peak - base - len(text)) / n < BOUND
