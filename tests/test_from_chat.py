"""``python -m responses_stream from-chat`` on recorded Chat Completions streams.

The recordings under ``tests/recorded/`` have the shapes real servers send
(vLLM, llama.cpp, DeepSeek, OpenAI), plus broken ones.  Every expectation is
computed from the recording itself by a small reference reader in this file,
never from the tool's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _support import validate_openai, validate_openresponses

import responses_stream as rs

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"
RECORDED = Path(__file__).parent / "recorded"
DIALECTS = ("openai", "openresponses")
TERMINAL = {"response.completed", "response.incomplete", "response.failed"}
REASONING_DELTAS = {"response.reasoning_text.delta", "response.reasoning.delta"}

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": False,
}
TOOLS_REQUEST = {
    "model": "Qwen/Qwen3-8B",
    "instructions": "Use the tools when asked about the weather.",
    "tools": [WEATHER_TOOL],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
}
PLAIN_REQUEST = {"model": "local-model", "instructions": "Answer in one sentence."}

GOOD = {
    "vllm_reasoning_tools.sse": TOOLS_REQUEST,
    "llamacpp_text.sse": PLAIN_REQUEST,
    "deepseek_reasoner.sse": {"model": "deepseek-reasoner"},
    "deepseek_reasoner_crlf.sse": None,
    "finish_length.sse": {"model": "gpt-4o-mini", "max_output_tokens": 16},
    "truncated.sse": None,
}
# recording -> what the failure message must mention
BAD = {
    "malformed_json.sse": "not JSON",
    "missing_choices.sse": "missing 'choices'",
    "upstream_error.sse": "CUDA out of memory",
    "tool_no_id_no_name.sse": "no id and no name",
    "content_after_finish.sse": "after finish_reason",
}


# -- the reference reader -------------------------------------------------------
def data_payloads(raw: bytes) -> list[str]:
    """The ``data:`` payloads of an SSE byte stream, one per event (LF or CRLF)."""
    text = raw.decode("utf-8").replace("\r\n", "\n")
    out = []
    for block in text.split("\n\n"):
        lines = [ln[5:].removeprefix(" ") for ln in block.split("\n") if ln.startswith("data:")]
        if lines:
            out.append("\n".join(lines))
    return out


@dataclass
class Expected:
    """What a recording says: the text streamed until the end or the first problem."""

    reasoning: str = ""
    text: str = ""
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str | None = None
    usage: dict[str, Any] | None = None
    problem: str | None = None

    @property
    def terminal(self) -> str:
        if self.problem:
            return "response.failed"
        return (
            "response.completed"
            if self.finish in ("stop", "tool_calls")
            else ("response.incomplete")
        )


def read_recording(path: Path) -> Expected:
    exp = Expected()
    for data in data_payloads(path.read_bytes()):
        if data.strip() == "[DONE]":
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            exp.problem = "json"
            break
        if "error" in chunk:
            exp.problem = "error"
            break
        if isinstance(chunk.get("usage"), dict):
            exp.usage = chunk["usage"]
        if not isinstance(chunk.get("choices"), list):
            exp.problem = "choices"
            break
        for choice in chunk["choices"]:
            delta = choice.get("delta") or {}
            pieces = [
                delta.get("reasoning") or delta.get("reasoning_content"),
                delta.get("content"),
                delta.get("tool_calls"),
            ]
            if exp.finish is not None and any(pieces):
                exp.problem = "after finish"
                break
            exp.reasoning += pieces[0] or ""
            exp.text += pieces[1] or ""
            for frag in pieces[2] or []:
                fn = frag.get("function") or {}
                if frag["index"] not in exp.calls:
                    if not frag.get("id") and not fn.get("name"):
                        exp.problem = "tool"
                        break
                    exp.calls[frag["index"]] = {"id": frag.get("id"), "name": fn["name"], "a": ""}
                exp.calls[frag["index"]]["a"] += fn.get("arguments") or ""
            if exp.problem:
                break
            exp.finish = choice.get("finish_reason") or exp.finish
        if exp.problem:
            break
    return exp


def expected_usage(usage: dict[str, Any] | None) -> dict[str, Any]:
    u = usage or {}
    prompt = u.get("prompt_tokens_details") or {}
    completion = u.get("completion_tokens_details") or {}
    return {
        "input_tokens": u.get("prompt_tokens", 0),
        "input_tokens_details": {
            "cached_tokens": prompt.get("cached_tokens", u.get("prompt_cache_hit_tokens", 0)),
            "cache_write_tokens": 0,
        },
        "output_tokens": u.get("completion_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": completion.get("reasoning_tokens", 0)},
        "total_tokens": u.get("total_tokens", 0),
    }


# -- running the CLI ------------------------------------------------------------
@dataclass
class Run:
    code: int
    stderr: str
    events: list[tuple[str, dict[str, Any]]]
    done: bool

    @property
    def payloads(self) -> list[dict[str, Any]]:
        return [p for _, p in self.events]

    @property
    def final(self) -> dict[str, Any]:
        response: dict[str, Any] = self.payloads[-1]["response"]
        return response


def parse_sse(out: str) -> tuple[list[tuple[str, dict[str, Any]]], bool]:
    assert out.endswith("\n\n"), out[-200:]
    frames = out[:-2].split("\n\n")
    done = frames[-1] == "data: [DONE]"
    if done:
        frames.pop()
    events = []
    for frame in frames:
        head, data, *rest = frame.split("\n")
        assert not rest, frame
        assert head.startswith("event: ") and data.startswith("data: "), frame
        events.append((head[7:], json.loads(data[6:])))
    return events, done


def from_chat(
    recording: str | bytes,
    dialect: str = "openai",
    request: dict[str, Any] | None = None,
    model: str | None = None,
    tmp_path: Path | None = None,
) -> Run:
    raw = recording if isinstance(recording, bytes) else (RECORDED / recording).read_bytes()
    cmd = [sys.executable, "-m", "responses_stream", "from-chat", "--dialect", dialect]
    if request is not None:
        assert tmp_path is not None
        req = tmp_path / "request.json"
        req.write_text(json.dumps(request), encoding="utf-8")
        cmd += ["--request", str(req)]
    if model is not None:
        cmd += ["--model", model]
    env = {**os.environ, "PYTHONPATH": str(GENERATED)}
    proc = subprocess.run(cmd, input=raw, capture_output=True, cwd=GENERATED, env=env)
    out = proc.stdout.decode("utf-8")
    # 0: a complete stream; 3: a complete stream that ends response.failed
    events, done = parse_sse(out) if proc.returncode in (0, 3) else ([], False)
    return Run(proc.returncode, proc.stderr.decode(), events, done)


# -- checks every stream must pass ----------------------------------------------
def check_stream(run: Run, dialect: str) -> None:
    assert run.code in (0, 3), run.stderr
    failed = bool(run.events) and run.events[-1][0] == "response.failed"
    assert run.code == (3 if failed else 0)
    assert run.stderr == ""
    d = rs.DIALECTS[dialect]
    for wire, payload in run.events:
        assert wire == payload["type"]
        if dialect == "openai":
            validate_openai(payload)
        else:
            assert validate_openresponses(payload, d) == [], payload
    seqs = [p["sequence_number"] for p in run.payloads]
    assert seqs == list(range(len(seqs)))
    types = [p["type"] for p in run.payloads]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert sum(t in TERMINAL for t in types) == 1
    assert types[-1] in TERMINAL
    assert run.done is (dialect == "openresponses")
    # every item added is done, in order, and the final output holds the done snapshots
    added = [p for p in run.payloads if p["type"] == "response.output_item.added"]
    done = [p for p in run.payloads if p["type"] == "response.output_item.done"]
    assert [p["output_index"] for p in added] == list(range(len(added)))
    assert [p["output_index"] for p in done] == list(range(len(added)))
    assert run.final["output"] == [p["item"] for p in done]


def outputs(final: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]]:
    reasoning = text = ""
    calls = []
    for item in final["output"]:
        if item["type"] == "reasoning":
            reasoning += "".join(c["text"] for c in item["content"])
        elif item["type"] == "message":
            text += "".join(c["text"] for c in item["content"] if c["type"] == "output_text")
        elif item["type"] == "function_call":
            calls.append({"id": item["call_id"], "name": item["name"], "a": item["arguments"]})
    return reasoning, text, calls


def streamed(run: Run) -> tuple[str, str, dict[str, str]]:
    reasoning = "".join(p["delta"] for t, p in run.events if t in REASONING_DELTAS)
    text = "".join(p["delta"] for t, p in run.events if t == "response.output_text.delta")
    args: dict[str, str] = {}
    for t, p in run.events:
        if t == "response.function_call_arguments.delta":
            args[p["item_id"]] = args.get(p["item_id"], "") + p["delta"]
    return reasoning, text, args


def check_against_recording(run: Run, exp: Expected) -> None:
    reasoning, text, calls = outputs(run.final)
    assert reasoning == exp.reasoning
    assert text == exp.text
    assert calls == [exp.calls[i] for i in sorted(exp.calls)]
    s_reasoning, s_text, s_args = streamed(run)
    assert (s_reasoning, s_text) == (exp.reasoning, exp.text)
    fc = [i for i in run.final["output"] if i["type"] == "function_call"]
    assert [s_args.get(i["id"], "") for i in fc] == [c["a"] for c in calls]
    assert run.payloads[-1]["type"] == exp.terminal
    # opening an item completes the one before; the item open at the end is
    # completed only if the recording finished it normally
    statuses = [i["status"] for i in run.final["output"]]
    last = "completed" if exp.finish in ("stop", "tool_calls") else "incomplete"
    assert statuses == ["completed"] * (len(statuses) - 1) + [last][: len(statuses)]
    assert run.final["usage"] == expected_usage(exp.usage)


# -- recorded good streams ------------------------------------------------------
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", sorted(GOOD))
def test_recorded_stream(name: str, dialect: str, tmp_path: Path) -> None:
    run = from_chat(name, dialect, GOOD[name], tmp_path=tmp_path)
    check_stream(run, dialect)
    exp = read_recording(RECORDED / name)
    assert exp.problem is None
    check_against_recording(run, exp)
    final = run.final
    if exp.finish in ("stop", "tool_calls"):
        assert final["status"] == "completed" and final["incomplete_details"] is None
    else:
        assert final["status"] == "incomplete"
        assert final["incomplete_details"] == {"reason": "max_output_tokens"}
        assert exp.text or exp.reasoning  # everything received before the cut is kept


def test_recordings_are_what_they_claim() -> None:
    vllm = read_recording(RECORDED / "vllm_reasoning_tools.sse")
    assert vllm.reasoning and vllm.text and len(vllm.calls) == 2 and vllm.finish == "tool_calls"
    assert vllm.usage and vllm.usage["prompt_tokens_details"]["cached_tokens"]
    assert read_recording(RECORDED / "llamacpp_text.sse").usage
    ds = read_recording(RECORDED / "deepseek_reasoner.sse")
    assert ds.reasoning and ds.text and ds.usage and ds.usage["prompt_cache_hit_tokens"]
    assert b"\r\n" in (RECORDED / "deepseek_reasoner_crlf.sse").read_bytes()
    assert read_recording(RECORDED / "finish_length.sse").finish == "length"
    truncated = read_recording(RECORDED / "truncated.sse")
    assert truncated.finish is None and b"[DONE]" not in (RECORDED / "truncated.sse").read_bytes()
    for name in BAD:
        assert read_recording(RECORDED / name).problem, name


def test_vllm_tool_calls_keep_upstream_ids_and_order(tmp_path: Path) -> None:
    run = from_chat("vllm_reasoning_tools.sse", request=TOOLS_REQUEST, tmp_path=tmp_path)
    check_stream(run, "openai")
    kinds = [i["type"] for i in run.final["output"]]
    assert kinds == ["reasoning", "message", "function_call", "function_call"]
    ids = [i["call_id"] for i in run.final["output"][2:]]
    assert ids == ["chatcmpl-tool-4b1f0c2a9d8e47f6", "chatcmpl-tool-d3a9e5b7c1f24a08"]
    for item in run.final["output"][2:]:
        json.loads(item["arguments"])
    # one item at a time: each item is done before the next is added
    opened = [p["type"] for p in run.payloads if p["type"].startswith("response.output_item.")]
    assert opened == ["response.output_item.added", "response.output_item.done"] * 4


@pytest.mark.parametrize("dialect", DIALECTS)
def test_deepseek_usage_mapping(dialect: str, tmp_path: Path) -> None:
    run = from_chat("deepseek_reasoner.sse", dialect, tmp_path=tmp_path)
    check_stream(run, dialect)
    assert run.final["usage"] == {
        "input_tokens": 75,
        "input_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 0},
        "output_tokens": 41,
        "output_tokens_details": {"reasoning_tokens": 29},
        "total_tokens": 116,
    }


def test_deepseek_cache_hits_without_prompt_tokens_details(tmp_path: Path) -> None:
    # older DeepSeek responses report cache hits only at the top level of usage
    raw = (RECORDED / "deepseek_reasoner_crlf.sse").read_bytes()
    raw = raw.replace(b'"prompt_tokens_details":{"cached_tokens":128},', b"")
    assert b"prompt_tokens_details" not in raw and b'"prompt_cache_hit_tokens":128' in raw
    run = from_chat(raw, tmp_path=tmp_path)
    check_stream(run, "openai")
    assert run.final["usage"]["input_tokens_details"]["cached_tokens"] == 128


@pytest.mark.parametrize("dialect", DIALECTS)
def test_crlf_recording_equals_lf(dialect: str, tmp_path: Path) -> None:
    raw = (RECORDED / "deepseek_reasoner_crlf.sse").read_bytes()
    crlf = from_chat(raw, dialect, tmp_path=tmp_path)
    lf = from_chat(raw.replace(b"\r\n", b"\n"), dialect, tmp_path=tmp_path)
    check_stream(crlf, dialect)
    assert outputs(crlf.final) == outputs(lf.final)
    assert [t for t, _ in crlf.events] == [t for t, _ in lf.events]


# -- recorded bad streams: the bad-input policy ---------------------------------
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_fails_cleanly(name: str, dialect: str, tmp_path: Path) -> None:
    run = from_chat(name, dialect, tmp_path=tmp_path)
    check_stream(run, dialect)
    exp = read_recording(RECORDED / name)
    assert exp.problem is not None
    check_against_recording(run, exp)
    assert exp.text or exp.calls  # something was received before the problem, and kept
    (err_type, err), (failed_type, failed) = run.events[-2:]
    assert (err_type, failed_type) == ("error", "response.failed")
    error = err["error"] if dialect == "openresponses" else err
    assert BAD[name] in error["message"]
    # an upstream's own error keeps its code (and names code and type in the message)
    if name == "upstream_error.sse":
        assert error["code"] == "500"
        assert "(code 500, type InternalServerError)" in error["message"]
    else:
        assert error["code"] == "invalid_upstream_chunk"
    response = failed["response"]
    assert response["status"] == "failed"
    # Response.error.code is a closed enum; the precise code travels on the error event
    assert response["error"] == {"code": "server_error", "message": error["message"]}
    assert "error" not in [t for t, _ in run.events[:-2]]


def test_upstream_error_message_is_passed_on(tmp_path: Path) -> None:
    run = from_chat("upstream_error.sse", tmp_path=tmp_path)
    message = run.final["error"]["message"]
    assert message == (
        "upstream error: CUDA out of memory while decoding (request 7f3a)"
        " (code 500, type InternalServerError)"
    )


def test_truncated_stream_is_incomplete_with_items_closed(tmp_path: Path) -> None:
    run = from_chat("truncated.sse", "openresponses", tmp_path=tmp_path)
    check_stream(run, "openresponses")
    assert run.payloads[-1]["type"] == "response.incomplete"
    assert "error" not in [t for t, _ in run.events]
    assert [i["status"] for i in run.final["output"]] == ["completed", "incomplete"]
    assert outputs(run.final)[:2] == ("List three colours.", "Red, green")


def test_empty_input_is_an_error_not_a_length_cut() -> None:
    env = {**os.environ, "PYTHONPATH": str(GENERATED)}
    cmd = [sys.executable, "-m", "responses_stream", "from-chat"]
    proc = subprocess.run(cmd, input=b"", capture_output=True, cwd=GENERATED, env=env)
    assert proc.returncode == 2 and proc.stdout == b""  # nothing to convert: nothing written
    assert b"the input is empty" in proc.stderr
    # SSE without a chat chunk: the stream written ends failed, not cut for length
    proc = subprocess.run(cmd, input=b": ping\n\n", capture_output=True, cwd=GENERATED, env=env)
    assert proc.returncode == 2  # no chat chunk: the README's exit codes
    events, _ = parse_sse(proc.stdout.decode("utf-8"))
    payloads = [p for _, p in events]
    assert [p["type"] for p in payloads[-2:]] == ["error", "response.failed"]
    assert payloads[-2]["code"] == "empty_input"
    assert payloads[-1]["response"]["output"] == []


# -- request echo and --model ---------------------------------------------------
@pytest.mark.parametrize("dialect", DIALECTS)
def test_request_is_echoed_in_response_created(dialect: str, tmp_path: Path) -> None:
    run = from_chat("vllm_reasoning_tools.sse", dialect, TOOLS_REQUEST, tmp_path=tmp_path)
    check_stream(run, dialect)
    created = run.payloads[0]
    assert created["type"] == "response.created"
    response = created["response"]
    assert response["status"] == "in_progress" and response["output"] == []
    assert response["model"] == TOOLS_REQUEST["model"]
    assert response["instructions"] == TOOLS_REQUEST["instructions"]
    assert response["tools"] == [WEATHER_TOOL]
    assert response["tool_choice"] == "auto"
    for payload in run.payloads:
        if "response" in payload:
            assert payload["response"]["id"] == response["id"]
            assert payload["response"]["tools"] == [WEATHER_TOOL]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_model_flag_overrides_request(dialect: str, tmp_path: Path) -> None:
    run = from_chat("llamacpp_text.sse", dialect, PLAIN_REQUEST, "served-name", tmp_path)
    check_stream(run, dialect)
    envelope = [p["response"] for p in run.payloads if "response" in p]
    assert len(envelope) == 3
    assert {r["model"] for r in envelope} == {"served-name"}
    assert {r["instructions"] for r in envelope} == {PLAIN_REQUEST["instructions"]}


def test_model_flag_without_request(tmp_path: Path) -> None:
    run = from_chat("llamacpp_text.sse", model="llama-3.2-3b", tmp_path=tmp_path)
    check_stream(run, "openai")
    assert run.final["model"] == "llama-3.2-3b"
    assert run.final["instructions"] is None and run.final["tools"] == []


def test_request_must_be_an_object(tmp_path: Path) -> None:
    req = tmp_path / "request.json"
    req.write_text("[1, 2]", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "responses_stream", "from-chat", "--request", str(req)],
        input=b"",
        capture_output=True,
        cwd=GENERATED,
        env={**os.environ, "PYTHONPATH": str(GENERATED)},
    )
    assert proc.returncode != 0
    assert b"must be a JSON object" in proc.stderr
    assert proc.stdout == b""


# -- known gap: servers that send reasoning under both names --------------------
VLLM_ALIAS = (
    b"".join(
        b"data: " + json.dumps(c).encode() + b"\n\n"
        for c in [
            {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d}]}
            for d in (
                {"role": "assistant", "content": ""},
                {"reasoning": "Think", "reasoning_content": "Think"},
                {"reasoning": "ing.", "reasoning_content": "ing."},
                {"content": "Done.", "reasoning_content": None},
            )
        ]
        + [
            {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
        ]
    )
    + b"data: [DONE]\n\n"
)


def test_vllm_reasoning_alias_is_not_doubled(tmp_path: Path) -> None:
    # vLLM releases that mirror DeltaMessage.reasoning into the deprecated
    # reasoning_content send the same text under both keys.
    run = from_chat(VLLM_ALIAS, tmp_path=tmp_path)
    check_stream(run, "openai")
    assert outputs(run.final)[:2] == ("Thinking.", "Done.")


# -- known gap: tool call fragments without an index (Gemini's OpenAI endpoint) ----
GEMINI_TOOLS = (
    b"".join(
        b"data: " + json.dumps(c).encode() + b"\n\n"
        for c in [
            {
                "object": "chat.completion.chunk",
                "model": "gemini-2.5-flash",
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "id": "function-call-1",
                                    "type": "function",
                                    "function": {
                                        "name": "get_weather",
                                        "arguments": '{"city":"Oslo"}',
                                    },
                                },
                                {
                                    "id": "function-call-2",
                                    "type": "function",
                                    "function": {
                                        "name": "get_weather",
                                        "arguments": '{"city":"Rome"}',
                                    },
                                },
                            ],
                        },
                    }
                ],
            },
            {
                "object": "chat.completion.chunk",
                "model": "gemini-2.5-flash",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            },
        ]
    )
    + b"data: [DONE]\n\n"
)


def test_index_less_tool_calls_stay_separate(tmp_path: Path) -> None:
    run = from_chat(GEMINI_TOOLS, request=TOOLS_REQUEST, tmp_path=tmp_path)
    check_stream(run, "openai")
    calls = outputs(run.final)[2]
    assert [(c["id"], c["a"]) for c in calls] == [
        ("function-call-1", '{"city":"Oslo"}'),
        ("function-call-2", '{"city":"Rome"}'),
    ]


# -- chat input as providers send it ---------------------------------------------
def chat_sse(*choices: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    """An SSE body: one chunk per argument (a choice of index 0, or a list of choices)."""
    out = b""
    for c in choices:
        listed = c if isinstance(c, list) else [{"index": 0, **c}]
        chunk = {"object": "chat.completion.chunk", "choices": listed}
        out += b"data: " + json.dumps(chunk).encode() + b"\n\n"
    return out + b"data: [DONE]\n\n"


def tool_delta(**fragment: Any) -> dict[str, Any]:
    return {"delta": {"tool_calls": [{"index": 0, "type": "function", **fragment}]}}


STOP = {"delta": {}, "finish_reason": "stop"}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_list_content_parts_go_to_text_and_reasoning(dialect: str, tmp_path: Path) -> None:
    # Magistral's shape: content is a list of text and thinking parts
    thinking = [{"type": "text", "text": "Add"}, {"type": "text", "text": " them."}]
    body = chat_sse(
        {"delta": {"role": "assistant", "content": [{"type": "thinking", "thinking": thinking}]}},
        {"delta": {"content": [{"type": "thinking", "thinking": " Sure."}]}},
        {"delta": {"content": [{"type": "text", "text": "3"}]}},
        {"delta": {"content": "9"}},
        {"delta": {"content": [{"type": "text", "text": "1"}, {"type": "text", "text": "."}]}},
        STOP,
    )
    run = from_chat(body, dialect)
    check_stream(run, dialect)
    assert outputs(run.final)[:2] == ("Add them. Sure.", "391.")
    assert streamed(run)[:2] == ("Add them. Sure.", "391.")
    assert run.payloads[-1]["type"] == "response.completed"


def test_output_on_a_second_choice_fails_keeping_choice_zero() -> None:
    body = chat_sse(
        [{"index": 0, "delta": {"content": "A"}}, {"index": 1, "delta": {"role": "assistant"}}],
        {"delta": {"content": "B"}},
        [{"index": 1, "delta": {"content": "X"}}],
        {"delta": {"content": "C"}},
        STOP,
    )
    run = from_chat(body)
    check_stream(run, "openai")
    error = run.payloads[-2]
    assert error["type"] == "error" and error["code"] == "unsupported_n"
    assert "choice 1" in error["message"]
    assert run.payloads[-1]["type"] == "response.failed"
    assert outputs(run.final)[1] == "AB"
    assert [i["status"] for i in run.final["output"]] == ["incomplete"]


def test_empty_deltas_on_other_choices_are_fine() -> None:
    body = chat_sse(
        [{"index": 0, "delta": {"content": "A"}}, {"index": 1, "delta": {"role": "assistant"}}],
        [{"index": 1, "delta": {"content": ""}, "finish_reason": "stop"}],
        STOP,
    )
    run = from_chat(body)
    check_stream(run, "openai")
    assert run.payloads[-1]["type"] == "response.completed"
    assert outputs(run.final)[1] == "A"


def added_and_done_calls(run: Run) -> list[tuple[str, str, str, str]]:
    added = {
        p["item"]["id"]: p["item"]
        for p in run.payloads
        if p["type"] == "response.output_item.added" and p["item"]["type"] == "function_call"
    }
    return [
        (added[i["id"]]["name"], i["name"], i["call_id"], i["arguments"])
        for i in run.final["output"]
        if i["type"] == "function_call"
    ]


@pytest.mark.parametrize(
    "names",
    [
        ("get_", "weather", None),  # genuine continuation
        ("get_weather", "get_weather", "get_weather"),  # the full name repeated
        ("get_weather", "", ""),  # "" on later fragments (the zai/mistral recording)
        ("get", "_wea", "ther"),
    ],
)
def test_split_tool_name_is_joined(names: tuple[str, str, str | None]) -> None:
    first, second, third = names
    body = chat_sse(
        tool_delta(id="call_1", function={"name": first, "arguments": ""}),
        tool_delta(function={"name": second}),
        tool_delta(function={"arguments": '{"city":', **({"name": third} if third else {})}),
        tool_delta(function={"arguments": '"Oslo"}'}),
        {"delta": {}, "finish_reason": "tool_calls"},
    )
    run = from_chat(body)
    check_stream(run, "openai")
    assert added_and_done_calls(run) == [
        ("get_weather", "get_weather", "call_1", '{"city":"Oslo"}')
    ]
    assert streamed(run)[2] == {run.final["output"][0]["id"]: '{"city":"Oslo"}'}


def test_tool_call_id_on_a_later_fragment_is_kept() -> None:
    body = chat_sse(
        tool_delta(function={"name": "get_weather", "arguments": ""}),
        tool_delta(id="call_late", function={"arguments": '{"city":'}),
        tool_delta(function={"arguments": '"Oslo"}'}),
        {"delta": {}, "finish_reason": "tool_calls"},
    )
    run = from_chat(body)
    check_stream(run, "openai")
    assert added_and_done_calls(run) == [
        ("get_weather", "get_weather", "call_late", '{"city":"Oslo"}')
    ]


def test_tool_call_id_after_the_arguments_is_kept() -> None:
    body = chat_sse(
        tool_delta(function={"name": "get_weather", "arguments": '{"city":'}),
        tool_delta(function={"arguments": '"Oslo"}'}),
        tool_delta(id="call_last"),
        {"delta": {}, "finish_reason": "tool_calls"},
    )
    run = from_chat(body)
    check_stream(run, "openai")
    assert [c[2] for c in added_and_done_calls(run)] == ["call_last"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_object_arguments_are_serialized(dialect: str) -> None:
    body = chat_sse(
        tool_delta(id="call_1", function={"name": "get_weather", "arguments": {"city": "Zürich"}}),
        {"delta": {}, "finish_reason": "tool_calls"},
    )
    run = from_chat(body, dialect)
    check_stream(run, dialect)
    assert [c[3] for c in added_and_done_calls(run)] == ['{"city":"Zürich"}']


@pytest.mark.parametrize(
    ("reason", "terminal", "detail"),
    [
        ("eos", "response.completed", None),
        ("end_turn", "response.completed", None),
        ("STOP", "response.completed", None),
        ("max_tokens", "response.incomplete", "max_output_tokens"),
        ("model_length", "response.incomplete", "max_output_tokens"),
        ("abort", "response.incomplete", "max_output_tokens"),
        ("error", "response.failed", "upstream_error"),
        ("no_such_reason", "response.failed", "invalid_upstream_chunk"),
    ],
)
def test_provider_finish_reasons(reason: str, terminal: str, detail: str | None) -> None:
    run = from_chat(chat_sse({"delta": {"content": "Hi."}}, {"delta": {}, "finish_reason": reason}))
    check_stream(run, "openai")
    assert run.payloads[-1]["type"] == terminal
    assert outputs(run.final)[1] == "Hi."
    if terminal == "response.incomplete":
        assert run.final["incomplete_details"] == {"reason": detail}
    elif terminal == "response.failed":
        assert run.payloads[-2]["code"] == detail
        assert reason in run.payloads[-2]["message"]


def _tool_chunk(index: int, name: str | None, args: str, finish: str | None = None) -> dict:
    fn: dict[str, Any] = {"arguments": args}
    call: dict[str, Any] = {"index": index, "function": fn}
    if name is not None:
        call.update(id=f"call_{index}", type="function")
        fn["name"] = name
    delta = {"tool_calls": [call]} if args or name else {}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [choice],
    }


@pytest.mark.parametrize("parallel", [True, False, None])
def test_parallel_tool_calls_false_makes_one_call_whatever_the_upstream_sends(
    parallel: Any,
) -> None:
    """An upstream that ignores ``parallel_tool_calls: false`` (llama-server does) and
    starts a second call: the response ends with the first one whole, completed, and
    reads nothing more; without the setting both calls are kept."""
    chunks = [
        _tool_chunk(0, "f", '{"a":'),
        _tool_chunk(0, None, "1}"),
        _tool_chunk(1, "f", '{"a":'),
        _tool_chunk(1, None, "2}"),
        _tool_chunk(1, None, "", "tool_calls"),
    ]
    request = {"model": "m", "tools": [{"type": "function", "name": "f"}]}
    if parallel is not None:
        request["parallel_tool_calls"] = parallel
    read = []

    def source():  # what the converter asked of the upstream
        for chunk in chunks:
            read.append(chunk)
            yield chunk

    events = list(rs.events_from_chat(source(), request=request))
    payloads = [
        json.loads(rs.DIALECTS["openai"].encoder().encode(e).split(b"data: ", 1)[1]) for e in events
    ]
    assert [v for v in rs.validate_payloads(payloads, strict=True) if v.severity == "error"] == []
    final = payloads[-1]
    assert final["type"] == "response.completed"
    calls = [(i["name"], i["arguments"]) for i in final["response"]["output"]]
    if parallel is False:
        assert calls == [("f", '{"a":1}')] and len(read) == 3  # the upstream was left there
    else:
        assert calls == [("f", '{"a":1}'), ("f", '{"a":2}')] and len(read) == 5
