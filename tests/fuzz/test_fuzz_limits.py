"""Fuzz the producer's limits: random texts and items under random small limits.

Oracle: a small model of the limits (characters per item, items per response)
says when the stream must fail; the stream is then valid (our validator and the
openai SDK's strict models), ends with ``error`` (``limit_exceeded``) and
``response.failed`` exactly when the model says so, and every item carries the text
it was given before the delta that went over, exactly, in order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import event, example, given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from invariants import check_stream  # noqa: E402

import responses_stream as rs  # noqa: E402
from responses_stream import CountingIds, LimitExceeded, Limits, StreamProcessor  # noqa: E402

ODD = st.sampled_from(["\u00e9", "\U0001f600", "\u2028", "\x00", "\r\n", "\r", "x" * 300])
TEXTS = st.lists(st.one_of(st.text(max_size=6), ODD), min_size=1, max_size=3).map("".join)
KINDS = ("message", "reasoning", "function_call")
CHAT_KEYS = {"message": "content", "reasoning": "reasoning_content"}


def _payloads(events: list[Any], dialect: str) -> list[dict[str, Any]]:
    enc = rs.DIALECTS[dialect].encoder()
    return [json.loads(enc.encode(ev).decode().split("data: ", 1)[1]) for ev in events]


def _text_of(item: dict[str, Any]) -> str:
    if item["type"] == "function_call":
        return str(item["arguments"])
    parts = item.get("content") or []
    return "".join(p.get("text", "") for p in parts)


def _model(
    items: list[tuple[str, list[str]]], limits: Limits
) -> tuple[list[tuple[str, str]], bool]:
    """What must come out: (kind, text) per item, and whether a limit trips."""
    out: list[tuple[str, str]] = []
    max_chars = limits.max_item_text_chars or sys.maxsize
    max_items = limits.max_output_items or sys.maxsize
    for kind, deltas in items:
        if len(out) == max_items:
            return out, True
        text = ""
        for d in deltas:
            if len(text) + len(d) > max_chars:
                out.append((kind, text))
                return out, True
            text += d
        out.append((kind, text))
    return out, False


LIMITS = st.builds(
    Limits,
    max_item_text_chars=st.one_of(st.none(), st.integers(1, 40)),
    max_output_items=st.one_of(st.none(), st.integers(1, 5)),
)
ITEMS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.lists(TEXTS, min_size=1, max_size=6)),
    min_size=1,
    max_size=6,
)


def _check(payloads: list[dict[str, Any]], dialect: str, expected: Any, trips: bool) -> None:
    check_stream(payloads, dialect)
    event("limit tripped" if trips else "completed")
    final = payloads[-1]
    if trips:
        assert [p["type"] for p in payloads[-2:]] == ["error", "response.failed"]
        error = payloads[-2] if dialect == "openai" else payloads[-2]["error"]
        assert error["code"] == "limit_exceeded"
    else:
        assert final["type"] == "response.completed"
    got = [(i["type"], _text_of(i)) for i in final["response"]["output"]]
    assert got == expected


@given(st.sampled_from(("openai", "openresponses")), LIMITS, ITEMS)
def test_direct_api_under_random_limits(dialect: str, limits: Limits, items: Any) -> None:
    proc = StreamProcessor(dialect, ids=CountingIds(), limits=limits)
    proc.start()
    expected, trips = _model(items, limits)
    raised = False
    try:
        for kind, deltas in items:
            if kind == "function_call":
                handle = proc.open(kind, name="f", call_id="call_1")
                for d in deltas:
                    handle.delta(d)
            else:
                handle = proc.open(kind)
                handle.part("output_text" if kind == "message" else "reasoning_text")
                for d in deltas:
                    handle.text(d)
        proc.finish()
    except LimitExceeded:
        raised = True
    assert raised == trips
    _check(_payloads(proc.drain(), dialect), dialect, expected, trips)


THREE = [("message", ["0"]), ("reasoning", [""]), ("message", ["0"])]


# found by make fuzz: an empty reasoning delta between two answers (one message)
@example("openai", Limits(max_item_text_chars=None, max_output_items=None), THREE)
@example("openai", Limits(max_item_text_chars=1, max_output_items=None), THREE)
@example("openai", Limits(max_item_text_chars=None, max_output_items=1), THREE)
@given(st.sampled_from(("openai", "openresponses")), LIMITS, ITEMS)
def test_chat_under_random_limits(dialect: str, limits: Limits, items: Any) -> None:
    # Consecutive text items of one kind would merge into one item: keep kinds alternating.
    merged: list[tuple[str, list[str]]] = []
    for kind, deltas in items:
        if merged and merged[-1][0] == kind and kind != "function_call":
            merged[-1][1].extend(deltas)
        else:
            merged.append((kind, list(deltas)))
    chunks: list[dict[str, Any]] = []
    for n, (kind, deltas) in enumerate(merged):
        for i, d in enumerate(deltas):
            if kind == "function_call":
                fn: dict[str, Any] = {"arguments": d}
                frag: dict[str, Any] = {"index": n, "function": fn}
                if i == 0:
                    fn["name"], frag["id"], frag["type"] = "f", f"call_{n}", "function"
                delta: dict[str, Any] = {"tool_calls": [frag]}
            else:
                delta = {CHAT_KEYS[kind]: d}
            chunks.append({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    # Empty deltas never reach the chat side's items: the model sees what is sent.
    # Dropping them can leave two text items of one kind side by side: they merge too.
    sent: list[tuple[str, list[str]]] = []
    for kind, deltas in merged:
        kept = [d for d in deltas if d]
        if not kept and kind != "function_call":
            continue
        if sent and sent[-1][0] == kind and kind != "function_call":
            sent[-1][1].extend(kept)
        else:
            sent.append((kind, kept))
    expected, trips = _model(sent, limits)
    payloads = _payloads(list(rs.events_from_chat(chunks, dialect=dialect, limits=limits)), dialect)
    _check(payloads, dialect, expected, trips)
