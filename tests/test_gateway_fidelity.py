"""What a client asks for through the gateway, it gets: log probabilities, reasoning
summaries, any tool name, and the upstream's own errors.

The strict openai SDK (and raw HTTP) against the gateway on 127.0.0.1, in front of the
scripted chat upstream.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import openai
import pytest
from gateway_support import gateway, sdk
from gateway_upstream import MIDSTREAM_ERROR, PIECE, REASONING, ModelUpstream, token_logprob
from http_support import check_stream, parse_sse

import responses_stream as rs

CHAT_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
LONG = "lookup_" + "x" * 63  # 70 characters
LOGPROBS = "message.output_text.logprobs"


def stream_events(gw: str, base: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    answer = httpx.post(gw + base + "/responses", json={**body, "stream": True}, timeout=30)
    assert answer.status_code == 200, answer.text
    events, _ = parse_sse(answer.text)
    check_stream(events)
    dialect = "openai" if base == "/v1" else "openresponses"
    assert rs.validate_payloads(events, dialect, strict=True) == []
    return events


# -- log probabilities ------------------------------------------------------------------
def expected_logprobs(text: str, top: int) -> list[dict[str, Any]]:
    """What the upstream sent for ``text``, as Responses logprobs."""
    pieces = [text[i : i + PIECE] for i in range(0, len(text), PIECE)]
    out = []
    for i, piece in enumerate(pieces):
        chat = token_logprob(piece, i, top)
        out.append(
            {
                "token": chat["token"],
                "logprob": chat["logprob"],
                "bytes": chat["bytes"],
                "top_logprobs": chat["top_logprobs"],
            }
        )
    return out


@pytest.mark.parametrize("base", ["/v1", "/openresponses/v1"])
def test_logprobs_asked_for_are_delivered(
    gw: str, upstream: tuple[str, ModelUpstream], base: str
) -> None:
    body = {"model": "fake-model", "input": "Count", "include": [LOGPROBS], "top_logprobs": 2}
    events = stream_events(gw, base, body)
    sent = upstream[1].last.body
    assert (sent["logprobs"], sent["top_logprobs"]) == (True, 2)
    text = "Hello! You said: Count"
    want = expected_logprobs(text, 2)
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert [lp for e in deltas for lp in e["logprobs"]] == want
    [done] = [e for e in events if e["type"] == "response.output_text.done"]
    assert done["text"] == text and done["logprobs"] == want
    final = events[-1]["response"]
    [message] = [o for o in final["output"] if o["type"] == "message"]
    assert message["content"][0]["logprobs"] == want


def test_logprobs_through_the_strict_sdk(gw: str) -> None:
    response = sdk(gw).responses.create(
        model="fake-model", input="Hi", include=[LOGPROBS], top_logprobs=1
    )
    [message] = [o for o in response.output if o.type == "message"]
    got = [lp.token for lp in message.content[0].logprobs or []]
    assert "".join(got) == response.output_text == "Hello! You said: Hi"


def test_no_logprobs_unless_asked(gw: str, upstream: tuple[str, ModelUpstream]) -> None:
    events = stream_events(gw, "/v1", {"model": "fake-model", "input": "Hi", "top_logprobs": 3})
    assert "logprobs" not in upstream[1].last.body
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert all(e["logprobs"] == [] for e in deltas)


def test_logprobs_go_back_to_chat_clients(gw: str) -> None:
    """A chat client with ``logprobs: true`` in front of a Responses upstream (here a
    second gateway, in front of the chat upstream): the front gateway asks for the
    logprobs include and carries the logprobs back on its chunks."""
    with gateway(gw + "/v1") as front:
        client = sdk(front)
        chunks = list(
            client.chat.completions.create(
                model="fake-model",
                messages=[{"role": "user", "content": "Hi"}],
                stream=True,
                logprobs=True,
                top_logprobs=1,
            )
        )
        answer = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "Hi"}], logprobs=True
        )
    want = expected_logprobs("Hello! You said: Hi", 1)
    carried = [
        lp.model_dump()
        for c in chunks
        for choice in c.choices
        if choice.logprobs and choice.logprobs.content
        for lp in choice.logprobs.content
    ]
    assert carried == want
    assert answer.choices[0].logprobs is not None
    folded = [lp.model_dump() for lp in answer.choices[0].logprobs.content or []]
    assert [lp["token"] for lp in folded] == [lp["token"] for lp in want]


# -- reasoning summaries ----------------------------------------------------------------
def test_a_summary_asked_for_is_streamed_as_one(gw: str) -> None:
    body = {"model": "fake-model", "input": "Hi", "reasoning": {"summary": "auto"}}
    events = stream_events(gw, "/v1", body)
    kinds = [e["type"] for e in events]
    assert "response.reasoning_summary_part.added" in kinds
    assert "response.reasoning_summary_part.done" in kinds
    deltas = [e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta"]
    assert "".join(deltas) == "".join(REASONING)
    [reasoning] = [o for o in events[-1]["response"]["output"] if o["type"] == "reasoning"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "".join(REASONING)}]
    with sdk(gw).responses.stream(
        model="fake-model", input="Hi", reasoning={"summary": "auto"}
    ) as stream:
        final = stream.get_final_response()
    [item] = [o for o in final.output if o.type == "reasoning"]
    assert item.summary[0].text == "".join(REASONING)


def test_without_a_summary_reasoning_is_reasoning_text(gw: str) -> None:
    events = stream_events(gw, "/v1", {"model": "fake-model", "input": "Hi"})
    kinds = {e["type"] for e in events}
    assert "response.reasoning_text.delta" in kinds
    assert not any(k.startswith("response.reasoning_summary") for k in kinds)


# -- tool names -------------------------------------------------------------------------
NAMESPACED = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "agents",
    "tools": [{"type": "function", "name": "close_agent", "parameters": {"type": "object"}}],
}
LONG_TOOL = {"type": "function", "name": LONG, "parameters": {"type": "object"}}


def sent_names(request: Any) -> list[str]:
    body = request.body
    names = [t["function"]["name"] for t in body.get("tools", [])]
    for message in body["messages"]:
        names += [c["function"]["name"] for c in message.get("tool_calls") or []]
    return names


@pytest.mark.parametrize("tool", [NAMESPACED, LONG_TOOL], ids=["namespaced", "70 characters"])
@pytest.mark.parametrize("stream", [True, False])
def test_any_tool_name_round_trips(
    gw: str, upstream: tuple[str, ModelUpstream], tool: dict[str, Any], stream: bool
) -> None:
    fake = upstream[1]
    client = sdk(gw)
    declared = "close_agent" if tool is NAMESPACED else LONG
    if stream:
        with client.responses.stream(model="fake-model", input="go", tools=[tool]) as events:
            first = events.get_final_response()
    else:
        first = client.responses.create(model="fake-model", input="go", tools=[tool])
    assert all(CHAT_NAME.fullmatch(n) for n in sent_names(fake.last))
    [call] = [o for o in first.output if o.type == "function_call"]
    assert call.name == declared
    if tool is NAMESPACED:
        assert call.namespace == "multi_agent_v1"
    assert client.responses.retrieve(first.id).output[-1].name == declared  # as stored
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "done"}
    second = client.responses.create(
        model="fake-model", input=[output], tools=[tool], previous_response_id=first.id
    )
    assert second.status == "completed"
    names = sent_names(fake.last)
    assert all(CHAT_NAME.fullmatch(n) for n in names) and len(set(names)) == 1
    # the same turn sent whole, without previous_response_id
    again = client.responses.create(
        model="fake-model",
        input=[call.model_dump(exclude_none=True), output],
        tools=[tool],
    )
    assert again.status == "completed"
    assert sent_names(fake.last) == names


# -- the upstream's own errors ----------------------------------------------------------
def test_a_midstream_error_keeps_its_code_and_message(gw: str) -> None:
    events = stream_events(gw, "/v1", {"model": "fake-error", "input": "Hi"})
    error, failed = events[-2], events[-1]
    assert (error["type"], failed["type"]) == ("error", "response.failed")
    upstream_error = MIDSTREAM_ERROR["error"]
    assert error["code"] == "500"
    assert upstream_error["message"] in error["message"]
    assert "server_error" in error["message"]
    assert failed["response"]["error"]["code"] == "server_error"
    assert upstream_error["message"] in failed["response"]["error"]["message"]


def test_a_midstream_error_of_a_call_not_streamed(gw: str) -> None:
    with pytest.raises(openai.InternalServerError) as info:
        sdk(gw).responses.create(model="fake-error", input="Hi")
    assert info.value.status_code == 500
    body = info.value.body
    assert isinstance(body, dict) and body["code"] == "500"
    assert MIDSTREAM_ERROR["error"]["message"] in body["message"]


def test_an_unreadable_chunk_is_still_invalid_upstream_chunk() -> None:
    out = list(rs.sse_from_chat(["data: {not json}\n\n"], model="m"))
    text = b"".join(out).decode()
    assert "invalid_upstream_chunk" in text
    assert json.loads(text.split("data: ")[-1].split("\n")[0])["type"] == "response.failed"
