"""Fuzz the consumers: the SSE parser, the validator, the accumulator and to-chat.

Inputs are random bytes, and valid streams (genuine recordings and the
project's own processor output) corrupted at random: bytes flipped, cut,
deleted, duplicated or inserted, split into chunks at random points; events
dropped, duplicated or swapped; NaN, numbers beyond the double range,
negative indexes, lone surrogates and values of the wrong type put into
random fields.

Oracles: the parser yields messages or raises ``SSELimitError`` only; the
validator returns violations and never raises; the accumulator folds or
raises ``AccumulateError`` only; every to-chat frame is a chunk the official
SDK's ``ChatCompletionChunk`` model accepts (or one final error payload),
ending with a finish chunk or an error, then ``[DONE]``.  On the streams
left intact the validator finds no error, the accumulator folds, and every
character of the text reaches the chat stream once, in order (a lone
surrogate as U+FFFD).
"""

from __future__ import annotations

import copy
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from recordings_support import is_reference, is_untouched, responses_files, streams  # noqa: E402
from test_consumers_hostile import check_chat  # noqa: E402

from responses_stream import (  # noqa: E402
    AccumulateError,
    CountingIds,
    ResponseAccumulator,
    StreamProcessor,
    StreamValidator,
)
from responses_stream._runtime.consumers.to_chat import chat_sse_from_sse  # noqa: E402
from responses_stream._runtime.core.sse_parse import (  # noqa: E402
    SSELimitError,
    parse_sse,
    replace_surrogates,
)

Stream = list[dict[str, Any]]
CAPS = {"max_line_bytes": 4096, "max_event_bytes": 8192}  # small, so fuzzing reaches them
HUGE = "__huge_number__"  # replaced by a number beyond the double range once serialized
LONE = "\ud800"


# -- seeds ---------------------------------------------------------------------------------
def _processor_streams() -> list[Stream]:
    out: list[Stream] = []
    for dialect in ("openai", "openresponses"):
        p = StreamProcessor(dialect, model="m", ids=CountingIds(), created_at=1_700_000_000)
        p.start()
        r = p.open("reasoning")
        r.part("summary_text")
        r.text("plan")
        r.text("ned")
        r.close()
        m = p.open("message")
        m.part("output_text")
        for piece in ("Hé", "llo\u2028", " wörld"):
            m.text(piece)
        m.close()
        f = p.open("function_call", call_id="call_1", name="get")
        f.delta('{"q":')
        f.delta('"x"}')
        f.close()
        p.finish()
        enc = p.dialect.encoder()
        out.append([json.loads(enc.encode(e).split(b"data: ", 1)[1]) for e in p.drain()])
    return out


@cache
def seeds() -> list[Stream]:
    """Valid, complete streams: small untouched reference recordings, and our own."""
    found = [
        s
        for name in responses_files()
        if is_reference(name) and is_untouched(name)
        for s in streams(name)
        if len(s) <= 60 and s[-1]["type"].startswith("response.")
    ]
    return found + _processor_streams()


def sse(stream: Stream) -> bytes:
    text = "".join(f"event: {e.get('type')}\ndata: {json.dumps(e)}\n\n" for e in stream)
    # a lone surrogate in an event: line becomes bytes that are not UTF-8
    return text.replace(f'"{HUGE}"', "1e999").encode("utf-8", "surrogatepass")


# -- the oracles ---------------------------------------------------------------------------
def run_all(chunks: list[bytes], caps: dict[str, Any] = CAPS) -> dict[str, Any]:
    """Every consumer on the same input, each held to its contract."""
    # the parser: messages, or its one documented error
    messages = None
    try:
        messages = list(parse_sse(chunks, **caps))
        event("parsed")
    except SSELimitError:
        event("parser limit")
    # the validator: never raises
    validator = StreamValidator()
    validator.feed_sse(chunks, **caps)
    violations = validator.finish()
    # the accumulator: folds, or AccumulateError
    acc = ResponseAccumulator()
    folded = True
    for message in messages or []:
        if message.is_done:
            continue
        try:
            payload = json.loads(message.data)
        except (ValueError, RecursionError):
            continue
        try:
            acc.feed(payload)
        except AccumulateError:
            folded = False
            event("accumulate error")
            break
    # to-chat: a chat stream the SDK reads, that ends
    content, arguments, error = check_chat(list(chat_sse_from_sse(chunks, **caps)))
    return {
        "violations": violations,
        "acc": acc,
        "folded": folded,
        "content": content,
        "arguments": arguments,
        "error": error,
    }


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, start = [], 0
    for p in points:
        pieces.append(data[start:p])
        start = p
    pieces.append(data[start:])
    return pieces


# -- random bytes ---------------------------------------------------------------------------
@given(st.binary(max_size=3000), st.lists(st.integers(0, 4000), max_size=8))
def test_random_bytes(data: bytes, cuts: list[int]) -> None:
    run_all(split(data, cuts))


SSE_ATOMS = st.sampled_from(
    [
        b"data: ",
        b"event: ",
        b": c",
        b"id: 1",
        b"\n",
        b"\r\n",
        b"\r",
        b"{",
        b"}",
        b'"type"',
        b":",
        b'"response.created"',
        b"[DONE]",
        b"\xff",
        b"\xed\xa0\x80",
        b"\xf0\x9f",
        b"NaN",
        b"1e999",
    ]
)


@given(
    st.lists(st.one_of(SSE_ATOMS, st.binary(max_size=8)), max_size=80),
    st.lists(st.integers(0, 500), max_size=6),
)
def test_random_sse_like_bytes(atoms: list[bytes], cuts: list[int]) -> None:
    run_all(split(b"".join(atoms), cuts))


# -- byte-level corruption of valid streams ---------------------------------------------------
BYTE_OPS = st.lists(
    st.tuples(
        st.sampled_from(["flip", "cut", "delete", "duplicate", "insert"]),
        st.integers(0, 10**6),
        st.integers(1, 64),
        st.binary(min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=4,
)


def corrupt_bytes(data: bytes, ops: list[tuple[str, int, int, bytes]]) -> bytes:
    for op, at, size, blob in ops:
        at %= len(data) + 1
        if op == "flip" and at < len(data):
            data = data[:at] + bytes([data[at] ^ (1 << (size % 8))]) + data[at + 1 :]
        elif op == "cut":
            data = data[:at]
        elif op == "delete":
            data = data[:at] + data[at + size :]
        elif op == "duplicate":
            data = data[:at] + data[at : at + size] * 2 + data[at + size :]
        else:
            data = data[:at] + blob + data[at:]
    return data


@given(st.data(), BYTE_OPS, st.lists(st.integers(0, 10**6), max_size=8))
def test_corrupted_bytes(data: st.DataObject, ops: Any, cuts: list[int]) -> None:
    stream = data.draw(st.sampled_from(seeds()), label="seed")
    run_all(split(corrupt_bytes(sse(stream), ops), cuts))


# -- event-level corruption of valid streams -----------------------------------------------
ODD_VALUES = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        HUGE,
        -1,
        -(2**70),
        2**70,
        True,
        None,
        "",
        "x",
        5,
        1.5,
        [],
        [5],
        {},
        {"type": 5},
        LONE,
        "\udfff",
        "\x00\u2028",
    ]
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, (*prefix, i))
    return out


def put(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    node = root
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return root


@given(
    st.data(),
    st.lists(
        st.tuples(st.sampled_from(["value", "drop", "duplicate", "swap"]), st.integers(0, 10**6)),
        min_size=1,
        max_size=4,
    ),
    st.lists(st.integers(0, 10**6), max_size=4),
)
def test_corrupted_events(data: st.DataObject, ops: Any, cuts: list[int]) -> None:
    stream = copy.deepcopy(data.draw(st.sampled_from(seeds()), label="seed"))
    for op, at in ops:
        if not stream:
            break
        i = at % len(stream)
        if op == "value":
            where = paths(stream[i])
            path = where[data.draw(st.integers(0, len(where) - 1), label="path")]
            # a copy: the same list or dict put in twice would make a cycle
            value = copy.deepcopy(data.draw(ODD_VALUES, label="value"))
            stream[i] = put(stream[i], path, value)
        elif op == "drop":
            del stream[i]
        elif op == "duplicate":
            stream.insert(i, copy.deepcopy(stream[i]))
        else:
            j = (at // 7) % len(stream)
            stream[i], stream[j] = stream[j], stream[i]
    if not all(isinstance(e, dict) for e in stream):
        stream = [e if isinstance(e, dict) else {"odd": e} for e in stream]
    run_all(split(sse(stream), cuts))


# -- intact streams, with hostile text ---------------------------------------------------------
PIECE = st.lists(
    st.one_of(
        st.characters(),
        st.integers(0xD800, 0xDFFF).map(chr),
        st.sampled_from(
            ["\u2028", "\u2029", "\x00", "\r", "\n", "é", "\U0001f600", "\ud83d", "\ude00"]
        ),
    ),
    min_size=1,
    max_size=6,
).map("".join)


def first_text_part(stream: Stream) -> tuple[str, int] | None:
    for e in stream:
        if e["type"] == "response.output_text.delta":
            return e["item_id"], e["content_index"]
    return None


def _no_logprobs(holder: dict[str, Any]) -> dict[str, Any]:
    """Empty logprobs where ``holder`` has them (a seed recorded with logprobs)."""
    return {"logprobs": []} if "logprobs" in holder else {}


@given(
    st.data(), st.lists(PIECE, min_size=1, max_size=6), st.lists(st.integers(0, 10**6), max_size=6)
)
def test_hostile_text_arrives_once_in_order(
    data: st.DataObject, pieces: list[str], cuts: list[int]
) -> None:
    with_text = [s for s in seeds() if first_text_part(s) is not None]
    stream = copy.deepcopy(data.draw(st.sampled_from(with_text), label="seed"))
    item_id, index = first_text_part(stream)  # type: ignore[misc]
    text = "".join(pieces)
    done = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    out: Stream = []
    replaced = False
    for e in stream:
        mine = e.get("item_id") == item_id and e.get("content_index") == index
        if e["type"] == "response.output_text.delta" and mine:
            if not replaced:  # the seed's logprobs belong to its own deltas: none here
                out += [{**e, "delta": p, **_no_logprobs(e)} for p in pieces]
                replaced = True
            continue
        if e["type"] == "response.output_text.done" and mine:
            e.update(text=done, **_no_logprobs(e))
        if e["type"] == "response.content_part.done" and mine:
            e["part"].update(text=done, **_no_logprobs(e["part"]))
        for holder in [e.get("item"), *(e.get("response") or {}).get("output", [])]:
            if isinstance(holder, dict) and holder.get("id") == item_id:
                if len(holder["content"]) > index:  # not in output_item.added
                    part = holder["content"][index]
                    part.update(text=done, **_no_logprobs(part))
        out.append(e)
    for n, e in enumerate(out):
        e["sequence_number"] = n
    expected = "".join(
        p["text"]
        for item in out[-1]["response"]["output"]
        if item.get("type") == "message"
        for p in item.get("content", [])
        if p.get("type") == "output_text"
    )
    result = run_all(split(sse(out), cuts), caps={})
    assert not [v for v in result["violations"] if v.severity == "error"], result["violations"]
    assert result["folded"] and result["acc"].final is not None
    assert result["content"] == replace_surrogates(expected)
    if any("\ud800" <= c <= "\udfff" for c in done):
        event("lone surrogates in the text")
