"""A server's own ``/v1/responses`` behind the gateway's Responses route (``--config``
``dialect: responses``): ``responses: repair`` makes its faulty stream strictly valid and
keeps the state the server has not (``stateless_upstream``: it refuses every stateful
field), ``responses: pass`` sends its bytes on unchanged and counts its faults."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest
from gateway_support import sdk, ws_turn
from http_support import serve
from stateless_upstream import StatelessUpstream
from websockets.sync.client import connect

from responses_stream import parse_sse, validate_payloads
from responses_stream._runtime.gateway.asgi import create_app
from responses_stream._runtime.gateway.config_file import ConfigError, load_config

CONFIG = """\
upstreams:
  - name: llama
    url: {repaired}/v1
    dialect: responses
  - name: seen
    url: {passed}/v1
    dialect: responses
    responses: pass
models:
  - match: repaired
    upstream: llama
    model: gemma
  - match: passed
    upstream: seen
"""
WEATHER = {"type": "function", "name": "weather", "parameters": {"type": "object"}}


@dataclass
class Setup:
    url: str
    repaired: StatelessUpstream
    passed: StatelessUpstream
    twin: str  # a server like ``passed``, asked directly


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    repaired, passed, twin = StatelessUpstream(), StatelessUpstream(), StatelessUpstream()
    path = tmp_path_factory.mktemp("responses-upstream") / "gateway.yaml"
    with repaired.serve() as a, passed.serve() as b, twin.serve() as c:
        path.write_text(CONFIG.format(repaired=a, passed=b), encoding="utf-8")
        app = create_app(config_file=str(path), store="memory:")
        with serve(app, lifespan="on") as url:
            yield Setup(url, repaired, passed, c)


def streamed(url: str, body: dict[str, object], base: str = "/v1") -> list[dict[str, object]]:
    r = httpx.post(url + base + "/responses", json={**body, "stream": True}, timeout=30)
    assert r.status_code == 200
    return [json.loads(m.data) for m in parse_sse([r.content]) if m.data != "[DONE]"]


def errors(events: list[dict[str, object]], dialect: str = "openai") -> list[str]:
    return [
        str(v) for v in validate_payloads(events, dialect, strict=True) if v.severity == "error"
    ]


# -- repair ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dialect,base", [("openai", "/v1"), ("openresponses", "/openresponses/v1")]
)
def test_a_servers_faulty_stream_comes_out_strictly_valid(
    setup: Setup, dialect: str, base: str
) -> None:
    events = streamed(setup.url, {"model": "repaired", "input": "Hi"}, base)
    assert errors(events, dialect) == []
    final = events[-1]["response"]
    assert isinstance(final, dict) and final["model"] == "gemma"  # as routed, as for chat
    text = final["output"][0]["content"][0]["text"]
    assert text == "Seen 1 items. You said: Hi"
    sent = setup.repaired.requests[-1]
    # stateless: the whole context, store false, the routed model, nothing the server refuses
    assert sent["model"] == "gemma" and sent["store"] is False and sent["stream"] is True
    assert "previous_response_id" not in sent and "background" not in sent


def test_the_strict_sdk_reads_a_repaired_answer_whole_and_streamed(setup: Setup) -> None:
    client = sdk(setup.url)
    answer = client.responses.create(model="repaired", input="Hello")
    assert answer.output_text == "Seen 1 items. You said: Hello"
    with client.responses.stream(model="repaired", input="Again") as stream:
        final = stream.get_final_response()
    assert final.output_text == "Seen 1 items. You said: Again"


def test_previous_response_id_over_a_server_that_refuses_it(setup: Setup) -> None:
    client = sdk(setup.url)
    first = client.responses.create(model="repaired", input="one")
    second = client.responses.create(model="repaired", input="two", previous_response_id=first.id)
    # the server saw the whole conversation, as plain items, not the gateway's ids
    assert second.output_text == "Seen 3 items. You said: two"
    sent = setup.repaired.requests[-1]["input"]
    assert [(i.get("role"), i["type"]) for i in sent] == [
        ("user", "message"),
        ("assistant", "message"),
        ("user", "message"),
    ]
    assert all("id" not in i and "status" not in i for i in sent)
    assert sent[1]["content"][0]["text"] == "Seen 1 items. You said: one"
    # kept by the gateway: retrieval, the input items, a third turn
    assert client.responses.retrieve(second.id).output_text == second.output_text
    listed = client.responses.input_items.list(second.id)
    assert [i.type for i in listed.data] == ["message"]
    third = client.responses.create(model="repaired", input="three", previous_response_id=second.id)
    assert third.output_text == "Seen 5 items. You said: three"


def test_a_call_in_the_servers_text_becomes_a_function_call_and_its_result_goes_back(
    setup: Setup,
) -> None:
    client = sdk(setup.url)
    with client.responses.stream(model="repaired", input="[call]", tools=[WEATHER]) as stream:
        kinds = [event.type for event in stream]
        asked = stream.get_final_response()
    assert "response.function_call_arguments.done" in kinds
    [call] = asked.output
    assert call.type == "function_call"
    assert (call.name, json.loads(call.arguments)) == ("weather", {"city": "Paris"})
    answer = client.responses.create(
        model="repaired",
        previous_response_id=asked.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=[WEATHER],
    )
    assert answer.output_text.startswith("Seen 3 items.")
    sent = setup.repaired.requests[-1]["input"]
    assert [i["type"] for i in sent] == ["message", "function_call", "function_call_output"]
    assert sent[1]["call_id"] == sent[2]["call_id"] == call.call_id


def test_a_server_error_mid_stream_keeps_its_code_and_message(setup: Setup) -> None:
    events = streamed(setup.url, {"model": "repaired", "input": "[fail]"})
    assert errors(events) == []
    error, failed = events[-2], events[-1]
    assert error["type"] == "error" and error["code"] == "500"
    assert "does not match the expected format" in str(error["message"])
    assert failed["type"] == "response.failed"
    with pytest.raises(openai.APIStatusError) as caught:
        sdk(setup.url).responses.create(model="repaired", input="[fail]")
    assert caught.value.status_code == 500
    assert "expected format" in caught.value.message


def test_a_conversation_and_a_background_response_over_a_stateless_server(setup: Setup) -> None:
    client = sdk(setup.url)
    conversation = client.conversations.create()
    client.responses.create(model="repaired", input="first", conversation=conversation.id)
    second = client.responses.create(model="repaired", input="second", conversation=conversation.id)
    assert second.output_text == "Seen 3 items. You said: second"
    items = client.conversations.items.list(conversation.id, order="asc")
    assert [i.type for i in items.data] == ["message"] * 4
    queued = client.responses.create(model="repaired", input="later", background=True)
    deadline = time.monotonic() + 10
    while (found := client.responses.retrieve(queued.id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert found.status == "completed" and found.output_text == "Seen 1 items. You said: later"


def test_compaction_over_a_repaired_server(setup: Setup) -> None:
    first = sdk(setup.url).responses.create(model="repaired", input="remember this")
    body = {"model": "repaired", "previous_response_id": first.id}
    key = {"authorization": "Bearer sk-client"}  # the SDK's key: the same tenant
    r = httpx.post(setup.url + "/v1/responses/compact", json=body, headers=key, timeout=30)
    assert r.status_code == 200, r.text
    assert [i["type"] for i in r.json()["output"]] == ["message", "compaction"]
    sent = setup.repaired.requests[-1]
    assert sent["store"] is False and "tools" not in sent
    assert sent["input"][0]["content"][0]["text"] == "remember this"


def test_item_references_and_a_websocket_over_a_repaired_server(setup: Setup) -> None:
    client = sdk(setup.url)
    first = client.responses.create(model="repaired", input="keep me")
    reference = {"type": "item_reference", "id": first.output[0].id}
    again = client.responses.create(
        model="repaired", input=[reference, {"role": "user", "content": "and me"}]
    )
    assert again.output_text == "Seen 2 items. You said: and me"
    sent = setup.repaired.requests[-1]["input"]
    assert sent[0]["content"][0]["text"] == "Seen 1 items. You said: keep me"  # resolved
    url = "ws" + setup.url.removeprefix("http") + "/v1/responses"
    with connect(url, additional_headers={"authorization": "Bearer sk-client"}) as ws:
        events = ws_turn(ws, {"type": "response.create", "model": "repaired", "input": "ws"})
        follow = {
            "type": "response.create",
            "model": "repaired",
            "input": "more",
            "previous_response_id": events[-1]["response"]["id"],
        }
        more = ws_turn(ws, follow)
    assert errors(events) == [] and errors(more) == []
    text = more[-1]["response"]["output"][0]["content"][0]["text"]
    assert text == "Seen 3 items. You said: more"


# -- pass --------------------------------------------------------------------------------
def test_pass_sends_the_servers_bytes_unchanged_and_counts_their_faults(setup: Setup) -> None:
    body = {"model": "passed", "input": "Hi", "stream": True, "store": False}
    through = httpx.post(setup.url + "/v1/responses", json=body, timeout=30)
    direct = httpx.post(setup.twin + "/v1/responses", json=body, timeout=30)
    assert through.status_code == direct.status_code == 200
    assert through.content == direct.content
    assert through.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(m.data) for m in parse_sse([direct.content])]
    rules = {v.rule for v in validate_payloads(events, strict=True) if v.severity == "error"}
    assert {"SEQ_LEGACY", "ADDRESS_MISSING"} <= rules
    metrics = httpx.get(setup.url + "/metrics", timeout=10).text
    for rule in rules:
        line = (
            "responses_stream_upstream_stream_faults_total"
            f'{{mode="pass",rule="{rule}",upstream="seen"}} 1.0'
        )
        assert line in metrics


def test_pass_sends_the_servers_refusal_unchanged(setup: Setup) -> None:
    body = {"model": "passed", "input": "Hi", "previous_response_id": "resp_x"}
    through = httpx.post(setup.url + "/v1/responses", json=body, timeout=30)
    direct = httpx.post(setup.twin + "/v1/responses", json=body, timeout=30)
    assert through.status_code == direct.status_code == 400
    assert through.json() == direct.json()


# -- the config file ---------------------------------------------------------------------
def test_responses_on_a_chat_upstream_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(
        "upstreams:\n  - name: a\n    url: http://127.0.0.1:1/v1\n    dialect: chat\n"
        "    responses: repair\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}:5: upstreams[0].responses: ")
    path.write_text(
        "upstreams:\n  - name: a\n    url: http://127.0.0.1:1/v1\n    responses: mend\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert f"{path}:4: upstreams[0].responses" in str(caught.value)
