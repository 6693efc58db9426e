"""Limits on what one stream accumulates: text per item and items per response.

Each limit is tripped through the direct API, from chat (events and SSE, the fast path
and the general one, live and buffered tool calls) and from Harmony.  Every time the
stream must end with ``error`` (code ``limit_exceeded``, a message naming the limit and
its value) and ``response.failed``, every item closed, the text received before the
offending delta kept exactly; the stream is checked by our validator and the openai
SDK's strict models (``check_stream``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from invariants import check_stream

import responses_stream as rs
from responses_stream import (
    CountingIds,
    HarmonyToResponses,
    LimitExceeded,
    Limits,
    ProcessorError,
    StreamProcessor,
    events_from_chat,
    sse_from_chat,
)

DIALECTS = ("openai", "openresponses")


def _payloads(events: list[Any], dialect: str) -> list[dict[str, Any]]:
    enc = rs.DIALECTS[dialect].encoder()
    return [json.loads(enc.encode(ev).decode().split("data: ", 1)[1]) for ev in events]


def _sse_payloads(frames: list[bytes]) -> list[dict[str, Any]]:
    out = []
    for frame in frames:
        data = frame.decode().split("data: ", 1)[1].strip()
        if data != "[DONE]":
            out.append(json.loads(data))
    return out


def _assert_limit_failure(payloads: list[dict[str, Any]], dialect: str, limit: str, value: int):
    """A clean limit failure: error then failed, last; valid; every item closed."""
    check_stream(payloads, dialect)
    types = [p["type"] for p in payloads]
    assert types[-2:] == ["error", "response.failed"], types[-4:]
    error = payloads[-2] if dialect == "openai" else payloads[-2]["error"]
    assert error["code"] == "limit_exceeded"
    assert f"Limits.{limit}={value}" in error["message"]
    response = payloads[-1]["response"]
    assert response["status"] == "failed"
    assert f"Limits.{limit}={value}" in response["error"]["message"]
    assert all(item["status"] != "in_progress" for item in response["output"])
    added = [p["item"]["id"] for p in payloads if p["type"] == "response.output_item.added"]
    done = [p["item"]["id"] for p in payloads if p["type"] == "response.output_item.done"]
    assert added == done == [item["id"] for item in response["output"]]
    return response


def _chat(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _call(index: int, args: str, name: str | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {"arguments": args}
    frag: dict[str, Any] = {"index": index, "function": fn}
    if name is not None:
        fn["name"] = name
        frag["id"] = f"call_{index}"
        frag["type"] = "function"
    return _chat({"tool_calls": [frag]})


# -- the dataclass ------------------------------------------------------------
def test_defaults_are_the_documented_ones() -> None:
    limits = Limits()
    assert limits.max_item_text_chars == 64 * 1024 * 1024
    assert limits.max_output_items == 4096
    assert limits.max_line_bytes == 16 * 1024 * 1024
    assert limits.max_event_bytes == 64 * 1024 * 1024
    assert StreamProcessor("openai").limits == limits


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
def test_a_limit_must_be_a_positive_int_or_none(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_output_items"):
        Limits(max_output_items=bad)
    with pytest.raises(ProcessorError, match="limits must be a Limits"):
        StreamProcessor("openai", limits={"max_output_items": 3})  # type: ignore[arg-type]


def test_none_disables_a_limit() -> None:
    proc = StreamProcessor("openai", ids=CountingIds(), limits=Limits(max_output_items=None))
    proc.start()
    for _ in range(4100):
        proc.open("reasoning").close()
    proc.finish()
    payloads = _payloads(proc.drain(), "openai")
    assert payloads[-1]["type"] == "response.completed"
    assert len(payloads[-1]["response"]["output"]) == 4100


# -- direct API ---------------------------------------------------------------
@pytest.mark.parametrize("dialect", DIALECTS)
def test_direct_text_over_the_limit(dialect: str) -> None:
    proc = StreamProcessor(dialect, ids=CountingIds(), limits=Limits(max_item_text_chars=10))
    proc.start()
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("héllo")
    msg.part("refusal")  # the limit is per item, over all its parts
    msg.text("wörld")
    with pytest.raises(LimitExceeded) as info:
        msg.text("!")
    assert isinstance(info.value, ProcessorError)
    assert (info.value.limit, info.value.value, info.value.code) == (
        "max_item_text_chars",
        10,
        "limit_exceeded",
    )
    assert proc.ended
    with pytest.raises(ProcessorError, match="has ended"):
        msg.text("more")
    response = _assert_limit_failure(
        _payloads(proc.drain(), dialect), dialect, info.value.limit, 10
    )
    (item,) = response["output"]
    assert item["status"] == "incomplete"
    texts = [part.get("text", part.get("refusal")) for part in item["content"]]
    assert texts == ["héllo", "wörld"]


@pytest.mark.parametrize("item_type", ["function_call", "custom_tool_call"])
def test_direct_item_deltas_over_the_limit(item_type: str) -> None:
    proc = StreamProcessor("openai", ids=CountingIds(), limits=Limits(max_item_text_chars=8))
    proc.start()
    proc.open("message").close()
    call = proc.open(item_type, name="f", call_id="call_1")
    call.delta('{"a":')
    call.delta("1}")
    with pytest.raises(LimitExceeded, match="max_item_text_chars=8"):
        call.delta("  ")
    response = _assert_limit_failure(
        _payloads(proc.drain(), "openai"), "openai", "max_item_text_chars", 8
    )
    field = "arguments" if item_type == "function_call" else "input"
    assert response["output"][1][field] == '{"a":1}'


def test_exactly_at_the_limit_is_fine() -> None:
    proc = StreamProcessor("openai", ids=CountingIds(), limits=Limits(max_item_text_chars=4))
    proc.start()
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("ab")
    msg.text("cd")
    proc.open("message").close()  # the count is per item: a new item starts from zero
    proc.finish()
    payloads = _payloads(proc.drain(), "openai")
    check_stream(payloads, "openai")
    assert payloads[-1]["response"]["output"][0]["content"][0]["text"] == "abcd"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_direct_items_over_the_limit(dialect: str) -> None:
    proc = StreamProcessor(dialect, ids=CountingIds(), limits=Limits(max_output_items=3))
    proc.start()
    proc.open("reasoning").close()
    proc.open("function_call", name="f", call_id="c1").delta("{}")
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("kept")
    with pytest.raises(LimitExceeded, match="max_output_items=3"):
        proc.open("message")
    response = _assert_limit_failure(
        _payloads(proc.drain(), dialect), dialect, "max_output_items", 3
    )
    assert [item["type"] for item in response["output"]] == [
        "reasoning",
        "function_call",
        "message",
    ]
    assert response["output"][2]["content"][0]["text"] == "kept"


def test_default_item_limit_trips_at_4097() -> None:
    proc = StreamProcessor("openai", ids=CountingIds())
    proc.start()
    for _ in range(4096):
        proc.open("reasoning").close()
    with pytest.raises(LimitExceeded, match="max_output_items=4096"):
        proc.open("reasoning")
    payloads = _payloads(proc.drain(), "openai")
    assert [p["type"] for p in payloads[-2:]] == ["error", "response.failed"]
    assert len(payloads[-1]["response"]["output"]) == 4096
    assert rs.validate_payloads(payloads, "openai") == []


def test_fail_on_limit_off_leaves_the_ending_to_the_caller() -> None:
    proc = StreamProcessor("openai", ids=CountingIds(), limits=Limits(max_item_text_chars=2))
    proc.fail_on_limit = False
    proc.start()
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("ab")
    with pytest.raises(LimitExceeded):
        msg.text("c")
    assert not proc.ended
    proc.fail("over the limit", code="limit_exceeded")
    payloads = _payloads(proc.drain(), "openai")
    check_stream(payloads, "openai")
    assert payloads[-1]["response"]["output"][0]["content"][0]["text"] == "ab"


# -- from chat ----------------------------------------------------------------
def _from_chat(chunks: list[Any], dialect: str, limits: Limits, sse: bool) -> list[dict[str, Any]]:
    if sse:
        return _sse_payloads(list(sse_from_chat(chunks, dialect=dialect, limits=limits)))
    return _payloads(list(events_from_chat(chunks, dialect=dialect, limits=limits)), dialect)


@pytest.mark.parametrize("raw", [False, True], ids=["dicts", "data-lines"])
@pytest.mark.parametrize("sse", [False, True], ids=["events", "sse"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_chat_text_over_the_limit(dialect: str, sse: bool, raw: bool) -> None:
    """Plain content deltas (the fast path): the text up to the limit is kept."""
    chunks: list[Any] = [_chat({"role": "assistant", "content": ""})]
    chunks += [_chat({"content": "ab\u2028"}) for _ in range(40)]
    chunks += [_chat({}, "stop")]
    if raw:
        chunks = [json.dumps(c) for c in chunks] + ["[DONE]"]
    payloads = _from_chat(chunks, dialect, Limits(max_item_text_chars=100), sse)
    response = _assert_limit_failure(payloads, dialect, "max_item_text_chars", 100)
    (item,) = response["output"]
    assert item["content"][0]["text"] == "ab\u2028" * 33  # 99 characters; the 34th delta is over


@pytest.mark.parametrize("dialect", DIALECTS)
def test_chat_reasoning_over_the_limit(dialect: str) -> None:
    chunks = [_chat({"reasoning_content": "think "}) for _ in range(5)]
    chunks += [_chat({"content": "answer"}), _chat({}, "stop")]
    payloads = _from_chat(chunks, dialect, Limits(max_item_text_chars=20), False)
    response = _assert_limit_failure(payloads, dialect, "max_item_text_chars", 20)
    (item,) = response["output"]
    assert item["type"] == "reasoning"
    assert json.dumps(item).count("think ") == 3


@pytest.mark.parametrize("sse", [False, True], ids=["events", "sse"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_chat_tool_arguments_over_the_limit(dialect: str, sse: bool) -> None:
    chunks = [_call(0, '{"city":', name="get_weather")]
    chunks += [_call(0, ' "Paris"') for _ in range(4)]
    chunks += [_chat({}, "tool_calls")]
    payloads = _from_chat(chunks, dialect, Limits(max_item_text_chars=30), sse)
    response = _assert_limit_failure(payloads, dialect, "max_item_text_chars", 30)
    (item,) = response["output"]
    assert item["arguments"] == '{"city":' + ' "Paris"' * 2


@pytest.mark.parametrize("dialect", DIALECTS)
def test_chat_buffered_call_over_the_limit_keeps_every_call(dialect: str) -> None:
    """Call 1 is buffered while call 0 streams; its arguments trip the limit.

    The stream fails, and both calls are in the final Response with what came.
    """
    chunks = [_call(0, '{"a":', name="f"), _call(1, '{"b":', name="g")]
    chunks += [_call(1, "22222") for _ in range(3)]
    chunks += [_call(0, "1}"), _chat({}, "tool_calls")]
    payloads = _from_chat(chunks, dialect, Limits(max_item_text_chars=16), False)
    response = _assert_limit_failure(payloads, dialect, "max_item_text_chars", 16)
    assert [(i["name"], i["arguments"]) for i in response["output"]] == [
        ("f", '{"a":'),
        ("g", '{"b":2222222222'),
    ]


@pytest.mark.parametrize("sse", [False, True], ids=["events", "sse"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_chat_items_over_the_limit(dialect: str, sse: bool) -> None:
    """Four tool calls, three allowed: interleaved, so call 1 and 2 wait in a buffer."""
    chunks = [_chat({"reasoning_content": "hm"})]
    chunks += [_call(i, "{", name=f"f{i}") for i in range(2)]
    chunks += [_call(1, "}"), _call(2, "{}", name="f2"), _call(0, "}"), _chat({}, "tool_calls")]
    payloads = _from_chat(chunks, dialect, Limits(max_output_items=3), sse)
    response = _assert_limit_failure(payloads, dialect, "max_output_items", 3)
    assert [i["type"] for i in response["output"]] == [
        "reasoning",
        "function_call",
        "function_call",
    ]
    assert [i.get("arguments") for i in response["output"][1:]] == ["{", "{}"]


def test_chat_items_over_the_limit_from_text_after_calls() -> None:
    chunks = [_call(0, "{}", name="f"), _chat({"content": "then text"}), _chat({}, "stop")]
    payloads = _from_chat(chunks, "openai", Limits(max_output_items=1), False)
    response = _assert_limit_failure(payloads, "openai", "max_output_items", 1)
    assert [i["type"] for i in response["output"]] == ["function_call"]


def test_cli_default_limits_hold_a_long_answer() -> None:
    """Under the default limits an ordinary long answer is not affected."""
    chunks = [_chat({"content": "word " * 1000}) for _ in range(100)] + [_chat({}, "stop")]
    payloads = _from_chat(chunks, "openai", Limits(), True)
    assert payloads[-1]["type"] == "response.completed"
    assert len(payloads[-1]["response"]["output"][0]["content"][0]["text"]) == 500_000


# -- harmony ------------------------------------------------------------------
@pytest.mark.parametrize("recipient", [None, "functions.get_weather", "browser.search"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_harmony_over_the_limit(dialect: str, recipient: str | None) -> None:
    proc = StreamProcessor(dialect, ids=CountingIds(), limits=Limits(max_item_text_chars=12))
    conv = HarmonyToResponses(proc)
    conv.segment("analysis", None, "thinking")
    conv.end_message()
    channel = "final" if recipient is None else "commentary"
    conv.segment(channel, recipient, '{"query":')
    with pytest.raises(LimitExceeded, match="max_item_text_chars=12"):
        conv.segment(channel, recipient, ' "x"}')
    response = _assert_limit_failure(
        _payloads(proc.drain(), dialect), dialect, "max_item_text_chars", 12
    )
    assert len(response["output"]) == 2
    assert "thinking" in json.dumps(response["output"][0])
    if recipient is None:
        assert response["output"][1]["content"][0]["text"] == '{"query":'
    elif recipient.startswith("functions."):
        assert response["output"][1]["arguments"] == '{"query":'
