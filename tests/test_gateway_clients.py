"""Requests that real clients sent (tests/recordings/client-requests: Codex CLI, the
Vercel AI SDK, openai-agents), replayed against the gateway over real HTTP and
WebSocket on 127.0.0.1, in front of the scripted chat upstream.

Each must be answered (200, or a completed WebSocket turn), its stream must pass the
validator with ``strict``, and the chat request it caused upstream must fit the openai
SDK's ``CompletionCreateParams``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_support import serve_process, ws_turn
from gateway_upstream import ModelUpstream, Recorded
from http_support import check_stream, parse_sse
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from sdk_params import sdk_errors
from sdk_shapes import sdk_events
from websockets.sync.client import connect

import responses_stream as rs

CLIENTS = Path(__file__).resolve().parent / "recordings" / "client-requests"
CHAT_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
REFERENCED_TYPES = {"rs_": "reasoning", "msg_": "message", "fc_": "function_call"}


def captured(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((CLIENTS / f"{name}.json").read_text(encoding="utf-8"))
    return body


def strict_errors(events: list[dict[str, Any]]) -> list[str]:
    return [f"{v.rule}: {v.message}" for v in rs.validate_payloads(events, strict=True)]


def check_upstream(request: Recorded) -> dict[str, Any]:
    """The chat request the gateway sent: the SDK's type, and tool names chat APIs take."""
    body = request.body
    assert request.path == "/v1/chat/completions"
    assert sdk_errors(CompletionCreateParamsStreaming, body) == []
    for tool in body.get("tools", []):
        assert CHAT_NAME.fullmatch(tool[tool["type"]]["name"]), tool
    for message in body["messages"]:
        for call in message.get("tool_calls") or []:
            assert CHAT_NAME.fullmatch(call[call["type"]]["name"]), call
    assert isinstance(body, dict)
    return body


def replay(gw: str, fake: ModelUpstream, body: dict[str, Any]) -> tuple[httpx.Response, Any]:
    """POST ``body`` as the client did; the answer and the final response.

    A streamed answer is checked as a stream; a body sent without ``stream`` is also
    sent streamed once, so that its stream is checked too.
    """
    before = len(fake.requests)
    answer = httpx.post(gw + "/v1/responses", json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    if body.get("stream"):
        events, _ = parse_sse(answer.text)
        final = check_stream(events)
        assert strict_errors(events) == []
    else:
        final = answer.json()
        streamed = httpx.post(gw + "/v1/responses", json={**body, "stream": True}, timeout=30)
        assert streamed.status_code == 200, streamed.text
        events, _ = parse_sse(streamed.text)
        check_stream(events)
        assert strict_errors(events) == []
    assert final["status"] == "completed"
    sent = fake.requests[before:]
    assert sent, "no upstream request"
    for request in sent:
        check_upstream(request)
    return answer, final


@pytest.mark.parametrize(
    "name",
    [
        "codex-http-text",
        "codex-http-shell-tool-turn1",
        "codex-http-shell-tool-turn2-output",
        "codex-http-catalog-model-gpt-5.5",
        "aisdk-history-turn1",
        "aisdk-tool-loop-step1",
    ],
)
def test_a_captured_request_is_answered(
    gw: str, upstream: tuple[str, ModelUpstream], name: str
) -> None:
    body = captured(name)
    answer, final = replay(gw, upstream[1], body)
    assert final["output"], "an answer with no output"
    if name.startswith("codex"):  # web_search cannot run upstream: dropped, and said so
        assert answer.headers["x-dropped-tools"] == "web_search"
        assert "client_metadata" in body
    else:
        assert "x-dropped-tools" not in answer.headers


def test_codex_namespaced_tools_reach_the_upstream_under_names_it_takes(
    gw: str, upstream: tuple[str, ModelUpstream]
) -> None:
    body = captured("codex-http-text")
    spaces = [t for t in body["tools"] if t["type"] == "namespace"]
    assert spaces, "the capture has a namespace tool"
    replay(gw, upstream[1], body)
    names = [t["function"]["name"] for t in upstream[1].last.body["tools"]]
    for space in spaces:
        for sub in space["tools"]:
            assert f"{space['name']}__{sub['name']}" in names


def test_codex_shell_turn_sends_the_call_and_its_output(
    gw: str, upstream: tuple[str, ModelUpstream]
) -> None:
    body = captured("codex-http-shell-tool-turn2-output")
    [call] = [i for i in body["input"] if i.get("type") == "function_call"]
    replay(gw, upstream[1], body)
    messages = upstream[1].last.body["messages"]
    [assistant] = [m for m in messages if m.get("tool_calls")]
    assert assistant["tool_calls"][0]["function"]["name"] == call["name"]
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": call["call_id"],
        "content": messages[-1]["content"],
    }
    assert messages[-1]["content"]


def test_codex_client_tool_search_is_a_function_upstream(
    gw: str, upstream: tuple[str, ModelUpstream]
) -> None:
    body = captured("codex-http-catalog-model-gpt-5.5")
    [search] = [t for t in body["tools"] if t["type"] == "tool_search"]
    assert search["execution"] == "client"
    replay(gw, upstream[1], body)
    tools = upstream[1].last.body["tools"]
    [sent] = [
        t for t in tools if t["type"] == "function" and t["function"]["name"] == "tool_search"
    ]
    assert sent["function"]["parameters"] == search["parameters"]


def test_a_call_of_client_tool_search_comes_back_as_tool_search_call(
    gw: str, upstream: tuple[str, ModelUpstream]
) -> None:
    [search] = [
        t
        for t in captured("codex-http-catalog-model-gpt-5.5")["tools"]
        if t["type"] == "tool_search"
    ]
    body = {"model": "scripted-tool", "input": "find a tool", "tools": [search]}
    for stream in (True, False):
        answer, final = replay(gw, upstream[1], {**body, "stream": stream})
        [item] = final["output"]
        assert (item["type"], item["execution"], item["status"]) == (
            "tool_search_call",
            "client",
            "completed",
        )
        assert isinstance(item["arguments"], dict) and item["call_id"]
    # the call and its output, sent back, are the call and the tool message upstream
    output = {"type": "tool_search_output", "call_id": item["call_id"], "tools": []}
    follow = {**body, "input": [*final["output"], output]}
    replay(gw, upstream[1], follow)
    messages = upstream[1].last.body["messages"]
    assert messages[-2]["tool_calls"][0]["function"]["name"] == "tool_search"
    assert messages[-1]["tool_call_id"] == item["call_id"]


def _with_references(body: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
    """``body`` with each item_reference id replaced by the id of the earlier response's
    output item of the same type (the capture's ids are those of another server)."""
    out = json.loads(json.dumps(body))
    for item in out["input"]:
        if item.get("type") == "item_reference":
            kind = next(t for p, t in REFERENCED_TYPES.items() if item["id"].startswith(p))
            [match] = [o for o in earlier["output"] if o["type"] == kind]
            item["id"] = match["id"]
    return out


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("aisdk-history-turn1", "aisdk-history-turn2-item-reference"),
        ("aisdk-tool-loop-step1", "aisdk-tool-loop-step2-item-reference"),
    ],
)
def test_item_references_resolve_to_stored_items(
    gw: str, upstream: tuple[str, ModelUpstream], first: str, second: str
) -> None:
    _, earlier = replay(gw, upstream[1], captured(first))
    body = _with_references(captured(second), earlier)
    [reference] = [i for i in body["input"] if i.get("type") == "item_reference"]
    [item] = [o for o in earlier["output"] if o["id"] == reference["id"]]
    replay(gw, upstream[1], body)
    messages = upstream[1].last.body["messages"]
    [assistant] = [m for m in messages if m["role"] == "assistant"]
    if item["type"] == "message":  # the earlier answer is in the history
        assert assistant["content"] == item["content"][0]["text"]
        assert "reasoning_content" not in assistant  # only what was referenced
    else:  # the referenced reasoning goes back with the call that followed it
        assert item["type"] == "reasoning"
        assert assistant["reasoning_content"] == "Considering the request."
        assert assistant["tool_calls"][0]["function"]["name"] == "weather"


def test_an_unknown_item_reference_is_a_400_naming_its_index(gw: str) -> None:
    body = captured("aisdk-history-turn2-item-reference")
    answer = httpx.post(gw + "/v1/responses", json=body, timeout=30)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["param"], error["code"]) == ("input[1]", "item_not_found")
    assert "msg_31b80792d204972971b10955" in error["message"]


def test_an_item_of_a_response_not_stored_is_not_found(gw: str) -> None:
    earlier = httpx.post(
        gw + "/v1/responses", json={"model": "m", "input": "hi", "store": False}, timeout=30
    ).json()
    [message] = [o for o in earlier["output"] if o["type"] == "message"]
    body = {"model": "m", "input": [{"type": "item_reference", "id": message["id"]}]}
    answer = httpx.post(gw + "/v1/responses", json=body, timeout=30)
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "input[0]"


def ws_url(gw: str) -> str:
    return "ws" + gw.removeprefix("http") + "/v1/responses"


def check_ws_turn(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert events[-1]["type"] == "response.completed", events[-1]
    models = sdk_events()
    for event in events:  # as the strict openai SDK reads each one
        models[event["type"]].model_validate(event)
    assert strict_errors(events) == []
    final: dict[str, Any] = events[-1]["response"]
    return final


def test_codex_websocket_prewarm_then_turn(gw: str, upstream: tuple[str, ModelUpstream]) -> None:
    fake = upstream[1]
    prewarm, turn = captured("codex-ws-prewarm-generate-false"), captured("codex-ws-turn")
    assert (prewarm["generate"], prewarm["stream"], turn["stream"]) == (False, True, True)
    with connect(ws_url(gw)) as ws:
        before = len(fake.requests)
        warm = check_ws_turn(ws_turn(ws, prewarm))
        assert warm["output"] == [] and len(fake.requests) == before  # no model call
        done = check_ws_turn(ws_turn(ws, turn))
        assert done["output"]
        check_upstream(fake.last)
        # Codex's next turn builds on the prewarm (store: false: kept by the connection)
        follow = {**turn, "previous_response_id": warm["id"]}
        check_ws_turn(ws_turn(ws, follow))
        developer = prewarm["input"][0]["content"][0]["text"]
        assert fake.last.body["messages"][0]["content"] == developer


def test_openai_agents_websocket_turns(gw: str, upstream: tuple[str, ModelUpstream]) -> None:
    with connect(ws_url(gw)) as ws:
        for name in ("agents-ws-turn1", "agents-ws-turn2"):
            frame = captured(name)
            assert frame["stream"] is True
            final = check_ws_turn(ws_turn(ws, frame))
            assert final["output"]
            check_upstream(upstream[1].last)
        assert final["output"][-1]["type"] == "message"  # the follow-up answers in text


def test_item_references_on_a_websocket_find_its_unstored_turns(gw: str) -> None:
    first = {"type": "response.create", "model": "scripted-text", "input": "hi", "store": False}
    with connect(ws_url(gw)) as ws:
        final = check_ws_turn(ws_turn(ws, first))
        [message] = [o for o in final["output"] if o["type"] == "message"]
        again = {**first, "input": [{"type": "item_reference", "id": message["id"]}]}
        check_ws_turn(ws_turn(ws, again))
    with connect(ws_url(gw)) as other:  # another connection does not have it
        [error] = ws_turn(other, again)
        assert (error["type"], error["status"]) == ("error", 400)
        assert (error["error"]["code"], error["error"]["param"]) == ("item_not_found", "input[0]")


# -- the real serve command: its flag and its log ---------------------------------------
def test_serve_logs_each_error_it_answers_without_keys_or_bodies(
    upstream: tuple[str, ModelUpstream],
) -> None:
    secret_key, secret_text = "sk-live-abcdef0123456789", "my secret is 42"
    with serve_process(upstream[0] + "/v1", "--store", "memory:") as (url, proc):
        body = {"model": "m", "input": secret_text, "colour": 1}
        headers = {"authorization": f"Bearer {secret_key}"}
        answer = httpx.post(url + "/v1/responses", json=body, headers=headers, timeout=30)
        assert answer.status_code == 400
        missing = httpx.get(url + "/v1/responses/resp_nothing", headers=headers, timeout=30)
        assert missing.status_code == 404
        proc.terminate()
        proc.wait(10)
        log = proc.stdout.read() if proc.stdout else ""
    assert "answered 400 unknown_parameter (param colour)" in log, log
    assert "answered 404" in log, log
    assert secret_key not in log and secret_text not in log


def test_serve_hosted_tools_refuse(upstream: tuple[str, ModelUpstream]) -> None:
    body = captured("codex-http-text")
    [web] = [i for i, t in enumerate(body["tools"]) if t["type"] == "web_search"]
    with serve_process(upstream[0] + "/v1", "--store", "memory:", "--hosted-tools", "refuse") as (
        url,
        _,
    ):
        answer = httpx.post(url + "/v1/responses", json=body, timeout=30)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["param"], error["code"]) == (f"tools[{web}].type", "unsupported_parameter")
