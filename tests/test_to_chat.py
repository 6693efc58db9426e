"""Responses stream -> Chat Completions chunks (``to_chat``), checked with the OpenAI SDK.

Responses streams are produced with the package's ``StreamProcessor`` (or by
hand where the processor cannot produce the shape), converted with
``achat_sse_from_responses`` by a real uvicorn server at
``POST /v1/chat/completions``, and read back with
``OpenAI().chat.completions.stream(...).get_final_completion()``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import uvicorn
from openai import OpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from responses_stream import CountingIds, StreamProcessor
from responses_stream._runtime.consumers.to_chat import (
    ResponsesToChat,
    achat_sse_from_responses,
    chat_chunks_from_responses,
    chat_sse_from_responses,
)

CREATED = 1_700_000_000
DIALECTS = ("openai", "openresponses")
MODES = ("reasoning_content", "reasoning", "think", "omit")
USAGE = {
    "input_tokens": 11,
    "input_tokens_details": {"cached_tokens": 4},
    "output_tokens": 7,
    "output_tokens_details": {"reasoning_tokens": 3},
    "total_tokens": 18,
}
Payloads = list[dict[str, Any]]


# -- Responses streams -------------------------------------------------------
def processor(dialect: str = "openai") -> StreamProcessor:
    p = StreamProcessor(dialect, model="m", ids=CountingIds(), created_at=CREATED)
    p.start()
    return p


def payloads(p: StreamProcessor) -> Payloads:
    enc = p.dialect.encoder()
    return [json.loads(enc.encode(e).split(b"data: ", 1)[1]) for e in p.drain()]


def message(p: StreamProcessor, *deltas: str) -> None:
    h = p.open("message")
    h.part("output_text")
    for d in deltas:
        h.text(d)
    h.close()


def text_stream(dialect: str = "openai", usage: dict[str, Any] | None = None) -> Payloads:
    p = processor(dialect)
    message(p, "Hel", "lo!")
    p.finish(usage=usage)
    return payloads(p)


def reasoning_stream(dialect: str, kind: str) -> Payloads:
    """A reasoning item with one ``kind`` part ("plan", "ned"), then text "Hi"."""
    p = processor(dialect)
    r = p.open("reasoning")
    r.part(kind)
    r.text("plan")
    r.text("ned")
    r.close()
    message(p, "Hi")
    p.finish()
    return payloads(p)


CALLS = [
    ("call_a", "get_weather", ['{"city":', '"Paris"}']),
    ("call_b", "get_time", ['{"tz":"CET"}']),
    ("call_c", "lookup", ["{", '"q":"x"', "}"]),
]


def calls_stream(n: int, dialect: str = "openai") -> Payloads:
    p = processor(dialect)
    for call_id, name, deltas in CALLS[:n]:
        f = p.open("function_call", call_id=call_id, name=name)
        for d in deltas:
            f.delta(d)
        f.close()
    p.finish()
    return payloads(p)


def _resp(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_hand",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "model": "m",
        "output": [],
        **extra,
    }


def _fc(status: str, arguments: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": arguments,
        "status": status,
        **extra,
    }


ARGS = '{"city":"Paris"}'


def args_only_in_done_stream() -> Payloads:
    """A function call whose arguments come only in ``function_call_arguments.done``."""
    return [
        {"type": "response.created", "sequence_number": 0, "response": _resp("in_progress")},
        {
            "type": "response.output_item.added",
            "sequence_number": 1,
            "output_index": 0,
            "item": _fc("in_progress", ""),
        },
        {
            "type": "response.function_call_arguments.done",
            "sequence_number": 2,
            "item_id": "fc_1",
            "output_index": 0,
            "arguments": ARGS,
        },
        {
            "type": "response.output_item.done",
            "sequence_number": 3,
            "output_index": 0,
            "item": _fc("completed", ARGS),
        },
        {"type": "response.completed", "sequence_number": 4, "response": _resp("completed")},
    ]


def incomplete_stream(dialect: str = "openai", reason: str = "max_output_tokens") -> Payloads:
    p = processor(dialect)
    h = p.open("message")
    h.part("output_text")
    h.text("Partial")
    p.truncate(reason)
    return payloads(p)


def failed_stream(dialect: str = "openai") -> Payloads:
    p = processor(dialect)
    h = p.open("message")
    h.part("output_text")
    h.text("Par")
    p.fail("upstream exploded", code="server_error")
    return payloads(p)


def refusal_stream(dialect: str = "openai") -> Payloads:
    p = processor(dialect)
    h = p.open("message")
    h.part("refusal")
    h.text("I can't ")
    h.text("help with that.")
    h.close()
    p.finish()
    return payloads(p)


def web_search_stream(dialect: str = "openai") -> Payloads:
    p = processor(dialect)
    p.open("web_search_call").close()
    message(p, "Found ", "it.")
    p.finish()
    return payloads(p)


# -- the HTTP server -----------------------------------------------------------
SCENARIOS: dict[str, tuple[Payloads, dict[str, Any]]] = {}


async def chat_completions(request: Request) -> Response:
    body = await request.json()
    scenario = SCENARIOS.get(body.get("model"))
    if scenario is None:
        return JSONResponse({"error": {"message": "unknown scenario"}}, 404)
    events, options = scenario
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    async def upstream() -> AsyncIterator[dict[str, Any]]:
        for event in events:
            yield event

    frames = achat_sse_from_responses(upstream(), include_usage=include_usage, **options)
    return StreamingResponse(frames, media_type="text/event-stream")


@pytest.fixture(scope="module")
def client() -> Iterator[OpenAI]:
    app = Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="x",
            max_retries=0,
            _strict_response_validation=True,
        )
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


_counter = iter(range(1_000_000))


def complete(client: OpenAI, events: Payloads, include_usage: bool = False, **options: Any) -> Any:
    """Serve ``events`` as chat SSE and read them with the SDK's stream helper."""
    name = f"scenario-{next(_counter)}"
    SCENARIOS[name] = (events, options)
    extra: dict[str, Any] = {}
    if include_usage:
        extra["stream_options"] = {"include_usage": True}
    with client.chat.completions.stream(
        model=name, messages=[{"role": "user", "content": "hi"}], **extra
    ) as stream:
        return stream.get_final_completion()


def extras(msg: Any) -> dict[str, Any]:
    return dict(msg.model_extra or {})


# -- end to end through the SDK --------------------------------------------------
@pytest.mark.parametrize("dialect", DIALECTS)
def test_text(client: OpenAI, dialect: str) -> None:
    done = complete(client, text_stream(dialect), dialect=dialect)
    choice = done.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "Hello!"
    assert choice.message.tool_calls is None
    assert choice.message.refusal is None
    assert choice.finish_reason == "stop"
    assert done.id == "chatcmpl-resp_0001"
    assert done.created == CREATED
    assert done.model == "m"
    assert done.usage is None


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("kind", ["summary_text", "reasoning_text"])
@pytest.mark.parametrize("mode", MODES)
def test_reasoning_modes(client: OpenAI, dialect: str, kind: str, mode: str) -> None:
    done = complete(client, reasoning_stream(dialect, kind), reasoning=mode, dialect=dialect)
    msg = done.choices[0].message
    assert done.choices[0].finish_reason == "stop"
    if mode == "think":
        assert msg.content == "<think>\nplanned\n</think>\n\nHi"
        assert extras(msg) == {}
    elif mode == "omit":
        assert msg.content == "Hi"
        assert extras(msg) == {}
    else:
        assert msg.content == "Hi"
        assert extras(msg) == {mode: "planned"}
        assert getattr(msg, mode) == "planned"


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("n", [2, 3])
def test_parallel_function_calls(client: OpenAI, dialect: str, n: int) -> None:
    done = complete(client, calls_stream(n, dialect), dialect=dialect)
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls
    assert calls is not None
    got = [(c.id, c.type, c.function.name, c.function.arguments) for c in calls]
    want = [(cid, "function", name, "".join(d)) for cid, name, d in CALLS[:n]]
    assert got == want


def test_arguments_only_in_done(client: OpenAI) -> None:
    done = complete(client, args_only_in_done_stream())
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls is not None and len(calls) == 1
    assert (calls[0].id, calls[0].function.name, calls[0].function.arguments) == (
        "call_1",
        "get_weather",
        ARGS,
    )
    assert calls[0].function.parsed_arguments is None  # no strict input tool was given
    assert done.id == "chatcmpl-resp_hand"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_incomplete_is_length(client: OpenAI, dialect: str) -> None:
    # the SDK's stream helper raises on finish_reason "length", carrying the completion
    with pytest.raises(openai.LengthFinishReasonError) as info:
        complete(client, incomplete_stream(dialect), dialect=dialect)
    choice = info.value.completion.choices[0]
    assert choice.finish_reason == "length"
    assert choice.message.content == "Partial"


def test_incomplete_content_filter(client: OpenAI) -> None:
    with pytest.raises(openai.ContentFilterFinishReasonError) as info:
        complete(client, incomplete_stream(reason="content_filter"))
    assert info.value.completion is not None
    choice = info.value.completion.choices[0]
    assert choice.finish_reason == "content_filter"
    assert choice.message.content == "Partial"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_failed_raises(client: OpenAI, dialect: str) -> None:
    with pytest.raises(openai.APIError) as info:
        complete(client, failed_stream(dialect), dialect=dialect)
    assert type(info.value) is openai.APIError
    assert info.value.message == "upstream exploded"
    assert info.value.code == "server_error"
    assert info.value.type == "server_error"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_refusal(client: OpenAI, dialect: str) -> None:
    done = complete(client, refusal_stream(dialect), dialect=dialect)
    msg = done.choices[0].message
    assert msg.refusal == "I can't help with that."
    assert msg.content is None
    assert done.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_web_search_then_text(client: OpenAI, dialect: str) -> None:
    done = complete(client, web_search_stream(dialect), dialect=dialect)
    msg = done.choices[0].message
    assert msg.content == "Found it."
    assert msg.tool_calls is None
    assert done.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_usage(client: OpenAI, dialect: str) -> None:
    done = complete(client, text_stream(dialect, usage=USAGE), include_usage=True, dialect=dialect)
    assert done.choices[0].message.content == "Hello!"
    assert done.usage is not None
    assert done.usage.prompt_tokens == 11
    assert done.usage.completion_tokens == 7
    assert done.usage.total_tokens == 18
    assert done.usage.prompt_tokens_details is not None
    assert done.usage.prompt_tokens_details.cached_tokens == 4
    assert done.usage.completion_tokens_details is not None
    assert done.usage.completion_tokens_details.reasoning_tokens == 3


# -- unit checks on the chunks -----------------------------------------------------
def convert(events: Payloads, **kw: Any) -> list[dict[str, Any]]:
    return list(chat_chunks_from_responses(events, **kw))


def content(chunks: list[dict[str, Any]]) -> str:
    return "".join(
        c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices")
    )


def mixed_stream(dialect: str = "openai") -> Payloads:
    p = processor(dialect)
    r = p.open("reasoning")
    r.part("summary_text")
    r.text("first")
    r.part("summary_text")
    r.text("second")
    r.close()
    message(p, "Hi")
    for call_id, name, deltas in CALLS:
        f = p.open("function_call", call_id=call_id, name=name)
        for d in deltas:
            f.delta(d)
        f.close()
    p.finish(usage=USAGE)
    return payloads(p)


@pytest.mark.parametrize("mode", MODES)
def test_identity_constant_and_role_once(mode: str) -> None:
    chunks = convert(mixed_stream(), reasoning=mode, include_usage=True)
    assert {(c["id"], c["object"], c["created"], c["model"]) for c in chunks} == {
        ("chatcmpl-resp_0001", "chat.completion.chunk", CREATED, "m")
    }
    roles = [i for i, c in enumerate(chunks) if c["choices"] and "role" in c["choices"][0]["delta"]]
    assert roles == [0]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[:-1] == [None] * (len(finishes) - 1) and finishes[-1] == "tool_calls"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 18,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }
    assert all(c["usage"] is None for c in chunks[:-1])


def test_no_usage_chunk_without_include_usage() -> None:
    chunks = convert(text_stream(usage=USAGE))
    assert all(c["choices"] and "usage" not in c for c in chunks)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("kind", ["summary_text", "reasoning_text"])
def test_reasoning_streams_as_deltas(dialect: str, kind: str) -> None:
    # each delta is forwarded as it comes (not recovered from the item's done event)
    chunks = convert(reasoning_stream(dialect, kind), dialect=dialect)
    got = [
        c["choices"][0]["delta"]["reasoning_content"]
        for c in chunks
        if c["choices"] and "reasoning_content" in c["choices"][0]["delta"]
    ]
    assert got == ["plan", "ned"]


def test_reasoning_parts_are_separated() -> None:
    chunks = convert(mixed_stream(), reasoning="reasoning_content")
    text = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in chunks)
    assert text == "first\n\nsecond"
    assert content(convert(mixed_stream(), reasoning="think")) == (
        "<think>\nfirst\n\nsecond\n</think>\n\nHi"
    )


def tool_deltas(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        t for c in chunks if c["choices"] for t in c["choices"][0]["delta"].get("tool_calls", [])
    ]


def test_tool_indexes_contiguous_and_headers() -> None:
    deltas = tool_deltas(convert(mixed_stream()))
    headers = [t for t in deltas if "id" in t]
    assert [t["index"] for t in headers] == [0, 1, 2]
    for t, (call_id, name, _) in zip(headers, CALLS, strict=True):
        assert t == {
            "index": t["index"],
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
    for t in deltas:
        if "id" not in t:
            assert set(t) == {"index", "function"} and set(t["function"]) == {"arguments"}


def _interleaved(with_item_ids: bool) -> Payloads:
    """Two calls whose argument deltas interleave; the last added is not the one streaming."""

    def ev(kind: str, index: int, **fields: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": kind, "output_index": index, **fields}
        if with_item_ids:
            out["item_id"] = f"fc_{index}"
        return out

    def item(index: int, args: str, status: str) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": f"fc_{index}",
            "call_id": f"call_{index}",
            "name": f"f{index}",
            "arguments": args,
            "status": status,
        }

    return [
        {"type": "response.created", "response": _resp("in_progress")},
        {"type": "response.output_item.added", "output_index": 0, "item": item(0, "", "x")},
        {"type": "response.output_item.added", "output_index": 1, "item": item(1, "", "x")},
        ev("response.function_call_arguments.delta", 0, delta='{"a"'),
        ev("response.function_call_arguments.delta", 1, delta='{"b"'),
        ev("response.function_call_arguments.delta", 0, delta=":0}"),
        ev("response.function_call_arguments.done", 1, arguments='{"b":1}'),
        ev("response.function_call_arguments.done", 0, arguments='{"a":0}'),
        {"type": "response.output_item.done", "output_index": 1, "item": item(1, '{"b":1}', "c")},
        {"type": "response.output_item.done", "output_index": 0, "item": item(0, '{"a":0}', "c")},
        {"type": "response.completed", "response": _resp("completed")},
    ]


def accumulated_args(chunks: list[dict[str, Any]]) -> dict[int, str]:
    args: dict[int, str] = {}
    for t in tool_deltas(chunks):
        args[t["index"]] = args.get(t["index"], "") + t["function"]["arguments"]
    return args


@pytest.mark.parametrize("with_item_ids", [True, False])
def test_routing_by_item_not_last_added(with_item_ids: bool) -> None:
    chunks = convert(_interleaved(with_item_ids))
    assert accumulated_args(chunks) == {0: '{"a":0}', 1: '{"b":1}'}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_call_without_added_is_delivered_by_item_done() -> None:
    events = [e for e in args_only_in_done_stream() if e["type"] != "response.output_item.added"]
    deltas = tool_deltas(convert(events))
    assert deltas[0]["id"] == "call_1" and deltas[0]["function"]["name"] == "get_weather"
    assert accumulated_args(convert(events)) == {0: ARGS}


def test_namespaced_and_custom_tool_calls() -> None:
    p = processor("openresponses")
    f = p.open("function_call", call_id="c1", name="search", namespace="docs")
    f.delta("{}")
    f.close()
    c = p.open("custom_tool_call", call_id="c2", name="patch", namespace="fs")
    c.delta("*** Begin")
    c.close()
    p.finish()
    chunks = convert(payloads(p), dialect="openresponses")
    headers = [t for t in tool_deltas(chunks) if "id" in t]
    assert [(t["id"], t["function"]["name"]) for t in headers] == [
        ("c1", "docs.search"),
        ("c2", "fs.patch"),
    ]
    assert accumulated_args(chunks) == {0: "{}", 1: "*** Begin"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_custom_tool_input_only_in_done() -> None:
    events: Payloads = [
        {"type": "response.created", "response": _resp("in_progress")},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "custom_tool_call", "id": "ct_1", "call_id": "c", "name": "t"},
        },
        {
            "type": "response.custom_tool_call_input.delta",
            "item_id": "ct_1",
            "output_index": 0,
            "delta": "ab",
        },
        {
            "type": "response.custom_tool_call_input.done",
            "item_id": "ct_1",
            "output_index": 0,
            "input": "abcd",
        },
        {"type": "response.completed", "response": _resp("completed")},
    ]
    assert accumulated_args(convert(events)) == {0: "abcd"}


def test_text_only_in_done_is_delivered() -> None:
    events = [e for e in text_stream() if e["type"] != "response.output_text.delta"]
    assert content(convert(events)) == "Hello!"


def test_hosted_content_note() -> None:
    assert content(convert(web_search_stream(), hosted="content")) == (
        "[web_search_call: completed]\nFound it."
    )
    assert tool_deltas(convert(web_search_stream(), hosted="content")) == []


def think_then(end: Callable[[StreamProcessor], None], dialect: str = "openai") -> Payloads:
    p = processor(dialect)
    r = p.open("reasoning")
    r.part("reasoning_text")
    r.text("hmm")
    end(p)
    return payloads(p)


def _assert_think_closed_before(chunks: list[dict[str, Any]], last: dict[str, Any]) -> None:
    text = content(chunks)
    assert text.count("<think>") == 1 and text.count("</think>") == 1
    assert text.startswith("<think>\nhmm") and text.endswith("\n</think>\n\n")
    close_at = next(i for i, c in enumerate(chunks) if "</think>" in content([c]))
    assert chunks.index(last) > close_at


@pytest.mark.parametrize("dialect", DIALECTS)
def test_think_closed_at_end_of_stream(dialect: str) -> None:
    # no terminal event: close() ends the stream
    chunks = convert(think_then(lambda p: None, dialect), reasoning="think", dialect=dialect)
    _assert_think_closed_before(chunks, chunks[-1])
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_think_closed_at_completion(dialect: str) -> None:
    chunks = convert(think_then(lambda p: p.finish(), dialect), reasoning="think", dialect=dialect)
    _assert_think_closed_before(chunks, chunks[-1])
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_think_closed_before_tool_call() -> None:
    def call(p: StreamProcessor) -> None:
        f = p.open("function_call", call_id="c", name="f")
        f.delta("{}")
        p.finish()

    chunks = convert(think_then(call), reasoning="think")
    first_tool = next(
        c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("tool_calls")
    )
    _assert_think_closed_before(chunks, first_tool)
    assert "content" not in first_tool["choices"][0]["delta"] or (
        first_tool["choices"][0]["delta"]["content"] is None
    )


def test_think_closed_on_incomplete() -> None:
    chunks = convert(think_then(lambda p: p.truncate("max_output_tokens")), reasoning="think")
    _assert_think_closed_before(chunks, chunks[-1])
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_think_closed_on_failed() -> None:
    chunks = convert(think_then(lambda p: p.fail("boom", code="overloaded")), reasoning="think")
    _assert_think_closed_before(chunks, chunks[-1])
    assert chunks[-1] == {
        "error": {"message": "boom", "type": "server_error", "param": None, "code": "overloaded"}
    }
    assert sum("error" in c for c in chunks) == 1  # error event and response.failed: one payload


def test_think_closed_on_failed_without_error_event() -> None:
    events = [e for e in think_then(lambda p: p.fail("boom")) if e["type"] != "error"]
    chunks = convert(events, reasoning="think")
    _assert_think_closed_before(chunks, chunks[-1])
    assert chunks[-1]["error"]["message"] == "boom"


def test_nested_error_event() -> None:
    events: Payloads = [
        {"type": "response.created", "response": _resp("in_progress")},
        {"type": "error", "error": {"type": "rate_limit_error", "code": "rl", "message": "slow"}},
    ]
    assert convert(events)[-1] == {
        "error": {"message": "slow", "type": "rate_limit_error", "param": None, "code": "rl"}
    }


def test_nothing_after_the_end() -> None:
    conv = ResponsesToChat()
    events = text_stream()
    for e in events:
        conv.feed(e)
    assert conv.done
    assert conv.feed(events[-1]) == [] and conv.close() == []


def test_sse_framing_and_string_payloads() -> None:
    events = text_stream()
    frames = list(chat_sse_from_responses(events))
    assert frames[-1] == b"data: [DONE]\n\n"
    assert all(f.startswith(b"data: ") and f.endswith(b"\n\n") for f in frames)
    chunks = [json.loads(f[6:]) for f in frames[:-1]]
    assert chunks == convert(events)
    as_text = [json.dumps(e) for e in events] + ["[DONE]"]
    assert list(chat_sse_from_responses(as_text)) == frames

    async def collect() -> list[bytes]:
        return [f async for f in achat_sse_from_responses(events)]

    assert asyncio.run(collect()) == frames


def test_failed_sse_ends_with_done() -> None:
    frames = list(chat_sse_from_responses(failed_stream()))
    assert json.loads(frames[-2][6:])["error"]["message"] == "upstream exploded"
    assert frames[-1] == b"data: [DONE]\n\n"


def test_bad_options() -> None:
    with pytest.raises(ValueError):
        ResponsesToChat(reasoning="loud")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ResponsesToChat(hosted="tool_calls")  # type: ignore[arg-type]


# -- real servers: rotating item ids, error payloads, client actions, unknowns ------
def rotate_ids(events: Payloads) -> Payloads:
    """``events`` as a gateway that gives every event (and every item) a fresh id sends them."""
    fresh = (f"capture-id-{n}" for n in range(1_000_000))
    out: Payloads = []
    for e in events:
        e = dict(e)
        if "item_id" in e:
            e["item_id"] = next(fresh)
        if isinstance(e.get("item"), dict):
            e["item"] = {**e["item"], "id": next(fresh)}
        out.append(e)
    return out


def sse_chunks(events: Payloads, **kw: Any) -> list[dict[str, Any]]:
    """The chunks of the ``feed_sse`` path, fed JSON text as a proxy reads it."""
    frames = chat_sse_from_responses([json.dumps(e) for e in events], **kw)
    return [json.loads(f[6:]) for f in frames if f != b"data: [DONE]\n\n"]


@pytest.mark.parametrize("mode", ["reasoning_content", "think"])
def test_rotating_item_ids_are_routed_by_output_index(mode: str) -> None:
    events = mixed_stream()
    rotated = rotate_ids(events)
    assert convert(rotated, reasoning=mode) == convert(events, reasoning=mode)
    assert sse_chunks(rotated, reasoning=mode) == convert(events, reasoning=mode)


def test_rotating_item_ids_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    conv = ResponsesToChat()
    with caplog.at_level("WARNING"):
        for e in rotate_ids(mixed_stream()):
            conv.feed(e)
    assert conv.done and len(conv.warnings) == 1
    assert "output_index" in conv.warnings[0]
    assert [r.getMessage() for r in caplog.records] == [f"to-chat: {conv.warnings[0]}"]
    quiet = ResponsesToChat()
    for e in mixed_stream():
        quiet.feed(e)
    assert quiet.warnings == []


def test_rotating_item_ids_through_the_sdk(client: OpenAI) -> None:
    done = complete(client, rotate_ids(mixed_stream()))
    msg = done.choices[0].message
    assert msg.content == "Hi"
    assert extras(msg)["reasoning_content"] == "first\n\nsecond"
    assert [(c.id, c.function.arguments) for c in msg.tool_calls or []] == [
        (call_id, "".join(deltas)) for call_id, _, deltas in CALLS
    ]


def test_cli_warns_on_stderr_once() -> None:
    root = Path(__file__).resolve().parents[1]
    sse = "".join(f"data: {json.dumps(e)}\n\n" for e in rotate_ids(text_stream()))
    run = subprocess.run(
        [sys.executable, "-m", "responses_stream", "to-chat"],
        input=sse.encode(),
        capture_output=True,
        cwd=root / "generated",
        check=True,
    )
    lines = run.stderr.decode().splitlines()
    assert len(lines) == 1 and "output_index" in lines[0], lines
    chunks = [json.loads(f[6:]) for f in run.stdout.split(b"\n\n") if f.startswith(b"data: {")]
    assert content(chunks) == "Hello!"


BARE_ERROR = {"error": {"message": "quota", "type": "insufficient_quota", "code": "q"}}


def _text_then(last: dict[str, Any]) -> Payloads:
    events = [e for e in text_stream() if e["type"] != "response.completed"]
    return events + [last]


@pytest.mark.parametrize("as_text", [False, True])
def test_bare_error_payload_is_an_error(as_text: bool) -> None:
    events: list[Any] = _text_then(BARE_ERROR)
    if as_text:
        events = [json.dumps(e) for e in events]
    chunks = list(chat_chunks_from_responses(events))
    assert chunks[-1] == {
        "error": {"message": "quota", "type": "insufficient_quota", "param": None, "code": "q"}
    }
    assert not any(c.get("choices") and c["choices"][0]["finish_reason"] for c in chunks)
    assert json.loads(list(chat_sse_from_responses(events))[-2][6:]) == chunks[-1]


def test_bare_error_raises_in_the_sdk(client: OpenAI) -> None:
    with pytest.raises(openai.APIError) as info:
        complete(client, _text_then(BARE_ERROR))
    assert type(info.value) is openai.APIError
    assert info.value.message == "quota" and info.value.code == "q"


def test_bare_string_error_and_null_error() -> None:
    assert convert(_text_then({"error": "boom"}))[-1]["error"]["message"] == "boom"
    # an ``error: null`` field is not an error; the stream just stops
    assert convert(_text_then({"error": None}))[-1]["choices"][0]["finish_reason"] == "length"


def test_failed_without_error_object_raises_in_the_sdk(client: OpenAI) -> None:
    events = _text_then({"type": "response.failed", "response": _resp("failed", error=None)})
    with pytest.raises(openai.APIError) as info:
        complete(client, events)
    assert info.value.message == "the response failed"


PATCH = {"type": "create_file", "path": "a.md", "diff": "+hi\n"}
SHELL = {"commands": ["ls -a"], "max_output_length": None, "timeout_ms": None}
LOCAL_SHELL = {"type": "exec", "command": ["ls", "-a"], "env": {}}
CLICK = {"type": "click", "button": "left", "x": 10, "y": 20}
APPROVAL = {"server_label": "zip", "name": "shorten", "arguments": '{"url":"x"}'}
# item (as done) -> (tool name, call id, arguments object)
ACTION_ITEMS: list[tuple[dict[str, Any], str, str, dict[str, Any]]] = [
    (
        {"type": "apply_patch_call", "id": "apc_1", "call_id": "c1", "operation": PATCH},
        "apply_patch",
        "c1",
        PATCH,
    ),
    (
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "c2", "action": LOCAL_SHELL},
        "local_shell",
        "c2",
        LOCAL_SHELL,
    ),
    ({"type": "shell_call", "id": "sh_1", "call_id": "c3", "action": SHELL}, "shell", "c3", SHELL),
    (
        {
            "type": "shell_call",
            "id": "sh_2",
            "call_id": "c4",
            "action": SHELL,
            "environment": {"type": "local"},
        },
        "shell",
        "c4",
        SHELL,
    ),
    (
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "c5",
            "action": CLICK,
            "pending_safety_checks": [],
        },
        "computer",
        "c5",
        CLICK,
    ),
    (
        {"type": "computer_call", "id": "cu_2", "call_id": "c6", "actions": [CLICK]},
        "computer",
        "c6",
        {"actions": [CLICK]},
    ),
    (
        {"type": "mcp_approval_request", "id": "mcpr_1", **APPROVAL},
        "mcp_approval_request",
        "mcpr_1",
        APPROVAL,
    ),
]


def item_stream(*items: dict[str, Any], added: bool = True) -> Payloads:
    """Each item added (in progress, its payload emptied) then done, then completed."""
    events: Payloads = [{"type": "response.created", "response": _resp("in_progress")}]
    for i, item in enumerate(items):
        if added:
            start = {k: v for k, v in item.items() if k not in ("action", "operation")}
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": {**start, "status": "in_progress"},
                }
            )
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": i,
                "item": {**item, "status": "completed"},
            }
        )
    events.append({"type": "response.completed", "response": _resp("completed")})
    return events


def calls_of(chunks: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    headers = [t for t in tool_deltas(chunks) if "id" in t]
    args = accumulated_args(chunks)
    return [(t["id"], t["function"]["name"], json.loads(args[t["index"]])) for t in headers]


@pytest.mark.parametrize("added", [True, False])
@pytest.mark.parametrize(("item", "name", "call_id", "arguments"), ACTION_ITEMS)
def test_client_action_item_is_a_tool_call(
    item: dict[str, Any], name: str, call_id: str, arguments: dict[str, Any], added: bool
) -> None:
    chunks = convert(item_stream(item, added=added))
    assert calls_of(chunks) == [(call_id, name, arguments)]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert sse_chunks(item_stream(item, added=added)) == chunks


def test_client_action_items_through_the_sdk(client: OpenAI) -> None:
    items = [item for item, *_ in ACTION_ITEMS]
    done = complete(client, item_stream(*items))
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    got = [
        (c.id, c.function.name, json.loads(c.function.arguments))
        for c in choice.message.tool_calls or []
    ]
    assert got == [(call_id, name, args) for _, name, call_id, args in ACTION_ITEMS]


HOSTED = [
    {
        "type": "shell_call",
        "id": "sh_9",
        "call_id": "c9",
        "action": SHELL,
        "environment": {"type": "container_reference", "container_id": "cntr_1"},
    },
    {"type": "shell_call_output", "id": "sho_9", "call_id": "c9", "output": []},
    {"type": "web_search_call", "id": "ws_1", "action": {"type": "search", "query": "q"}},
    {"type": "tool_search_call", "id": "tsc_1", "call_id": "c", "arguments": {}},
    {"type": "code_interpreter_call", "id": "ci_1", "code": "1", "container_id": "c"},
    {"type": "mcp_call", "id": "mcp_1", "name": "n", "arguments": "{}", "server_label": "s"},
    {"type": "program", "id": "cm_1", "call_id": "c", "code": "x"},
    {"type": "apply_patch_call_output", "id": "apo_1", "call_id": "c1", "output": "ok"},
]


@pytest.mark.parametrize("item", HOSTED, ids=[i["type"] for i in HOSTED])
def test_hosted_items_are_not_tool_calls(item: dict[str, Any]) -> None:
    chunks = convert(item_stream(item))
    assert tool_deltas(chunks) == []
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_unknown_item_and_event_types_pass_through(client: OpenAI) -> None:
    odd = {"type": "frobnicate_call", "id": "fx_1", "content": 5, "action": "?"}
    events = item_stream(odd)
    events[2:2] = [
        {"type": "response.frobnicate_call.delta", "item_id": "fx_1", "output_index": 0},
        {"type": "response.unheard_of", "sequence_number": 3},
        {"no_type": True},
        {"type": 7, "item": []},
    ]
    malformed = {"type": "message", "id": "m_1", "content": 5, "summary": "x"}
    events[-1:-1] = [
        {"type": "response.output_item.done", "output_index": 1, "item": malformed},
        {
            "type": "response.output_item.done",
            "output_index": 2,
            "item": {**malformed, "type": "reasoning"},
        },
    ]
    for mode in ("omit", "content"):
        chunks = convert(events, hosted=mode)
        assert tool_deltas(chunks) == []
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    done = complete(client, rotate_ids(events))
    assert done.choices[0].finish_reason == "stop"


def _msg(item_id: str, text: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {"type": "message", "id": item_id, "role": "assistant", "content": [part]}


@pytest.mark.parametrize("added", [True, False])
def test_reused_output_index_is_not_an_id_change(added: bool) -> None:
    """A server that puts every item at ``output_index`` 0, with proper ids, loses nothing."""
    events: Payloads = [{"type": "response.created", "response": _resp("in_progress")}]
    for item_id, text in (("m_1", "one "), ("m_2", "two")):
        if added:
            start = {**_msg(item_id, ""), "content": []}
            events.append({"type": "response.output_item.added", "output_index": 0, "item": start})
        events.append(
            {"type": "response.output_item.done", "output_index": 0, "item": _msg(item_id, text)}
        )
    events.append({"type": "response.completed", "response": _resp("completed")})
    conv = ResponsesToChat()
    chunks = [c for e in events for c in conv.feed(e)]
    assert content(chunks) == "one two"
    assert conv.warnings == []
