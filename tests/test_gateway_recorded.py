"""End to end: the gateway between a strict openai client and a replaying upstream.

The upstream is a local server on 127.0.0.1 that replays recorded streams: a Responses
stream for the chat direction (``/v1/chat/completions`` over the upstream's
``/v1/responses``), chat streams from vLLM, llama.cpp and DeepSeek-style servers for the
Responses direction.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import serve
from openai import OpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from responses_stream.gateway import create_app

RESPONSES_RECORDING = Path(__file__).parent / "broken" / "valid_reference.sse"
CHAT_RECORDINGS = Path(__file__).parent / "recorded"


class FakeUpstream:
    """Replays recordings; ``slow`` streams until the client goes away."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.slow_closed = threading.Event()
        self.slow_sent = 0

    def app(self) -> Starlette:
        async def responses(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            if body.get("model") == "slow":
                return StreamingResponse(self._slow(), media_type="text/event-stream")
            return Response(RESPONSES_RECORDING.read_bytes(), media_type="text/event-stream")

        async def chat(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            path = CHAT_RECORDINGS / f"{body['model']}.sse"
            return Response(path.read_bytes(), media_type="text/event-stream")

        return Starlette(
            routes=[
                Route("/v1/responses", responses, methods=["POST"]),
                Route("/v1/chat/completions", chat, methods=["POST"]),
            ]
        )

    async def _slow(self) -> AsyncIterator[bytes]:
        frames = RESPONSES_RECORDING.read_bytes().split(b"\n\n")
        try:
            yield frames[0] + b"\n\n"  # response.created
            for i in range(2000):
                self.slow_sent = i
                delta = {
                    "type": "response.output_text.delta",
                    "sequence_number": i + 1,
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": "x",
                    "logprobs": [],
                }
                yield f"data: {json.dumps(delta)}\n\n".encode()
                await asyncio.sleep(0.01)
        finally:
            self.slow_closed.set()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, FakeUpstream]]:
    upstream = FakeUpstream()
    with serve(upstream.app()) as upstream_url:
        with serve(create_app(upstream_url + "/v1", store="memory:")) as url:
            yield url, upstream


def _client(url: str) -> OpenAI:
    return OpenAI(base_url=url + "/v1", api_key="test", _strict_response_validation=True)


def test_chat_client_over_a_responses_upstream(servers: tuple[str, FakeUpstream]) -> None:
    url, upstream = servers
    client = _client(url)
    with client.chat.completions.stream(
        model="m",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        stream_options={"include_usage": True},
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    sent = upstream.requests[-1]
    assert sent["stream"] is True
    assert sent["input"] == [
        {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": "Be brief."}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    ]
    choice = final.choices[0]
    assert choice.message.content == "Hello"
    assert choice.message.model_extra.get("reasoning_content") == "think"
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_0", "get", '{"a":0}'),
        ("call_1", "get", '{"a":1}'),
    ]
    assert choice.finish_reason == "tool_calls"
    assert final.usage is not None and final.usage.prompt_tokens == 3
    assert final.usage.completion_tokens == 4


@pytest.mark.parametrize(
    "recording", ["vllm_reasoning_tools", "llamacpp_text", "deepseek_reasoner"]
)
def test_responses_client_over_a_chat_upstream(
    servers: tuple[str, FakeUpstream], recording: str
) -> None:
    url, upstream = servers
    client = _client(url)
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    with client.responses.stream(
        model=recording, input="weather?", instructions="Be brief.", tools=tools
    ) as stream:
        events = [e.type for e in stream]
        final = stream.get_final_response()
    sent = upstream.requests[-1]
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert events[0] == "response.created" and events[-1] == "response.completed"
    expected = _expected_from_chat(CHAT_RECORDINGS / f"{recording}.sse")
    assert final.output_text == expected["content"]
    reasoning = [i for i in final.output if i.type == "reasoning"]
    got_reasoning = "".join(c.text for r in reasoning for c in (r.content or []))
    assert got_reasoning == expected["reasoning"]
    calls = [(i.call_id, i.name, i.arguments) for i in final.output if i.type == "function_call"]
    assert calls == expected["calls"]
    assert final.instructions == "Be brief."
    assert final.usage is not None and final.usage.input_tokens == expected["prompt_tokens"]


def _expected_from_chat(path: Path) -> dict[str, Any]:
    """Concatenate a recording's deltas independently of the code under test."""
    content, reasoning, calls, prompt = "", "", {}, 0
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line.startswith("data:") or line.endswith("[DONE]"):
            continue
        chunk = json.loads(line[5:])
        if chunk.get("usage"):
            prompt = chunk["usage"].get("prompt_tokens", 0)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content += delta.get("content") or ""
            reasoning += delta.get("reasoning") or delta.get("reasoning_content") or ""
            for frag in delta.get("tool_calls") or []:
                call = calls.setdefault(frag["index"], ["", "", ""])
                call[0] = frag.get("id") or call[0]
                call[1] = (frag.get("function") or {}).get("name") or call[1]
                call[2] += (frag.get("function") or {}).get("arguments") or ""
    return {
        "content": content,
        "reasoning": reasoning,
        "prompt_tokens": prompt,
        "calls": [tuple(calls[i]) for i in sorted(calls)],
    }


def test_client_disconnect_closes_the_upstream(servers: tuple[str, FakeUpstream]) -> None:
    url, upstream = servers
    upstream.slow_closed.clear()
    body = {"model": "slow", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=10) as client:
        with client.stream("POST", url + "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            lines = 0
            for line in response.iter_lines():
                lines += line.startswith("data: ")
                if lines >= 5:
                    break
    assert upstream.slow_closed.wait(10), "the upstream stream was not closed"
    sent_at_close = upstream.slow_sent
    time.sleep(0.2)
    assert upstream.slow_sent == sent_at_close, "the upstream kept streaming"
    assert sent_at_close < 1999
