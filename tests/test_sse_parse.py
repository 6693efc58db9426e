"""The incremental SSE parser: each WHATWG rule, and generated streams split anywhere."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import responses_stream as rs
from responses_stream import CountingIds
from responses_stream._runtime.core.sse import to_json
from responses_stream._runtime.core.sse_parse import (
    SSEDecodeError,
    SSELimitError,
    SSEMessage,
    SSEParser,
    aparse_sse,
    iter_payloads,
    parse_sse,
)

BOM = "\ufeff".encode()


def parse(*chunks: bytes) -> list[SSEMessage]:
    return list(parse_sse(chunks))


def msg(data: str, event: str | None = None, id: str | None = None) -> SSEMessage:
    return SSEMessage(event=event, data=data, id=id)


def test_event_and_data_dispatched_at_blank_line() -> None:
    assert parse(b'event: e\ndata: {"a": 1}\n\n') == [msg('{"a": 1}', "e")]


def test_feed_returns_messages_as_soon_as_they_complete() -> None:
    p = SSEParser()
    assert p.feed(b"data: a\n") == []
    assert p.feed(b"\ndata: b\n") == [msg("a")]
    assert p.feed(b"\n") == [msg("b")]
    assert p.close() == []


def test_multiline_data_joined_with_newline() -> None:
    assert parse(b"data: a\ndata:\ndata: b\n\n") == [msg("a\n\nb")]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_endings(eol: bytes) -> None:
    raw = b"event: e" + eol + b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    assert parse(raw) == [msg("a\nb", "e"), msg("c")]


def test_mixed_line_endings() -> None:
    assert parse(b"data: a\r\ndata: b\rdata: c\n\r\n") == [msg("a\nb\nc")]


def test_crlf_split_across_chunks_is_one_line_break() -> None:
    assert parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [msg("a\nb")]


def test_cr_at_chunk_end_dispatches_without_waiting() -> None:
    p = SSEParser()
    assert p.feed(b"data: a\r\r") == [msg("a")]
    assert p.feed(b"\ndata: b\n\n") == [msg("b")]  # the LF after CR is not a blank line


def test_cr_at_chunk_end_then_non_lf() -> None:
    assert parse(b"data: a\r", b"\r", b"data: b\r", b"\r") == [msg("a"), msg("b")]


def test_only_cr_and_lf_break_lines() -> None:
    data = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg"
    assert parse(f"data: {data}\n\n".encode()) == [msg(data)]


def test_comments_ignored() -> None:
    assert parse(b": keep-alive\ndata: a\n:\n: x: y\ndata: b\n\n: trailing\n\n") == [msg("a\nb")]


def test_id_kept_and_retry_ignored() -> None:
    raw = b"retry: 1000\nid: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: x\0y\ndata: d\n\n"
    # the last event id persists across events; "id" alone clears it; ids with NUL are ignored
    assert parse(raw) == [msg("a", id="7"), msg("b", id="7"), msg("c", id=""), msg("d", id="")]


def test_unknown_fields_ignored() -> None:
    assert parse(b"foo: bar\nData: x\ndata: a\n\n") == [msg("a")]


def test_field_without_colon_has_empty_value() -> None:
    assert parse(b"data\n\ndata\ndata\n\n") == [msg(""), msg("\n")]
    assert parse(b"event: e\nevent\ndata: a\n\n") == [msg("a")]


def test_only_one_leading_space_removed() -> None:
    assert parse(b"data:a\n\ndata:  b \n\ndata:\tc\n\nevent:  e\ndata: d:e\n\n") == [
        msg("a"),
        msg(" b "),
        msg("\tc"),
        msg("d:e", " e"),
    ]


def test_leading_bom_dropped_even_when_split() -> None:
    assert parse(BOM + b"data: a\n\n") == [msg("a")]
    assert parse(BOM[:1], BOM[1:2], BOM[2:] + b"data: a\n\n") == [msg("a")]
    assert parse(b"", BOM, b"data: a\n\n") == [msg("a")]


def test_bom_only_dropped_at_stream_start() -> None:
    # A second BOM makes the field name "\ufeffdata", an unknown field.
    assert parse(BOM + BOM + b"data: a\n\n") == []
    assert parse(b"data: a\n\n", BOM + b"data: b\n\n") == [msg("a")]
    assert parse(b"data: \xef\xbb\xbfa\n\n") == [msg("\ufeffa")]


def test_final_event_kept_without_blank_line() -> None:
    assert parse(b"data: a\n\nevent: e\ndata: b") == [msg("a"), msg("b", "e")]
    assert parse(b"data: a\n\ndata: b\n") == [msg("a"), msg("b")]
    assert parse(b"data: a\r") == [msg("a")]


def test_event_without_data_not_dispatched() -> None:
    assert parse(b"event: e\n\ndata: a\n\n") == [msg("a")]  # the name does not leak
    assert parse(b"event: e\nid: 1\n\n") == []
    assert parse(b"event: e") == []
    assert parse(b"\n\n\r\n\r\r") == []


def test_split_at_every_byte_inside_multibyte_characters() -> None:
    raw = "event: é\ndata: héllo 👋🏽 世界\n\n".encode()
    p = SSEParser()
    out = [m for i in range(len(raw)) for m in p.feed(raw[i : i + 1])]
    assert out + p.close() == [msg("héllo 👋🏽 世界", "é")]


def test_invalid_utf8_replaced() -> None:
    assert parse(b"data: a\xffb\n\n") == [msg("a\ufffdb")]
    assert parse(b"data: a\xe4\xb8") == [msg("a\ufffd")]  # truncated at close


def test_close_resets_the_parser() -> None:
    p = SSEParser()
    assert p.feed(b"event: e\nid: 1\ndata: a") == []
    assert p.close() == [msg("a", "e", "1")]
    assert p.feed(BOM + b"data: b\n\n") == [msg("b")]


def test_done_is_an_ordinary_message() -> None:
    (done,) = parse(b"data: [DONE]\n\n")
    assert done == msg("[DONE]") and done.is_done
    assert not msg("[DONE] ").is_done
    assert msg('{"type": "x"}').json() == {"type": "x"}


def test_iter_payloads_skips_done_and_exposes_event_and_type() -> None:
    raw = (
        b'event: a\ndata: {"type": "a", "n": 1}\n\n'
        b'data: {"type": "b"}\n\n'
        b'event: other\ndata: {"type": "c"}\n\n'
        b"data: [DONE]\n\n"
    )
    pairs = list(iter_payloads(parse_sse([raw])))
    assert [(m.event, p["type"]) for m, p in pairs] == [("a", "a"), (None, "b"), ("other", "c")]
    assert pairs[0][1] == {"type": "a", "n": 1}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "payload is a list"),
        ('{"n": 1}', 'no string "type"'),
        ('{"type": 3}', 'no string "type"'),
    ],
)
def test_iter_payloads_bad_data(data: str, reason: str) -> None:
    messages = [msg('{"type": "a"}'), msg("[DONE]"), msg(data, "e")]
    it = iter_payloads(messages)
    assert next(it)[1] == {"type": "a"}
    with pytest.raises(SSEDecodeError, match=r"SSE message 2 \(event 'e'\)") as info:
        next(it)
    assert isinstance(info.value, ValueError)
    assert info.value.index == 2 and info.value.message is messages[2]
    assert reason in str(info.value)


def test_aparse_sse() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for c in (BOM[:2], BOM[2:] + b"data: a\r", b"\n\r\ndata: \xe4", b"\xb8\x96"):
            yield c

    async def collect() -> list[SSEMessage]:
        return [m async for m in aparse_sse(chunks())]

    assert asyncio.run(collect()) == [msg("a"), msg("世")]


# ---- generated Responses streams, re-framed and split anywhere ----------------------------

TEXT = st.text(st.characters(codec="utf-8"), max_size=12)


def build_stream(dialect: str, deltas: list[str], tool_args: list[str]) -> tuple[list[Any], bytes]:
    d = rs.DIALECTS[dialect]
    r = d.emitter(ids=CountingIds(), model="m")
    events = r.created() + r.in_progress()
    m = r.message()
    events += m.open() + m.output_text_open()
    for delta in ["héllo 👋🏽 世界", *deltas]:
        events += m.output_text_delta(delta)
    events += m.output_text_done() + m.done()
    if tool_args:
        f = r.function_call(name="f", call_id="c1")
        events += f.open()
        for chunk in tool_args:
            events += f.delta(chunk)
        events += f.done()
    events += r.completed()
    enc = d.encoder()
    return events, b"".join(enc.encode(e) for e in events) + enc.close()


def reframe(raw: bytes, eol: str, bom: bool) -> bytes:
    # JSON escapes CR and LF, so every LF in the frame is a line ending.
    return (BOM if bom else b"") + raw.replace(b"\n", eol.encode())


def check(events: list[Any], dialect: str, messages: list[SSEMessage]) -> None:
    expected = [json.loads(to_json(e)) for e in events]
    pairs = list(iter_payloads(messages))
    assert [p for _, p in pairs] == expected
    assert [m.event for m, _ in pairs] == [p["type"] for p in expected]
    assert (messages[-1].is_done) == rs.DIALECTS[dialect].done_sentinel
    assert sum(m.is_done for m in messages) == int(rs.DIALECTS[dialect].done_sentinel)


STREAMS = {
    "dialect": st.sampled_from(sorted(rs.DIALECTS)),
    "deltas": st.lists(TEXT, max_size=4),
    "tool_args": st.lists(TEXT, max_size=3),
    "eol": st.sampled_from(["\n", "\r\n", "\r"]),
    "bom": st.booleans(),
    "data": st.data(),
}


def draw_pieces(data: st.DataObject, raw: bytes) -> list[bytes]:
    """``raw`` cut at random offsets, biased towards line breaks and multi-byte characters."""
    hot = [i + d for i, b in enumerate(raw) if b in b"\r\n" or b >= 0x80 for d in (0, 1)]
    anywhere = st.integers(min_value=0, max_value=len(raw))
    cut = st.one_of(anywhere, st.sampled_from(hot)) if hot else anywhere
    points = sorted({0, len(raw), *data.draw(st.lists(cut, max_size=40), label="cuts")})
    return [raw[a:b] for a, b in zip(points, points[1:], strict=False)]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(**STREAMS)
def test_generated_streams_split_anywhere(
    dialect: str,
    deltas: list[str],
    tool_args: list[str],
    eol: str,
    bom: bool,
    data: st.DataObject,
) -> None:
    events, raw = build_stream(dialect, deltas, tool_args)
    framed = reframe(raw, eol, bom)
    whole = parse(framed)
    check(events, dialect, whole)
    assert list(parse_sse(draw_pieces(data, framed))) == whole


@settings(max_examples=50, deadline=None, derandomize=True)
@given(**STREAMS)
def test_generated_streams_split_anywhere_async(
    dialect: str,
    deltas: list[str],
    tool_args: list[str],
    eol: str,
    bom: bool,
    data: st.DataObject,
) -> None:
    events, raw = build_stream(dialect, deltas, tool_args)
    framed = reframe(raw, eol, bom)
    split = draw_pieces(data, framed)

    async def chunks() -> AsyncIterator[bytes]:
        for piece in split:
            yield piece

    async def collect() -> list[SSEMessage]:
        return [m async for m in aparse_sse(chunks())]

    messages = asyncio.run(collect())
    check(events, dialect, messages)
    assert messages == parse(framed)


SSE_TEXTS = st.lists(
    st.sampled_from(
        [
            'data: {"a":1}\n\n',
            "data: x\ndata: y\n\n",
            'event: error\ndata: {"error":{}}\n\n',
            ": comment\n\n",
            "id: 7\ndata: z\n\n",
            "data:no-space\r\n\r\n",
            "event: e\n\n",
            "data: é€😀\r\r",
            "data: [DONE]\n\n",
            "retry: 5\ndata: w\n",
            "\n",
        ]
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(texts=SSE_TEXTS, data=st.data())
def test_feed_data_gives_the_data_of_what_feed_gives(texts: list[str], data: st.DataObject) -> None:
    raw = "".join(texts).encode()
    whole, only = SSEParser(), SSEParser()
    for piece in draw_pieces(data, raw):
        assert only.feed_data(piece) == [m.data for m in whole.feed(piece)]
    assert [m.data for m in only.close()] == [m.data for m in whole.close()]


def test_feed_data_over_a_cap_keeps_the_events_before_it() -> None:
    body = b"data: a\n\ndata: b\n\ndata: " + b"x" * 600 + b"\n\n"
    whole, only = SSEParser(max_event_bytes=500), SSEParser(max_event_bytes=500)
    with pytest.raises(SSELimitError) as by_feed:
        whole.feed(body)
    with pytest.raises(SSELimitError) as by_data:
        only.feed_data(body)
    assert [m.data for m in by_data.value.messages] == [m.data for m in by_feed.value.messages]
    assert [m.data for m in by_data.value.messages] == ["a", "b"]
