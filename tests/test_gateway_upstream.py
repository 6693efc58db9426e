"""The fake model upstream itself, held to the official openai SDK (strict validation)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from gateway_upstream import TEXT_RECORDING, TOOL_RECORDING, ModelUpstream, recording
from openai import OpenAI

from responses_stream import StreamValidator

WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["location", "days"],
        },
    },
}
CLOCK: Any = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object"}},
}
HELLO: Any = [{"role": "user", "content": "hi there"}]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ModelUpstream, str]]:
    upstream = ModelUpstream()
    with upstream.serve() as url:
        yield upstream, url


@pytest.fixture
def upstream(served: tuple[ModelUpstream, str]) -> ModelUpstream:
    served[0].clear()
    return served[0]


@pytest.fixture
def client(served: tuple[ModelUpstream, str]) -> OpenAI:
    return OpenAI(
        base_url=served[1] + "/v1", api_key="x", max_retries=0, _strict_response_validation=True
    )


def test_plain_answer_with_reasoning_and_usage(upstream: ModelUpstream, client: OpenAI) -> None:
    done = client.chat.completions.create(model="m", messages=HELLO)
    choice = done.choices[0]
    assert choice.message.content == "Hello! You said: hi there"
    assert (choice.message.model_extra or {})["reasoning_content"] == "Considering the request."
    assert choice.finish_reason == "stop"
    usage = done.usage
    assert usage is not None and usage.prompt_tokens == 2
    assert usage.completion_tokens == 3 + 7 and usage.total_tokens == 12
    assert usage.completion_tokens_details and usage.completion_tokens_details.reasoning_tokens == 3
    (seen,) = upstream.requests
    assert (seen.method, seen.path, seen.authorization) == (
        "POST",
        "/v1/chat/completions",
        "Bearer x",
    )
    assert seen.body["messages"] == HELLO and seen.headers["content-type"] == "application/json"


def test_stream_chunks_like_a_real_server(client: OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=HELLO,
            stream=True,
            stream_options={"include_usage": True},
            max_completion_tokens=2,
        )
    )
    ((cid, created, model),) = {(c.id, c.created, c.model) for c in chunks}
    assert cid.startswith("chatcmpl-") and (created, model) == (1_700_000_000, "m")
    assert chunks[0].choices[0].delta.role == "assistant"
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = [(d.model_extra or {}).get("reasoning_content") for d in deltas]
    assert [r for r in reasoning if r] == ["Considering", " the", " request."]
    assert "".join(d.content or "" for d in deltas) == "Hello! Y"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 5


def test_forced_tool_call_streamed_and_whole(client: OpenAI) -> None:
    forced = {"type": "function", "function": {"name": "get_weather"}}
    args: dict[str, Any] = dict(
        model="m", messages=HELLO, tools=[CLOCK, WEATHER], tool_choice=forced
    )
    whole = client.chat.completions.create(**args)
    (call,) = whole.choices[0].message.tool_calls or []
    assert call.type == "function" and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"location": "San Francisco, CA", "days": 1}
    assert whole.choices[0].finish_reason == "tool_calls"
    fragments = [
        t
        for c in client.chat.completions.create(**args, stream=True)
        for t in (c.choices[0].delta.tool_calls or [] if c.choices else [])
    ]
    assert fragments[0].id and fragments[0].function
    assert fragments[0].function.name == "get_weather"
    assert all(f.id is None and f.function and f.function.name is None for f in fragments[1:])
    assert len(fragments) >= 3
    assert "".join(f.function.arguments or "" for f in fragments if f.function) == (
        call.function.arguments
    )


def test_parallel_calls_and_echo_history(client: OpenAI) -> None:
    both = client.chat.completions.create(
        model="fake-parallel", messages=HELLO, tools=[CLOCK, WEATHER]
    )
    calls = both.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls if c.type == "function"] == ["get_time", "get_weather"]
    second = calls[1]
    assert second.type == "function"
    history: Any = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {"role": "assistant", "tool_calls": [second.model_dump()]},
        {"role": "tool", "tool_call_id": second.id, "content": "sunny"},
    ]
    echo = client.chat.completions.create(model="echo", messages=history, tools=[WEATHER])
    assert echo.choices[0].message.content == (
        "system: be brief\nuser: weather?\n"
        f"assistant->call get_weather({second.function.arguments})\n"
        f"tool({second.id}): sunny"
    )


def test_custom_tool_and_json_format(client: OpenAI) -> None:
    tool: Any = {"type": "custom", "custom": {"name": "shell"}}
    choice: Any = {"type": "custom", "custom": {"name": "shell"}}
    done = client.chat.completions.create(
        model="m", messages=HELLO, tools=[WEATHER, tool], tool_choice=choice
    )
    (call,) = done.choices[0].message.tool_calls or []
    assert call.type == "custom" and (call.custom.name, call.custom.input) == (
        "shell",
        "example input",
    )
    fmt: Any = {"type": "json_object"}
    done = client.chat.completions.create(model="m", messages=HELLO, response_format=fmt)
    assert done.choices[0].message.content == '{"answer": "ok"}'


def test_scripted_errors(client: OpenAI, served: tuple[ModelUpstream, str]) -> None:
    with pytest.raises(openai.RateLimitError) as exc:
        client.chat.completions.create(model="fake-429", messages=HELLO)
    assert exc.value.response.headers["retry-after"] == "7"
    assert exc.value.code == "rate_limit_exceeded"
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="fake-500", messages=HELLO)
    with pytest.raises(openai.RateLimitError):
        client.responses.create(model="fake-429", input="hi", stream=True)
    body = {"model": "fake-cut", "messages": HELLO, "stream": True}
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(served[1] + "/chat/completions", json=body)


@pytest.mark.parametrize("tools", [False, True])
def test_responses_replay_a_recording(
    client: OpenAI, served: tuple[ModelUpstream, str], tools: bool
) -> None:
    extra: dict[str, Any] = {"tools": [{"type": "function", "name": "f"}]} if tools else {}
    events = list(client.responses.create(model="m", input="hi", stream=True, **extra))
    recorded = recording(TOOL_RECORDING if tools else TEXT_RECORDING)
    assert [e.type for e in events] == [kind for kind, _ in recorded]
    body = {"model": "m", "input": "hi", "stream": True, **extra}
    raw = httpx.post(served[1] + "/responses", json=body).content
    assert raw == b"".join(f"event: {k}\ndata: {line}\n\n".encode() for k, line in recorded)
    validator = StreamValidator()
    validator.feed_sse([raw])
    assert [str(v) for v in validator.finish() if v.severity == "error"] == []
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="m", input="hi")


def test_models(client: OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["fake-model"]
