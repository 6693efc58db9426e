"""The gateway end to end: the strict openai SDK (and raw httpx, and a WebSocket client)
against the gateway over real HTTP on 127.0.0.1, in front of a fake model upstream."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from gateway_support import (
    event_errors,
    gateway,
    open_responses_view,
    schema_errors,
    sdk,
    ws_turn,
)
from gateway_upstream import ModelUpstream
from http_support import check_stream, parse_sse
from websockets.sync.client import connect

import responses_stream as rs

OR = "/openresponses/v1"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the weather",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    },
}


def text_of(response: Any) -> str:
    return "".join(
        part["text"]
        for item in response["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    )


# -- the openai dialect, with the SDK --------------------------------------------------
def test_a_non_streaming_response(gw: str) -> None:
    response = sdk(gw).responses.create(model="fake-model", input="Say hi")
    assert response.status == "completed"
    assert response.output_text == "Hello! You said: Say hi"
    assert [i.type for i in response.output] == ["reasoning", "message"]


def test_a_streaming_response_is_valid(gw: str) -> None:
    with sdk(gw).responses.stream(model="fake-model", input="Count to 3") as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert final.output_text == "Hello! You said: Count to 3"
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    body = {"model": "fake-model", "input": "Count to 3", "stream": True}
    events, _ = parse_sse(httpx.post(gw + "/v1/responses", json=body, timeout=30).text)
    check_stream(events)
    assert [v for v in rs.validate_payloads(events) if v.severity == "error"] == []


def test_a_tool_call_with_tool_choice(gw: str, upstream: tuple[str, ModelUpstream]) -> None:
    response = sdk(gw).responses.create(
        model="fake-model",
        input="Weather in SF?",
        tools=[WEATHER],  # type: ignore[list-item]
        tool_choice={"type": "function", "name": "get_weather"},
    )
    sent = upstream[1].last.body
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    call = response.output[-1]
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments) == {"location": "San Francisco, CA"}
    assert response.tool_choice.type == "function"  # type: ignore[union-attr]


def test_previous_response_id_sends_the_earlier_turn(
    gw: str, upstream: tuple[str, ModelUpstream]
) -> None:
    client = sdk(gw)
    first = client.responses.create(model="fake-echo", input="My name is Alice.")
    second = client.responses.create(
        model="fake-echo", input="What is my name?", previous_response_id=first.id
    )
    messages = upstream[1].last.body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"] == "My name is Alice."
    assert messages[1]["content"] == first.output_text
    assert messages[1]["reasoning_content"] == "Considering the request."
    assert second.previous_response_id == first.id


def test_a_tool_result_continues_the_call(gw: str, upstream: tuple[str, ModelUpstream]) -> None:
    client = sdk(gw)
    first = client.responses.create(model="fake-model", input="Weather?", tools=[WEATHER])  # type: ignore[list-item]
    call = first.output[-1]
    assert call.type == "function_call"
    second = client.responses.create(
        model="fake-model",
        previous_response_id=first.id,
        tools=[WEATHER],  # type: ignore[list-item]
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
    )
    messages = upstream[1].last.body["messages"]
    assert messages[-2]["tool_calls"][0]["id"] == call.call_id
    assert messages[-1] == {"role": "tool", "tool_call_id": call.call_id, "content": "sunny"}
    assert second.status == "completed"


def test_retrieve_input_items_and_delete(gw: str) -> None:
    client = sdk(gw)
    made = client.responses.create(model="fake-model", input="Keep me")
    got = client.responses.retrieve(made.id)
    assert got.id == made.id and got.output_text == made.output_text
    items = client.responses.input_items.list(made.id)
    assert [i.type for i in items.data] == ["message"]
    assert items.data[0].content[0].text == "Keep me"  # type: ignore[union-attr]
    client.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)


def test_store_false_is_not_kept(gw: str) -> None:
    client = sdk(gw)
    made = client.responses.create(model="fake-model", input="Forget me", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)
    with pytest.raises(openai.NotFoundError) as info:
        client.responses.create(model="fake-model", input="x", previous_response_id=made.id)
    assert info.value.code == "previous_response_not_found"


def test_a_429_stays_a_rate_limit_error_with_its_retry_after(gw: str) -> None:
    with pytest.raises(openai.RateLimitError) as info:
        sdk(gw).responses.create(model="fake-429", input="hi")
    assert info.value.response.headers["retry-after"] == "7"
    with pytest.raises(openai.RateLimitError):
        sdk(gw).responses.create(model="fake-429", input="hi", stream=True)


def test_an_untranslatable_field_is_a_400_naming_it(gw: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        sdk(gw).responses.create(model="fake-model", input="hi", prompt={"id": "pmpt_1"})
    assert info.value.param == "prompt"
    with pytest.raises(openai.BadRequestError) as info:
        sdk(gw).responses.create(model="fake-model", input="hi", extra_body={"frobnicate": 1})
    assert info.value.param == "frobnicate"


def test_the_api_key_is_forwarded(gw: str, upstream: tuple[str, ModelUpstream]) -> None:
    sdk(gw).responses.create(model="fake-model", input="hi")
    assert upstream[1].last.authorization == "Bearer sk-client"


# -- /v1/chat/completions from the upstream's /responses -----------------------------
def test_chat_completions_without_streaming(gw: str) -> None:
    completion = sdk(gw).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.object == "chat.completion"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content
    assert completion.usage is not None


def test_chat_completions_streaming(gw: str, upstream: tuple[str, ModelUpstream]) -> None:
    client = sdk(gw)
    with client.chat.completions.stream(
        model="fake-model",
        messages=[{"role": "system", "content": "Be brief"}, {"role": "user", "content": "hi"}],
        stream_options={"include_usage": True},
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    plain = client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}]
    )
    assert final.choices[0].message.content == plain.choices[0].message.content
    assert final.usage is not None
    sent = upstream[1].requests[-2].body
    assert sent["input"][0] == {
        "type": "message",
        "role": "system",
        "content": [{"type": "input_text", "text": "Be brief"}],
    }


def test_models_pass_through_and_health(gw: str) -> None:
    assert [m.id for m in sdk(gw).models.list()] == ["fake-model"]
    assert httpx.get(gw + "/health").json()["status"] == "ok"


# -- the Open Responses dialect, against the vendored schema ---------------------------
def test_open_responses_non_streaming_matches_the_schema(gw: str) -> None:
    body = {
        "model": "fake-model",
        "input": [
            {"type": "message", "role": "system", "content": "You are a pirate."},
            {"type": "message", "role": "user", "content": "Say hello."},
        ],
    }
    response = httpx.post(gw + OR + "/responses", json=body, timeout=30).json()
    assert schema_errors("ResponseResource", response) == []
    assert response["status"] == "completed"


JSON_FORMAT = {"type": "json_schema", "name": "answer", "schema": {"type": "object"}}


@pytest.mark.parametrize(
    ("given", "echoed"),
    [
        ({"reasoning": {}, "text": {}}, {}),
        ({"reasoning": {"summary": "auto"}}, {"summary": "auto"}),
        ({"text": {"verbosity": "low"}}, {"verbosity": "low"}),
        # null is left out, or filled (found by schema fuzzing)
        ({"text": {"format": None, "verbosity": None}}, {}),
        ({"reasoning": {"effort": None, "summary": "auto"}}, {"summary": "auto"}),
        (
            {"text": {"format": {**JSON_FORMAT, "description": None, "strict": None}}},
            {"format": {**JSON_FORMAT, "description": None, "strict": False}},
        ),
    ],
)
def test_echoed_reasoning_and_text_hold_what_the_schema_requires(
    gw: str, given: dict[str, Any], echoed: dict[str, Any]
) -> None:
    """``reasoning: {}`` and ``text: {}`` are echoed with the keys the response schema
    requires (effort and summary, a format), as OpenAI's API fills them; what the request
    gave is kept."""
    body = {"model": "fake-model", "input": "Say hello.", **given}
    for stream in (False, True):
        raw = httpx.post(gw + OR + "/responses", json={**body, "stream": stream}, timeout=30)
        response = parse_sse(raw.text)[0][-1]["response"] if stream else raw.json()
        assert schema_errors("ResponseResource", open_responses_view(response)) == [], stream
        if "reasoning" in given:
            assert response["reasoning"] == {"effort": None, "summary": None, **echoed}
        if "text" in given:
            assert response["text"] == {"format": {"type": "text"}, **echoed}


def test_open_responses_streaming_matches_the_schema(gw: str) -> None:
    body = {"model": "fake-model", "input": "Count from 1 to 5.", "stream": True}
    raw = httpx.post(gw + OR + "/responses", json=body, timeout=30).text
    events, done = parse_sse(raw)
    assert done
    for event in events:
        assert event_errors(event) == [], event["type"]
    assert events[-1]["type"] == "response.completed"


def test_open_responses_image_input_reaches_the_upstream(
    gw: str, upstream: tuple[str, ModelUpstream]
) -> None:
    image = "data:image/png;base64,iVBORw0KGgo="
    body = {
        "model": "fake-model",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": image},
                ],
            }
        ],
    }
    response = httpx.post(gw + OR + "/responses", json=body, timeout=30).json()
    assert schema_errors("ResponseResource", response) == []
    content = upstream[1].last.body["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": image}},
    ]


def test_compaction_then_a_new_chain(gw: str, upstream: tuple[str, ModelUpstream]) -> None:
    body = {
        "model": "fake-model",
        "input": [
            {"type": "message", "role": "user", "content": "Launch on Tuesday."},
            {"type": "message", "role": "assistant", "content": "Understood."},
        ],
    }
    compacted = httpx.post(gw + OR + "/responses/compact", json=body, timeout=30).json()
    assert schema_errors("CompactResource", compacted) == []
    assert [i["type"] for i in compacted["output"]] == ["message", "compaction"]
    follow = {
        "model": "fake-echo",
        "input": [*compacted["output"], {"type": "message", "role": "user", "content": "Go"}],
    }
    response = httpx.post(gw + OR + "/responses", json=follow, timeout=30).json()
    assert response["status"] == "completed"
    messages = upstream[1].last.body["messages"]
    assert messages[1]["content"].startswith("Summary of the earlier conversation:\n")
    missing = httpx.post(gw + OR + "/responses/compact", json={"input": "x"}, timeout=30)
    assert missing.status_code == 400


def test_compaction_keeps_parts_without_the_nulls_a_request_sent(gw: str) -> None:
    """A kept user message's parts lose the null keys the request sent, and an image gets
    its detail: the output schema takes no null and needs the detail (found by schema
    fuzzing)."""
    part = {"type": "input_file", "filename": "a.txt", "file_data": "aGk=", "file_url": None}
    image = {"type": "input_image", "image_url": "data:image/png;base64,AA=="}
    body = {"model": "fake-model", "input": [{"role": "user", "content": [part, image]}]}
    compacted = httpx.post(gw + OR + "/responses/compact", json=body, timeout=30).json()
    assert schema_errors("CompactResource", compacted) == []
    kept = [{k: v for k, v in part.items() if v}, {**image, "detail": "auto"}]
    assert compacted["output"][0]["content"] == kept


def _turn(ws: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    return ws_turn(ws, {"type": "response.create", **body})


def test_websocket_turns_continuation_and_eviction(gw: str) -> None:
    url = "ws" + gw.removeprefix("http") + OR + "/responses"
    with connect(url) as ws:
        first = _turn(ws, {"model": "fake-model", "store": False, "input": "Remember cobalt."})
        for event in first:
            assert event_errors(event) == []
        rid = first[-1]["response"]["id"]
        second = _turn(
            ws,
            {"model": "fake-model", "store": False, "previous_response_id": rid, "input": "Word?"},
        )
        assert second[-1]["type"] == "response.completed"
        bad = [{"type": "function_call_output", "call_id": "call_missing", "output": "x"}]
        failed = _turn(
            ws, {"model": "fake-model", "store": False, "previous_response_id": rid, "input": bad}
        )
        assert failed[-1]["type"] == "error" and failed[-1]["status"] == 400
        assert schema_errors("WebSocketErrorEvent", failed[-1]) == []
        again = _turn(
            ws, {"model": "fake-model", "store": False, "previous_response_id": rid, "input": "x"}
        )
        assert again[-1]["error"]["code"] == "previous_response_not_found"
    with connect(url) as ws:  # store: false does not outlive its connection
        other = _turn(
            ws, {"model": "fake-model", "store": False, "previous_response_id": rid, "input": "x"}
        )
        assert other[-1]["error"]["code"] == "previous_response_not_found"
        streamed = _turn(ws, {"model": "fake-model", "input": "x", "stream": True})
        assert streamed[-1]["type"] == "response.completed"  # stream: taken and ignored
        background = _turn(ws, {"model": "fake-model", "input": "x", "background": True})
        assert background[-1]["error"]["param"] == "background"


def test_limits_a_large_body_and_a_long_websocket(upstream: tuple[str, ModelUpstream]) -> None:
    with gateway(upstream[0] + "/v1", max_body_bytes=4096, websocket_seconds=0.3) as url:
        big = httpx.post(url + "/v1/responses", json={"model": "m", "input": "x" * 5000})
        assert big.status_code == 413 and big.json()["error"]["code"] == "request_too_large"
        with connect("ws" + url.removeprefix("http") + "/v1/responses") as ws:
            event = json.loads(ws.recv(timeout=10))
            assert event["error"]["code"] == "websocket_connection_limit_reached"
            assert schema_errors("WebSocketErrorEvent", event) == []


def test_unknown_routes_answer_in_the_error_shape(gw: str) -> None:
    missing = httpx.get(gw + "/v1/nothing")
    assert missing.status_code == 404 and "no such route" in missing.json()["error"]["message"]
    wrong = httpx.put(gw + "/v1/responses")
    assert wrong.status_code == 405 and wrong.json()["error"]["type"]
    assert wrong.headers["allow"] == "POST"  # RFC 9110: a 405 names the methods it takes
    stored = httpx.put(gw + "/v1/responses/resp_1")
    assert stored.status_code == 405
    assert set(stored.headers["allow"].split(", ")) >= {"GET", "DELETE"}


def test_an_upstream_cut_mid_stream_ends_failed(gw: str) -> None:
    body = {"model": "fake-cut", "input": "hi", "stream": True}
    events, _ = parse_sse(httpx.post(gw + "/v1/responses", json=body, timeout=30).text)
    check_stream(events)
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert "the upstream stream broke off" in events[-2]["message"], events[-2]
    plain = httpx.post(gw + "/v1/responses", json={**body, "stream": False}, timeout=30)
    assert plain.status_code == 502
    assert "broke off" in plain.json()["error"]["message"], plain.text
