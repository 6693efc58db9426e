"""The repair of a server's own Responses stream (``responses_stream`` ``sse_from_responses``).

Over streams a real server sent (``tests/repair``: llama-server's own ``/v1/responses``,
each file named after the public issue that shows its fault), over the hand-made faulty
streams of ``tests/broken`` and over every genuine recording: the repaired stream has no
error under ``validate --strict``, the strict openai SDK reads it over HTTP, and it says
what the server said (its text, reasoning and calls), read from the server's own stream.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from http_support import serve
from openai import OpenAI
from recordings_support import is_untouched, provenance, responses_files, streams
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from responses_stream import parse_sse, sse_from_responses, validate_payloads
from responses_stream._runtime.inputs.repair import CallMarkup, MarkupCall

HERE = Path(__file__).resolve().parent
REPAIR = HERE / "repair"
BROKEN = HERE / "broken"
CASES = json.loads((REPAIR / "provenance.json").read_text(encoding="utf-8"))
WEATHER = {"type": "function", "name": "weather", "parameters": {"type": "object"}}


def repaired(lines: list[str], request: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The repaired stream's events, each frame read back as a client reads it."""
    body = b"".join(sse_from_responses(lines, request=request, model="m"))
    return [json.loads(m.data) for m in parse_sse([body]) if m.data != "[DONE]"]


def errors(events: list[dict[str, Any]]) -> set[str]:
    return {v.rule for v in validate_payloads(events, strict=True) if v.severity == "error"}


def said(output: list[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """What an output says: each item's type and its text, reasoning or call."""
    out: list[tuple[str, ...]] = []
    for item in output:
        kind = item.get("type", "")
        if kind == "message":
            parts = item.get("content") or []
            out.append((kind, "".join(p.get("text") or p.get("refusal") or "" for p in parts)))
        elif kind == "reasoning":
            summary = "".join(p.get("text", "") for p in item.get("summary") or [])
            content = "".join(p.get("text", "") for p in item.get("content") or [])
            out.append((kind, summary, content))
        elif kind in ("function_call", "custom_tool_call"):
            out.append((kind, item["name"], item.get("arguments", item.get("input", ""))))
        else:
            out.append((kind,))
    return out


def lines_of(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- a real server's faulty streams --------------------------------------------------------
def test_every_recording_says_where_it_comes_from() -> None:
    assert sorted(CASES) == sorted(p.name for p in REPAIR.glob("*.jsonl"))
    for name, entry in CASES.items():
        assert name.split("--")[0].replace("-", "/").count("/") == 1  # named after an issue
        assert entry["shows"].startswith("https://github.com/") and entry["faults"]
        assert len(lines_of(REPAIR / name)) == entry["events"]
        assert errors([json.loads(line) for line in lines_of(REPAIR / name)])  # faulty


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_real_servers_faulty_stream_is_repaired(name: str) -> None:
    lines = lines_of(REPAIR / name)
    events = repaired(lines, CASES[name]["request"])
    assert errors(events) == set()
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    theirs = json.loads(lines[-1])
    if theirs.get("type") != "response.completed":  # the server broke off with an error
        assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
        assert events[-2]["code"] == "500" and "peg-native format" in events[-2]["message"]
        return
    final = events[-1]["response"]
    # each server's answer stopped at max_output_tokens, which it reported as completed
    used = theirs["response"]["usage"]["output_tokens"]
    assert used == CASES[name]["request"]["max_output_tokens"]
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["usage"]["output_tokens"] == used
    if "markup" in name:  # the server's text held the call: it is a function_call
        assert "<tool_call>" in theirs["response"]["output"][0]["content"][0]["text"]
        assert said(final["output"]) == [
            ("function_call", "weather", '{"city":"Paris"}'),
            ("message", "<|return|>"),
        ]
    else:
        assert said(final["output"]) == said(theirs["response"]["output"])


def test_markup_stays_text_when_the_request_offered_no_function() -> None:
    name = "vllm-29725--markup-in-text.jsonl"
    request = {k: v for k, v in CASES[name]["request"].items() if k != "tools"}
    final = repaired(lines_of(REPAIR / name), request)[-1]["response"]
    [(kind, text)] = said(final["output"])
    assert kind == "message" and text.startswith("<tool_call>") and "Paris" in text


def _upstream_lines(model: str) -> list[str]:
    """The stream a served model names: a file of tests/repair, or ``broken/NAME``."""
    if model.startswith("broken/"):
        return _payloads(BROKEN / f"{model.removeprefix('broken/')}.sse")
    return lines_of(REPAIR / model)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """Serves the repair of a recorded stream, the one the request's model names."""

    async def responses(request: Request) -> StreamingResponse:
        body = await request.json()
        frames = sse_from_responses(_upstream_lines(body["model"]), request=body, model="m")
        return StreamingResponse(frames, media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])
    with serve(app) as url:
        yield url


def sdk_read(server: str, model: str, request: Mapping[str, Any]) -> list[Any]:
    """The events of a repaired stream as the strict openai SDK reads them."""
    client = OpenAI(
        base_url=server + "/v1", api_key="x", max_retries=0, _strict_response_validation=True
    )
    asked = {k: v for k, v in request.items() if k not in ("stream", "model")}
    with client.responses.stream(model=model, **asked) as stream:
        return list(stream)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_strict_sdk_reads_each_repaired_stream_to_what_the_server_said(
    server: str, name: str
) -> None:
    events = sdk_read(server, name, CASES[name]["request"])
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    if name.startswith("vllm-40418"):  # the server broke off with an error
        assert kinds[-2:] == ["error", "response.failed"]
        assert events[-2].code == "500"
        return
    assert kinds[-1] == "response.incomplete"
    final = events[-1].response.to_dict()
    expected = repaired(lines_of(REPAIR / name), CASES[name]["request"])[-1]["response"]
    assert said(final["output"]) == said(expected["output"])  # checked above, from the server's
    assert final["status"] == "incomplete"


@pytest.mark.parametrize("name", sorted(p.stem for p in BROKEN.glob("*.sse")))
def test_the_strict_sdk_reads_each_repaired_broken_stream(server: str, name: str) -> None:
    events = sdk_read(server, f"broken/{name}", {"input": "Hi"})
    final = events[-1].response.to_dict()
    assert events[-1].type in ("response.completed", "response.incomplete", "response.failed")
    assert said(final["output"]) == said(
        repaired(_payloads(BROKEN / f"{name}.sse"))[-1]["response"]["output"]
    )


# -- the hand-made faulty streams and the genuine recordings ---------------------------------
BROKEN_CASES = sorted(p.stem for p in BROKEN.glob("*.sse"))


def _payloads(path: Path) -> list[str]:
    body = path.read_bytes()
    return [m.data for m in parse_sse([body]) if m.data != "[DONE]"]


def _until_terminal(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ends = ("response.completed", "response.incomplete", "response.failed")
    cut = next((at for at, e in enumerate(events) if e.get("type") in ends), len(events))
    return events[: cut + 1]


@pytest.mark.parametrize("name", BROKEN_CASES)
def test_each_broken_stream_is_repaired_keeping_its_text(name: str) -> None:
    payloads = _payloads(BROKEN / f"{name}.sse")
    events = repaired(payloads)
    assert errors(events) == set()
    upstream = _until_terminal([json.loads(p) for p in payloads if p.startswith("{")])
    final = events[-1]["response"]
    if final["status"] == "cancelled":  # a cancelled response keeps no output
        return
    deltas = "".join(e["delta"] for e in upstream if e.get("type") == "response.output_text.delta")
    # a final text that goes on from the deltas gives the rest of them
    longer = [e["text"] for e in upstream if e.get("type") == "response.output_text.done"]
    text = max([deltas, *(t for t in longer if t.startswith(deltas))], key=len)
    said_ = said(final["output"])
    assert "".join(t for kind, *rest in said_ if kind == "message" for t in rest) == text
    args = "".join(
        e["delta"] for e in upstream if e.get("type") == "response.function_call_arguments.delta"
    )
    calls = [s[2] for s in said_ if s[0] == "function_call"]
    assert "".join(calls) == args
    done = [
        i["arguments"]
        for i in final["output"]
        if i["type"] == "function_call" and i["status"] == "completed"
    ]
    assert all(isinstance(json.loads(a), dict) for a in done)  # glued calls come apart


SINGLE = [n for n in responses_files() if len(streams(n)) == 1]


@pytest.mark.parametrize("name", SINGLE)
def test_a_genuine_recording_is_repaired_to_what_it_said(name: str) -> None:
    [stream] = streams(name)
    events = repaired([json.dumps(e) for e in stream])
    theirs = errors(stream)
    # OpenAI adds some hosted items completed, and the processor does as OpenAI does
    assert errors(events) <= theirs & {"ADDED_NOT_IN_PROGRESS"}
    terminal = [e for e in stream if e.get("type", "").startswith("response.") and "response" in e]
    last = terminal[-1]
    final = events[-1]["response"]
    if last["type"] not in ("response.completed", "response.incomplete", "response.failed"):
        assert events[-1]["type"] == "response.failed"  # a stream that broke off
        assert events[-2]["code"] == "stream_ended_early"
        return
    assert final["status"] == last["response"]["status"]
    if is_untouched(name) and not provenance("responses")[name].get("streams", 1) > 1:
        # the same items; an item a server held back to its end may come later
        assert Counter(said(final["output"])) == Counter(said(last["response"]["output"]))
        streamed = [s for s in said(final["output"]) if s[0] in ("message", "function_call")]
        told = [s for s in said(last["response"]["output"]) if s[0] in ("message", "function_call")]
        assert streamed == told


# -- the markup ----------------------------------------------------------------------------
def split_fed(markup: CallMarkup, text: str, size: int) -> list[Any]:
    pieces = []
    for at in range(0, len(text), size):
        pieces += markup.feed(text[at : at + size])
    pieces += markup.end()
    joined: list[Any] = []
    for piece in pieces:  # text pieces joined, as a client shows them
        if isinstance(piece, str) and joined and isinstance(joined[-1], str):
            joined[-1] += piece
        else:
            joined.append(piece)
    return joined


MARKUP = {
    "hermes": (
        'Let me look.\n<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n'
        "</tool_call>",
        ["Let me look.\n", MarkupCall("weather", '{"city":"Paris"}')],
    ),
    "hermes, two": (
        '<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>\n'
        '<tool_call>{"name": "weather", "arguments": "{\\"city\\": \\"Rome\\"}"}</tool_call>',
        [
            MarkupCall("weather", '{"city":"Oslo"}'),
            "\n",
            MarkupCall("weather", '{"city":"Rome"}'),
        ],
    ),
    "qwen3-coder": (
        "<tool_call>\n<function=weather>\n<parameter=city>\nBoston, MA\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
        [MarkupCall("weather", '{"city":"Boston, MA","days":3}')],
    ),
    "mistral, a list": (
        '[TOOL_CALLS] [{"name": "weather", "arguments": {"city": "Lyon"}}]',
        [MarkupCall("weather", '{"city":"Lyon"}')],
    ),
    "mistral, [ARGS]": (
        '[TOOL_CALLS]weather[ARGS]{"city": "Nice"}[TOOL_CALLS]weather[ARGS]{"city": "Pau"}',
        [MarkupCall("weather", '{"city":"Nice"}'), MarkupCall("weather", '{"city":"Pau"}')],
    ),
    "a function not offered": (
        '<tool_call>{"name": "rm", "arguments": {}}</tool_call>',
        ['<tool_call>{"name": "rm", "arguments": {}}</tool_call>'],
    ),
    "not JSON": ("<tool_call>{oops</tool_call> done", ["<tool_call>{oops</tool_call> done"]),
    "unclosed, as a stop sequence leaves it": (
        '<tool_call>\n{"name": "weather", "arguments": {"city": "Ulm"}}\n',
        [MarkupCall("weather", '{"city":"Ulm"}')],
    ),
    "a lookalike": ("a <tool and [TOOL] text <", ["a <tool and [TOOL] text <"]),
}


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
@pytest.mark.parametrize("case", MARKUP)
def test_markup_is_found_however_the_text_is_split(case: str, size: int) -> None:
    text, expected = MARKUP[case]
    assert split_fed(CallMarkup(frozenset({"weather"})), text, size) == expected


# -- what cannot be repaired ---------------------------------------------------------------
def test_calls_whose_arguments_the_server_interleaves_come_out_whole() -> None:
    def call(item_id: str) -> dict[str, Any]:
        item = {"type": "function_call", "id": item_id, "call_id": "c" + item_id, "name": "f"}
        return {"type": "response.output_item.added", "item": item}

    def args(item_id: str, delta: str) -> dict[str, Any]:
        return {
            "type": "response.function_call_arguments.delta",
            "item_id": item_id,
            "delta": delta,
        }

    events = [
        call("a"),
        args("a", '{"x":'),
        call("b"),
        args("b", "{}"),
        args("a", "1}"),
        {"type": "response.completed", "response": {"output": []}},
    ]
    out = repaired([json.dumps(e) for e in events])
    assert errors(out) == set()
    assert said(out[-1]["response"]["output"]) == [
        ("function_call", "f", '{"x":1}'),
        ("function_call", "f", "{}"),
    ]
    assert [i["call_id"] for i in out[-1]["response"]["output"]] == ["ca", "cb"]


def test_text_for_a_message_after_another_item_began_continues_in_a_new_message() -> None:
    events = [
        {"type": "response.output_item.added", "item": {"type": "message", "id": "m"}},
        {"type": "response.output_text.delta", "item_id": "m", "delta": "Hel"},
        {"type": "response.output_item.added", "item": {"type": "reasoning", "id": "r"}},
        {"type": "response.reasoning_text.delta", "item_id": "r", "delta": "hmm"},
        {"type": "response.output_text.delta", "item_id": "m", "delta": "lo"},
        {"type": "response.completed", "response": {"output": []}},
    ]
    out = repaired([json.dumps(e) for e in events])
    assert errors(out) == set()
    assert said(out[-1]["response"]["output"]) == [
        ("message", "Hel"),
        ("reasoning", "", "hmm"),
        ("message", "lo"),
    ]


def test_a_stream_that_ends_without_its_terminal_event_fails() -> None:
    events = [
        {"type": "response.output_item.added", "item": {"type": "message", "id": "m"}},
        {"type": "response.output_text.delta", "item_id": "m", "delta": "Hi"},
    ]
    out = repaired([json.dumps(e) for e in events])
    assert errors(out) == set()
    assert out[-2]["code"] == "stream_ended_early"
    assert said(out[-1]["response"]["output"]) == [("message", "Hi")]


def test_an_error_event_keeps_the_servers_code_and_message() -> None:
    events = [
        {"type": "response.created", "response": {}},
        {"type": "error", "code": "rate_limit_exceeded", "message": "slow down"},
    ]
    out = repaired([json.dumps(e) for e in events])
    assert out[-2]["code"] == "rate_limit_exceeded" and "slow down" in out[-2]["message"]
    assert out[-1]["response"]["error"]["code"] == "rate_limit_exceeded"


# -- the command line ----------------------------------------------------------------------
def _cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "responses_stream", "repair", *args],
        cwd=HERE.parent / "generated",
        input=stdin,
        capture_output=True,
        timeout=120,
    )


def test_repair_on_the_command_line(tmp_path: Path) -> None:
    name = "vllm-29725--markup-in-text.jsonl"
    request = tmp_path / "request.json"
    request.write_text(json.dumps(CASES[name]["request"]), encoding="utf-8")
    done = _cli("--request", str(request), str(REPAIR / name))
    assert done.returncode == 0, done.stderr
    events = [json.loads(m.data) for m in parse_sse([done.stdout])]
    assert errors(events) == set()
    assert events[-1]["response"]["model"] == "gemma"  # the request's
    assert said(events[-1]["response"]["output"])[0] == (
        "function_call",
        "weather",
        '{"city":"Paris"}',
    )
    # the same from stdin, as SSE, in the Open Responses dialect
    sse = b"".join(b"data: " + line.encode() + b"\n\n" for line in lines_of(REPAIR / name))
    done = _cli("--dialect", "openresponses", "--model", "m", stdin=sse)
    assert done.returncode == 0, done.stderr
    events = [json.loads(m.data) for m in parse_sse([done.stdout]) if m.data != "[DONE]"]
    assert [
        str(v)
        for v in validate_payloads(events, "openresponses", strict=True)
        if v.severity == "error"
    ] == []


def test_repair_exits_3_on_a_failed_stream_and_2_on_empty_input() -> None:
    done = _cli(str(REPAIR / "vllm-40418--mid-stream-error.jsonl"))
    assert done.returncode == 3
    assert b"event: response.failed" in done.stdout and b"peg-native format" in done.stdout
    empty = _cli(stdin=b"")
    assert empty.returncode == 2 and empty.stdout == b""
    assert b"the input is empty" in empty.stderr
