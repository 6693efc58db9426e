"""to-chat on genuine server recordings, read back by the strict openai SDK over HTTP.

Every stream in ``tests/recordings/responses/**/*.jsonl`` (a file may hold
several, each starting at ``response.created``) is served as chat SSE by
``chat_sse_from_responses`` from a real uvicorn server on 127.0.0.1 and read
with ``OpenAI(_strict_response_validation=True).chat.completions.stream()``.
What the SDK assembles is checked against values taken straight from the
recording (its terminal response, else its ``output_item.done`` events):

- the message text is the concatenation of the ``output_text`` parts of the
  ``message`` items;
- every item the client must act on is a tool call (its ``call_id`` / name /
  arguments) and the stream finishes with ``tool_calls``; hosted items are not;
- a stream that fails (``error`` / ``response.failed``) raises ``APIError``
  with the upstream message; one cut off before its terminal event ends with
  ``length``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
from http_support import serve
from openai import OpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from responses_stream._runtime.consumers.to_chat import ResponsesToChat, chat_sse_from_responses

RECORDINGS = Path(__file__).parent / "recordings" / "responses"
TERMINAL = ("response.completed", "response.incomplete", "response.failed")
# item type -> tool name, for the items the client must act on (besides function/custom calls)
ACTION_NAMES = {
    "apply_patch_call": "apply_patch",
    "local_shell_call": "local_shell",
    "shell_call": "shell",
    "computer_call": "computer",
    "mcp_approval_request": "mcp_approval_request",
}
# Recordings whose text deltas do not add up to their done texts, so no append-only chat
# stream can carry the final text; for these the SDK must see exactly the deltas.
INCONSISTENT = {
    # anonymized by its source: every text delta is "X", every done text a placeholder
    "azure-openai/openai--azure-gpt5-reasoning-multi-summary-no-encryption.jsonl#0",
}


@dataclass(frozen=True)
class Stream:
    name: str
    lines: list[str]  # the recorded JSON text of each event

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


def load_streams() -> list[Stream]:
    streams: list[Stream] = []
    for path in sorted(RECORDINGS.rglob("*.jsonl")):
        rel = path.relative_to(RECORDINGS).as_posix()
        chunks: list[list[str]] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            if json.loads(line).get("type") == "response.created" or not chunks:
                chunks.append([])
            chunks[-1].append(line)
        streams += [Stream(f"{rel}#{n}", lines) for n, lines in enumerate(chunks)]
    return streams


STREAMS = {s.name: s for s in load_streams()}


# -- what the recording says, computed without the adapter ------------------------
def output_items(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The output items: the terminal response's, else those of the done events."""
    for e in reversed(events):
        if e.get("type") in TERMINAL and e["response"].get("output"):
            return list(e["response"]["output"])
    done = [e for e in events if e.get("type") == "response.output_item.done"]
    return [e["item"] for e in sorted(done, key=lambda e: e["output_index"])]


def message_text(items: list[dict[str, Any]]) -> str:
    return "".join(
        part["text"]
        for item in items
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    )


def expected_calls(items: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    """(id, name, arguments) of each tool call the chat client must see, in order."""
    calls: list[tuple[str, str, Any]] = []
    for item in items:
        kind = item["type"]
        if kind == "function_call":
            name = f"{item['namespace']}.{item['name']}" if item.get("namespace") else item["name"]
            calls.append((item["call_id"], name, item["arguments"]))
        elif kind == "custom_tool_call":
            calls.append((item["call_id"], item["name"], item["input"]))
        elif kind == "shell_call" and "container" in str(item.get("environment") or {}):
            continue  # run by the server, in its container
        elif kind == "apply_patch_call":
            calls.append((item["call_id"], "apply_patch", item["operation"]))
        elif kind == "mcp_approval_request":
            args = {k: item[k] for k in ("server_label", "name", "arguments")}
            calls.append((item["id"], "mcp_approval_request", args))
        elif kind in ACTION_NAMES:
            calls.append((item["call_id"], ACTION_NAMES[kind], item["action"]))
    return calls


def streamed_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e.get("type") == "response.output_text.delta")


def failure(events: list[dict[str, Any]]) -> str | None:
    """The upstream error message, if the stream failed."""
    for e in events:
        if e.get("type") == "error":
            return str(e.get("message") or e["error"]["message"])
        if e.get("type") == "response.failed":
            return str(e["response"]["error"]["message"])
    return None


# -- the server and the SDK -------------------------------------------------------
async def chat_completions(request: Request) -> Response:
    body = await request.json()
    stream = STREAMS.get(body.get("model"))
    if stream is None:
        return JSONResponse({"error": {"message": "unknown recording"}}, 404)
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    frames = chat_sse_from_responses(stream.lines, include_usage=include_usage)
    return StreamingResponse(frames, media_type="text/event-stream")


@pytest.fixture(scope="module")
def client() -> Iterator[OpenAI]:
    app = Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])
    with serve(app) as url:
        yield OpenAI(
            base_url=url + "/v1", api_key="x", max_retries=0, _strict_response_validation=True
        )


def read(client: OpenAI, name: str) -> Any:
    with client.chat.completions.stream(
        model=name,
        messages=[{"role": "user", "content": "hi"}],
        stream_options={"include_usage": True},
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_completion()


def parsed(arguments: str, like: Any) -> Any:
    return json.loads(arguments) if isinstance(like, Mapping) else arguments


def test_every_recording_is_covered() -> None:
    files = {n.split("#")[0] for n in STREAMS}
    assert len(files) == len(list(RECORDINGS.rglob("*.jsonl"))) >= 58
    assert {f.split("/")[0] for f in files} >= {
        "openai",
        "azure-openai",
        "xai",
        "lmstudio",
        "github-copilot",
    }


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_recording_through_the_sdk(client: OpenAI, name: str) -> None:
    events = STREAMS[name].events
    items = output_items(events)
    error = failure(events)
    if error is not None:
        with pytest.raises(openai.APIError) as info:
            read(client, name)
        assert type(info.value) is openai.APIError
        assert info.value.message == error
        return
    terminal = events[-1].get("type")
    if terminal not in TERMINAL:  # cut off: the adapter finishes with length
        with pytest.raises(openai.LengthFinishReasonError) as cut:
            read(client, name)
        final = cut.value.completion
    else:
        final = read(client, name)
    choice = final.choices[0]
    text = streamed_text(events) if name in INCONSISTENT else message_text(items)
    assert (choice.message.content or "") == text
    calls = expected_calls(items)
    got = [
        (c.id, c.function.name, parsed(c.function.arguments, want[2]))
        for c, want in zip(choice.message.tool_calls or [], calls, strict=False)
    ]
    assert got == calls
    assert len(choice.message.tool_calls or []) == len(calls)
    if terminal == "response.completed":
        assert choice.finish_reason == ("tool_calls" if calls else "stop")
        assert final.usage is not None
    elif terminal not in TERMINAL:
        assert choice.finish_reason == "length"


def test_done_items_agree_with_the_terminal_response() -> None:
    """The two sources ``output_items`` may read give the same text, where both exist."""
    compared = 0
    for stream in STREAMS.values():
        events = stream.events
        done = [e for e in events if e.get("type") == "response.output_item.done"]
        final = [e for e in events if e.get("type") == "response.completed"]
        if done and final and final[-1]["response"].get("output"):
            by_done = [e["item"] for e in sorted(done, key=lambda e: e["output_index"])]
            assert message_text(by_done) == message_text(output_items(events)), stream.name
            compared += 1
    assert compared > 40


def test_inconsistent_recordings_are_really_inconsistent() -> None:
    for name in INCONSISTENT:
        events = STREAMS[name].events
        assert not message_text(output_items(events)).startswith(streamed_text(events))


def test_id_rotation_recording_warns_once() -> None:
    stream = STREAMS["github-copilot/openai--github-copilot-id-rotation.1.jsonl#0"]
    conv = ResponsesToChat()
    for line in stream.lines:
        conv.feed_sse(line)
    assert conv.done and len(conv.warnings) == 1 and "output_index" in conv.warnings[0]


# The streams to-chat repairs (each with a warning), and what the warning says
REPAIRED = {
    "github-copilot/openai--github-copilot-id-rotation.1.jsonl#0": "routing by output_index",
    **{name: "a done text differs from what its deltas streamed" for name in INCONSISTENT},
    "openai/pydantic-ai--openai_responses--test_openai_responses_model_mcp_list_tools_stream"
    "_backfills_missing_results.1.jsonl#0": "output items [0, 1] were never closed",
}


def test_to_chat_warns_of_each_repair_and_of_nothing_else() -> None:
    for name, stream in STREAMS.items():
        conv = ResponsesToChat()
        for line in stream.lines:
            conv.feed(line)
        if name in REPAIRED:
            assert len(conv.warnings) == 1 and REPAIRED[name] in conv.warnings[0], name
        else:
            assert conv.warnings == [], name


CALL_RECORDING = "openai/openai--openai-client-tool-search.2.jsonl#0"  # one function call


def _call_stream() -> list[dict[str, Any]]:
    return STREAMS[CALL_RECORDING].events


def test_a_call_never_closed_gets_its_arguments_from_the_response() -> None:
    events = _call_stream()
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert len(deltas) > 1
    # the first argument delta only, then no done event for the call or its arguments
    cut = [
        e
        for e in events
        if e["type"] not in ("response.function_call_arguments.done", "response.output_item.done")
        and (e["type"] != "response.function_call_arguments.delta" or e is deltas[0])
    ]
    conv = ResponsesToChat()
    chunks = [c for e in cut for c in conv.feed(e)]
    args = "".join(
        call["function"].get("arguments") or ""
        for c in chunks
        for choice in c["choices"]
        for call in choice["delta"].get("tool_calls") or []
    )
    [final] = [i for i in events[-1]["response"]["output"] if i["type"] == "function_call"]
    assert args == final["arguments"] and args != deltas[0]["delta"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert conv.warnings == [
        "output items [0] were never closed; what they hold is taken from the response's output"
    ]


def test_a_done_text_that_contradicts_the_deltas_is_a_warning() -> None:
    events = _call_stream()
    changed = [
        {**e, "arguments": "{}"} if e["type"] == "response.function_call_arguments.done" else e
        for e in events
    ]
    conv = ResponsesToChat()
    for e in changed:
        conv.feed(e)
    assert conv.warnings == [
        "a done text differs from what its deltas streamed; a chat stream only appends, "
        "so the streamed text stands"
    ]
