"""The conversion fast paths say exactly what the general paths say.

- ``convert.loads`` (msgspec, then ``json.loads`` for what msgspec refuses) returns what
  ``json.loads`` returns and raises what it raises;
- ``ChatToResponses`` sends a plain text delta straight to the open part (``feed``) or to
  the emitter's ``*_sse`` method (``feed_sse``/``feed_data_sse``): the bytes equal those of
  the general path, for random streams that mix plain deltas with everything that must
  leave the fast path;
- ``ResponsesToChat.feed_sse`` splices text deltas into pre-encoded JSON: the bytes equal
  ``feed``'s chunks framed one by one, whatever the options and input.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from responses_stream import (
    DIALECTS,
    ChatToResponses,
    CountingIds,
    ResponsesToChat,
    StreamProcessor,
    events_from_chat,
    sse_from_chat,
)
from responses_stream._runtime.consumers.to_chat import _frame
from responses_stream._runtime.core.convert import loads

SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
REQUEST = {"model": "m", "tools": [{"type": "function", "name": "f", "parameters": {}}]}


# -- loads ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"a":2}',
        "123456789012345678901234567890",
        "1e400",
        "-1e400",
        "NaN",
        "-Infinity",
        '"\\ud800"',
        '"\\udc00x"',
        '"\\ud83d\\ude00"',
        '"\ud800"',
        '"a\x01b"',
        "[1,]",
        "{'a': 1}",
        "01",
        ".5",
        "",
        " ",
        '{"a":1}x',
        "\ufeff{}",
        ' {"choices": [{"delta": {"content": "é\\n"}}]} ',
        "[" * 100_000,
    ],
)
def test_loads_is_json_loads(text: str) -> None:
    try:
        expected: Any = ("ok", json.loads(text))
    except (ValueError, RecursionError) as exc:
        expected = ("error", type(exc), str(exc))
    try:
        got: Any = ("ok", loads(text))
    except (ValueError, RecursionError) as exc:
        got = ("error", type(exc), str(exc))
    if expected[0] == "ok" and got[0] == "ok":
        assert json.dumps(got[1]) == json.dumps(expected[1])
        assert type(got[1]) is type(expected[1])
    else:
        assert got == expected


# -- chat -> responses ------------------------------------------------------------------------
class GeneralPath(ChatToResponses):
    """The converter with its fast path switched off."""

    def _plain_text(self, chunk: Any) -> str | None:
        return None

    def _live_args(self, chunk: Any) -> Any:
        return None


def _chunk(choices: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"} | {
        "choices": [] if choices is None else choices,
        **extra,
    }


def _one(delta: Any, **choice: Any) -> dict[str, Any]:
    return _chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None} | choice])


texts = st.text(max_size=6)
LOGPROBS = {"content": [{"token": "a", "logprob": -0.5, "bytes": [97], "top_logprobs": []}]}


@st.composite
def chat_chunk(draw: st.DrawFn) -> Any:
    t = draw(texts)
    kind = draw(st.integers(0, 32))
    # mostly plain deltas, the bulk of real streams
    if kind <= 8:
        return _one({"content": t or "x"})
    return [
        lambda: _one({"role": "assistant", "content": ""}),
        lambda: _one({"content": t, "reasoning_content": None, "tool_calls": None}),
        lambda: _one({"content": t, "refusal": draw(st.sampled_from(["", None, "no"]))}),
        lambda: _one({"content": t, "reasoning": draw(st.sampled_from(["", 5, "hm"]))}),
        lambda: _one({"content": t}, logprobs=draw(st.sampled_from([LOGPROBS, {}, None]))),
        lambda: _one({"content": t}) | {"usage": {"prompt_tokens": 1, "completion_tokens": 2}},
        lambda: _one({"content": t}, finish_reason=draw(st.sampled_from(["stop", "length"]))),
        lambda: _one({"reasoning_content": t}),
        lambda: _one({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f"}}]}),
        lambda: _one({"tool_calls": [{"index": 0, "function": {"arguments": t}}]}),
        # a second call, whose arguments wait while the first is live
        lambda: _one({"tool_calls": [{"index": 1, "id": "call_2", "function": {"name": "g"}}]}),
        lambda: _one({"tool_calls": [{"index": 1, "function": {"arguments": t}}]}),
        lambda: _one({"tool_calls": [{"index": 1, "function": {"arguments": t, "name": ""}}]}),
        # shapes the typed decode of the fast path refuses or reads differently
        lambda: _chunk([{"index": True, "delta": {"content": t}}]),
        lambda: _chunk(["x"]),
        lambda: {"choices": None, "usage": None},
        lambda: _chunk([{"index": None, "delta": {"content": t}}]),
        lambda: _chunk([{"index": 1, "delta": {"content": t}}]),
        lambda: _chunk([{"index": 0, "delta": {"content": t}}, {"delta": {"content": "2"}}]),
        lambda: _one({"content": draw(st.sampled_from([5, None, ["x"]]))}),
        lambda: _one(draw(st.sampled_from(["x", None, []]))),
        lambda: _chunk(),
        lambda: draw(st.sampled_from(["not json", "[1]", "[DONE]", " [DONE] "])),
        lambda: {"error": {"message": "overloaded"}},
    ][kind - 9]()


@st.composite
def chat_streams(draw: st.DrawFn) -> tuple[list[Any], bool]:
    chunks = draw(st.lists(chat_chunk(), max_size=25))
    raw = [json.dumps(c) if not isinstance(c, str) and draw(st.booleans()) else c for c in chunks]
    return raw, draw(st.booleans())  # the chunks, and whether to end() afterwards


def _proc(dialect: str) -> StreamProcessor:
    return StreamProcessor(dialect, request=REQUEST, created_at=1, ids=CountingIds())


def _run_typed(conv: ChatToResponses, chunks: list[Any], end: bool) -> list[bytes]:
    enc = conv.proc.dialect.encoder()
    out: list[bytes] = []
    for c in chunks:
        if isinstance(c, str):
            conv.feed_data(c)
        else:
            conv.feed(c)
        out += [enc.encode(ev) for ev in conv.proc.drain()]
    if end:
        conv.end()
        out += [enc.encode(ev) for ev in conv.proc.drain()]
    if conv.proc.ended and enc.close():
        out.append(enc.close())
    return out


def _run_sse(conv: ChatToResponses, chunks: list[Any], end: bool) -> list[bytes]:
    out: list[bytes] = []
    for c in chunks:
        out += conv.feed_data_sse(c) if isinstance(c, str) else conv.feed_sse(c)
    if end:
        out += conv.end_sse()
    return out


def _run_lists(conv: ChatToResponses, chunks: list[Any], end: bool) -> list[bytes]:
    """``_run_sse`` with each run of payloads (str) given in one ``feed_payloads_sse``."""
    out: list[bytes] = []
    run: list[str] = []
    for c in chunks:
        if isinstance(c, str):
            run.append(c)
            continue
        out += conv.feed_payloads_sse(run) + conv.feed_sse(c)
        run = []
    out += conv.feed_payloads_sse(run)
    if end:
        out += conv.end_sse()
    return out


def _old_sse_from_chat(chunks: list[Any], dialect: str) -> list[bytes]:
    """``sse_from_chat`` as it was: typed events, encoded, then the closing frame."""
    enc = DIALECTS[dialect].encoder()
    events = events_from_chat(
        chunks, dialect=dialect, request=REQUEST, created_at=1, ids=CountingIds()
    )
    frames = [enc.encode(ev) for ev in events]
    return frames + ([enc.close()] if enc.close() else [])


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(max_examples=300, **SETTINGS)
@given(stream=chat_streams())
def test_chat_fast_path_is_the_general_path(dialect: str, stream: tuple[list[Any], bool]) -> None:
    chunks, end = stream
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time, "time", lambda: 1_700_000_000.0)
        expected = _run_typed(GeneralPath(_proc(dialect), REQUEST), chunks, end)
        assert _run_typed(ChatToResponses(_proc(dialect), REQUEST), chunks, end) == expected
        assert _run_sse(ChatToResponses(_proc(dialect), REQUEST), chunks, end) == expected
        assert _run_lists(ChatToResponses(_proc(dialect), REQUEST), chunks, end) == expected
        kw: dict[str, Any] = {"request": REQUEST, "created_at": 1, "ids": CountingIds()}
        new = list(sse_from_chat(chunks, dialect=dialect, **kw))
        assert new == _old_sse_from_chat(chunks, dialect)


@pytest.mark.parametrize("in_list", [False, True])
def test_chat_fast_path_is_taken(in_list: bool) -> None:
    """A plain text stream's deltas but the first are framed by ``feed_payloads_sse``
    itself, one payload at a time (``feed_data_sse``) or in a list: only the chunks
    before the part opened go on to the other paths (``_one_sse``)."""
    conv = ChatToResponses(_proc("openai"))
    called = []
    one = conv._one_sse
    conv._one_sse = lambda data: called.append(data) or one(data)  # type: ignore[method-assign]
    payloads = [json.dumps(_one({"content": t})) for t in ["", "a", "b", "c", "d"]]
    if in_list:
        frames = conv.feed_payloads_sse(payloads)
    else:
        frames = [f for p in payloads for f in conv.feed_data_sse(p)]
    assert called == payloads[:2]
    assert [f.count(b"response.output_text.delta") for f in frames[-3:]] == [2, 2, 2]
    assert b'"delta":"d"' in frames[-1]


def test_chat_fast_path_keeps_a_waiting_calls_arguments() -> None:
    """Two calls one after the other: the second call's arguments, which wait while the
    first is live, take the fast path too, and the stream is the general path's."""
    first = [_one({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f"}}]})]
    first += [_one({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}) for a in "{}"]
    second = [_one({"tool_calls": [{"index": 1, "id": "call_2", "function": {"name": "g"}}]})]
    second += [
        _one({"tool_calls": [{"index": 1, "function": {"arguments": a}}]}) for a in '{"x":1}'
    ]
    chunks = [json.dumps(c) for c in first + second] + [json.dumps(_one({}, finish_reason="stop"))]
    conv = ChatToResponses(_proc("openai"), REQUEST)
    waiting: list[str] = []  # the arguments taken while their call's item was not open
    live = conv._live_args

    def spy(chunk: Any) -> Any:
        found = live(chunk)
        if found is not None and found[0].handle is None:
            waiting.append(found[1])
        return found

    conv._live_args = spy  # type: ignore[method-assign]
    frames = _run_sse(conv, chunks, True)
    assert frames == _run_sse(GeneralPath(_proc("openai"), REQUEST), chunks, True)
    assert "".join(waiting) == '{"x":1}'  # each of the second call's fragments
    assert b'"arguments":"{\\"x\\":1}"' in b"".join(frames)


def test_chat_fast_path_keeps_pending_events_first() -> None:
    """Events left in the processor by ``feed`` come out before a fast-path frame."""
    conv = ChatToResponses(_proc("openai"))
    for t in ["a", "b"]:
        conv.feed(_one({"content": t}))
    frames = conv.feed_sse(_one({"content": "c"}))
    kinds = [f.split(b"\n", 1)[0] for f in frames]
    assert kinds[:2] == [b"event: response.created", b"event: response.in_progress"]
    assert kinds[-3:] == [b"event: response.output_text.delta"] * 3


# -- responses -> chat ------------------------------------------------------------------------
@st.composite
def responses_streams(draw: st.DrawFn) -> tuple[str, list[Any], dict[str, Any]]:
    dialect = draw(st.sampled_from(sorted(DIALECTS)))
    chunks = draw(st.lists(chat_chunk(), max_size=25))
    if draw(st.booleans()):
        chunks.append(_one({}, finish_reason="stop"))
    proc = _proc(dialect)
    frames = _run_sse(ChatToResponses(proc, REQUEST), chunks, draw(st.booleans()))
    payloads: list[Any] = [
        json.loads(line[6:])
        for frame in frames
        for line in frame.decode().split("\n")
        if line.startswith("data: ") and line != "data: [DONE]"
    ]
    # interleave oddities: identity on a delta, unknown items, junk, and the sentinel
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(payloads)))
        payloads.insert(
            at,
            draw(
                st.sampled_from(
                    [
                        {"type": "response.output_text.delta", "item_id": "x", "delta": "zz"},
                        {
                            "type": "response.output_text.delta",
                            "delta": "yy",
                            "content_index": 3,
                            "response": {"id": "r2", "created_at": 5, "model": "n"},
                        },
                        {"type": "response.output_text.delta", "delta": ""},
                        {"type": "response.output_text.delta", "delta": 7},
                        {"type": "response.reasoning_text.delta", "item_id": "x", "delta": "r"},
                        {"type": "response.reasoning_summary_text.delta", "delta": "s"},
                        "[DONE]",
                        "not json",
                        "[1, 2]",
                    ]
                )
            ),
        )
    as_text = draw(st.sampled_from(["dict", "str", "bytes", "mixed"]))

    def wire(p: Any) -> Any:
        if isinstance(p, str) or as_text == "dict":
            return p
        mode = draw(st.sampled_from(["str", "bytes", "dict"])) if as_text == "mixed" else as_text
        text = json.dumps(p, ensure_ascii=draw(st.booleans()))
        return text if mode == "str" else text.encode() if mode == "bytes" else p

    options = {
        "reasoning": draw(st.sampled_from(["reasoning_content", "reasoning", "think", "omit"])),
        "include_usage": draw(st.booleans()),
        "hosted": draw(st.sampled_from(["omit", "content"])),
        "dialect": dialect,
        "model": draw(st.sampled_from([None, "gpt-x"])),
        "chunk_id": draw(st.sampled_from([None, "chatcmpl-fixed"])),
        "created": draw(st.sampled_from([None, 42])),
    }
    return dialect, [wire(p) for p in payloads], options


@settings(max_examples=400, **SETTINGS)
@given(case=responses_streams())
def test_to_chat_feed_sse_is_feed_framed(case: tuple[str, list[Any], dict[str, Any]]) -> None:
    _, payloads, options = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time, "time", lambda: 1_700_000_000.0)
        mp.setattr("uuid.uuid4", lambda: type("U", (), {"hex": "f" * 32})())
        ref, fast = ResponsesToChat(**options), ResponsesToChat(**options)
        for p in payloads:
            assert fast.feed_sse(p) == [_frame(c) for c in ref.feed(p)]
        assert [_frame(c) for c in fast.close()] == [_frame(c) for c in ref.close()]


def test_to_chat_feed_sse_follows_identity_changes() -> None:
    conv = ResponsesToChat(model="a", chunk_id="chatcmpl-1", created=1)
    delta = {"type": "response.output_text.delta", "item_id": "m", "delta": 'q"\n✓'}
    first, second = conv.feed_sse(delta), conv.feed_sse(delta)
    assert json.loads(second[0][6:])["choices"][0]["delta"] == {"content": 'q"\n✓'}
    assert "role" in json.loads(first[0][6:])["choices"][0]["delta"]
    conv.model = "b"
    conv.include_usage = True
    chunk = json.loads(conv.feed_sse(delta)[0][6:])
    assert (chunk["model"], chunk["usage"]) == ("b", None)
