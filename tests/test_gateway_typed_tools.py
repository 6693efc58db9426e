"""Client-run typed tools (``shell``, ``local_shell``, ``apply_patch``, ``computer`` and
``computer_use_preview``) through a chat upstream: each offered as a function of its
action's shape, its call streamed back as its typed item, its output sent on the next
turn as the tool message that answers it.  The strict openai SDK over real HTTP, both
dialects; the upstream a scripted chat model that calls what the user tells it to."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from gateway_support import gateway, sdk
from http_support import serve
from openai import OpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from responses_stream import parse_sse, validate_payloads

SHELL = {"type": "shell", "environment": {"type": "local"}}
PATCH = {"type": "apply_patch"}
LOCAL = {"type": "local_shell"}
COMPUTER = {"type": "computer"}
PREVIEW = {
    "type": "computer_use_preview",
    "environment": "browser",
    "display_width": 1024,
    "display_height": 768,
}
WEATHER = {"type": "function", "name": "shell", "parameters": {"type": "object"}}


class ScriptedChat:
    """A chat server whose model calls the tool the last user text names
    (``call NAME ARGUMENTS``), and answers a tool result with ``got: CONTENT``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        with self.lock:
            self.requests.append(body)
        last = body["messages"][-1]
        if (
            last["role"] == "user"
            and isinstance(last["content"], str)
            and last["content"].startswith("call ")
        ):
            _, name, args = last["content"].split(" ", 2)
            fn = {"name": name, "arguments": args[: len(args) // 2]}
            first = {"index": 0, "id": "call_s1", "type": "function", "function": fn}
            rest = {"index": 0, "function": {"arguments": args[len(args) // 2 :]}}
            deltas = [{"tool_calls": [first]}, {"tool_calls": [rest]}]
            finish = "tool_calls"
        else:
            said = last["content"] if isinstance(last["content"], str) else "(parts)"
            deltas = [{"content": f"got: {said}"}]
            finish = "stop"

        def chunks() -> Iterator[bytes]:
            for delta in deltas:
                chunk = {
                    "id": "x",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "m",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                }
                yield f"data: {json.dumps(chunk)}\n\n".encode()
            end = {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
            }
            yield f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()

        return StreamingResponse(chunks(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def setup() -> Iterator[tuple[str, ScriptedChat]]:
    chat = ScriptedChat()
    with serve(chat.app) as upstream, gateway(upstream + "/v1") as url:
        yield url, chat


def streamed(url: str, body: dict[str, Any], base: str = "/v1") -> list[dict[str, Any]]:
    headers = {"authorization": "Bearer sk-client"}
    r = httpx.post(
        url + base + "/responses", json={**body, "stream": True}, headers=headers, timeout=30
    )
    assert r.status_code == 200, r.text
    return [json.loads(m.data) for m in parse_sse([r.content]) if m.data != "[DONE]"]


def errors(events: list[dict[str, Any]], dialect: str = "openai") -> list[str]:
    found = validate_payloads(events, dialect, strict=True)
    return [str(v) for v in found if v.severity == "error"]


def _call_key(output: dict[str, Any]) -> str:
    """A local shell's output names its call by id, the others by call_id."""
    return "id" if output["type"] == "local_shell_call_output" else "call_id"


CASES = {
    "shell": (
        SHELL,
        'call shell {"commands": ["ls -a", "pwd"], "timeout_ms": 5000}',
        "shell_call",
        {"action": {"commands": ["ls -a", "pwd"], "timeout_ms": 5000, "max_output_length": None}},
        {
            "type": "shell_call_output",
            "output": [
                {"stdout": "a b\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
                {"stdout": "/tmp\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
            ],
        },
        "got: a b\n\n(exit code 0)\n\n/tmp\n\n(exit code 0)",
    ),
    "local_shell": (
        LOCAL,
        'call local_shell {"command": ["ls", "-a"], "env": {"A": "1"}}',
        "local_shell_call",
        {"action": {"type": "exec", "command": ["ls", "-a"], "env": {"A": "1"}}},
        {"type": "local_shell_call_output", "output": "a b"},
        "got: a b",
    ),
    "apply_patch": (
        PATCH,
        'call apply_patch {"type": "create_file", "path": "notes.md", "diff": "+hello\\n+world\\n"}',
        "apply_patch_call",
        {"operation": {"type": "create_file", "path": "notes.md", "diff": "+hello\n+world\n"}},
        {"type": "apply_patch_call_output", "status": "completed", "output": "created notes.md"},
        "got: completed: created notes.md",
    ),
    "computer": (
        COMPUTER,
        'call computer {"type": "click", "x": 10, "y": 20}',
        "computer_call",
        {"action": {"type": "click", "x": 10, "y": 20, "button": "left"}},
        {
            "type": "computer_call_output",
            "output": {
                "type": "computer_screenshot",
                "image_url": "data:image/png;base64,iVBORw0KGgo=",
            },
        },
        "got: (parts)",
    ),
    "computer_use_preview": (
        PREVIEW,
        'call computer {"type": "type", "text": "hello"}',
        "computer_call",
        {"action": {"type": "type", "text": "hello"}},
        {
            "type": "computer_call_output",
            "output": {
                "type": "computer_screenshot",
                "image_url": "data:image/png;base64,iVBORw0KGgo=",
            },
        },
        "got: (parts)",
    ),
}


@pytest.mark.parametrize(
    "dialect,base", [("openai", "/v1"), ("openresponses", "/openresponses/v1")]
)
@pytest.mark.parametrize("case", CASES)
def test_a_typed_tool_is_called_streamed_and_answered(
    setup: tuple[str, ScriptedChat], case: str, dialect: str, base: str
) -> None:
    url, chat = setup
    tool, ask, item_type, fields, output, answer = CASES[case]
    events = streamed(url, {"model": "m", "input": ask, "tools": [tool]}, base)
    assert errors(events, dialect) == []
    sent = chat.requests[-1]
    [offered] = sent["tools"]
    assert offered["function"]["name"] == ask.split()[1]
    assert offered["function"]["parameters"]["type"] == "object"
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.completed"
    [call] = final["output"]
    # the Open Responses dialect names OpenAI's own item types with their slug
    named = item_type if dialect == "openai" else f"openai:{item_type}"
    assert call["type"] == named and call["call_id"] == "call_s1"
    assert {k: call[k] for k in fields} == fields
    kinds = [e["type"].removeprefix("openai:") for e in events]
    if item_type == "shell_call":  # each command streamed as OpenAI streams it
        assert kinds.count("response.shell_call_command.done") == 2
    if item_type == "apply_patch_call":
        assert "response.apply_patch_call_operation_diff.done" in kinds
    # the client's output goes back as the tool message that answers the call
    again = streamed(
        url,
        {
            "model": "m",
            "previous_response_id": final["id"],
            "input": [{**output, _call_key(output): call["call_id"]}],
            "tools": [tool],
        },
        base,
    )
    assert errors(again, dialect) == []
    text = again[-1]["response"]["output"][0]["content"][0]["text"]
    assert text == answer
    messages = chat.requests[-1]["messages"]
    assistant = next(m for m in messages if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["function"]["name"] == ask.split()[1]
    tool_message = next(m for m in messages if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_s1"
    if item_type == "computer_call":  # the screenshot, as an image after the tool message
        assert messages[-1]["content"][0]["image_url"]["url"].startswith("data:image/png")


def test_the_strict_sdk_reads_each_typed_call(setup: tuple[str, ScriptedChat]) -> None:
    url, _ = setup
    client = sdk(url)
    for case, (tool, ask, item_type, fields, _, _) in CASES.items():
        answer = client.responses.create(model="m", input=ask, tools=[tool])
        [call] = answer.output
        assert call.type == item_type, case
        got = call.to_dict()
        assert {k: got[k] for k in fields} == fields, case
        # apply_patch_call's diff events (OpenAI streams them) are past the SDK's event
        # union: its strict validation refuses them, its default reading takes them
        reader = OpenAI(base_url=url + "/v1", api_key="sk-client", max_retries=0)
        stream_with = reader if item_type == "apply_patch_call" else client
        with stream_with.responses.stream(model="m", input=ask, tools=[tool]) as stream:
            final = stream.get_final_response()
        assert final.output[0].type == item_type
        assert {k: final.output[0].to_dict()[k] for k in fields} == fields


def test_a_typed_tools_name_never_clashes_with_a_function(setup: tuple[str, ScriptedChat]) -> None:
    url, chat = setup
    events = streamed(
        url,
        {"model": "m", "input": 'call shell_tool {"commands": ["ls"]}', "tools": [WEATHER, SHELL]},
    )
    assert [t["function"]["name"] for t in chat.requests[-1]["tools"]] == ["shell", "shell_tool"]
    assert events[-1]["response"]["output"][0]["type"] == "shell_call"
    events = streamed(
        url, {"model": "m", "input": 'call shell {"x": 1}', "tools": [WEATHER, SHELL]}
    )
    assert events[-1]["response"]["output"][0]["type"] == "function_call"


def test_tool_choice_names_a_typed_tool(setup: tuple[str, ScriptedChat]) -> None:
    url, chat = setup
    body = {
        "model": "m",
        "input": 'call apply_patch {"type": "delete_file", "path": "a"}',
        "tools": [PATCH],
        "tool_choice": {"type": "apply_patch"},
    }
    events = streamed(url, body)
    assert chat.requests[-1]["tool_choice"] == {
        "type": "function",
        "function": {"name": "apply_patch"},
    }
    assert events[-1]["response"]["output"][0]["operation"] == {"type": "delete_file", "path": "a"}


@pytest.mark.parametrize(
    "ask",
    [
        "call shell not json",
        'call shell {"commands": 5}',
        'call computer {"type": "fly"}',
        'call apply_patch {"type": "create_file"}',
    ],
)
def test_arguments_the_model_got_wrong_end_the_item_and_fail_the_response(
    setup: tuple[str, ScriptedChat], ask: str
) -> None:
    url, _ = setup
    events = streamed(url, {"model": "m", "input": ask, "tools": [SHELL, COMPUTER, PATCH]})
    assert errors(events) == []
    error, failed = events[-2], events[-1]
    assert error["type"] == "error" and error["code"] == "model_error"
    assert "invalid content" in error["message"]
    assert failed["type"] == "response.failed"
    [item] = failed["response"]["output"]
    assert item["status"] in ("incomplete", "completed")  # apply_patch_call has no incomplete


def test_earlier_typed_calls_and_outputs_go_upstream_as_calls_and_tool_messages() -> None:
    from responses_stream._runtime.gateway.chat_request import translate
    from responses_stream._runtime.gateway.items import normalize_input

    shot = "data:image/png;base64,AA=="
    items = normalize_input(
        [
            {"role": "user", "content": "go"},
            {
                "type": "shell_call",
                "call_id": "a",
                "action": {"commands": ["ls"], "timeout_ms": None},
            },
            {
                "type": "local_shell_call",
                "id": "lsh_1",
                "call_id": "b",
                "status": "completed",
                "action": {"type": "exec", "command": ["pwd"], "env": {}},
            },
            {
                "type": "apply_patch_call",
                "call_id": "c",
                "status": "completed",
                "operation": {"type": "delete_file", "path": "x"},
            },
            {
                "type": "computer_call",
                "id": "cu_1",
                "call_id": "d",
                "status": "completed",
                "pending_safety_checks": [],
                "action": {"type": "screenshot"},
            },
            {
                "type": "shell_call_output",
                "call_id": "a",
                "output": [
                    {"stdout": "f\n", "stderr": "oops", "outcome": {"type": "exit", "exit_code": 1}}
                ],
            },
            {"type": "local_shell_call_output", "id": "b", "output": "/tmp"},
            {
                "type": "apply_patch_call_output",
                "call_id": "c",
                "status": "failed",
                "output": "no such file",
            },
            {
                "type": "computer_call_output",
                "call_id": "d",
                "output": {"type": "computer_screenshot", "image_url": shot},
            },
            {"role": "user", "content": "and now?"},
        ]
    )
    messages = translate({"model": "m"}, items).body["messages"]
    [assistant] = [m for m in messages if m["role"] == "assistant"]
    calls = [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in assistant["tool_calls"]
    ]
    assert calls == [
        ("a", "shell", {"commands": ["ls"]}),
        ("b", "local_shell", {"command": ["pwd"], "env": {}}),
        ("c", "apply_patch", {"type": "delete_file", "path": "x"}),
        ("d", "computer", {"type": "screenshot"}),
    ]
    tools = [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]
    assert tools == [
        ("a", "f\n\nstderr:\noops\n(exit code 1)"),
        ("b", "/tmp"),
        ("c", "failed: no such file"),
        ("d", "The screenshot the action returned follows."),
    ]
    # the screenshot after the run of tool messages, then the user's next message
    assert messages[-2] == {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": shot}}],
    }
    assert messages[-1] == {"role": "user", "content": "and now?"}
