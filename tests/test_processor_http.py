"""The stream processor over real HTTP: a uvicorn server streams Responses SSE built from
chat chunks (and Harmony segments); the official SDK consumes the openai dialect with
strict validation, and the raw SSE of both dialects is parsed and validated."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from _support import validate_openai, validate_openresponses
from http_support import CREATED_AT, ChatChunks, HarmonyOp, check_stream, make_app, parse_sse, serve
from openai import OpenAI

import responses_stream as rs

# -- chat chunks ----------------------------------------------------------------


def chunk(delta: Mapping[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict:
    choice = {"index": 0, "delta": dict(delta or {}), "finish_reason": finish, **extra}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "upstream",
        "choices": [choice],
    }


def text(content: str) -> dict:
    return chunk({"content": content})


def finish(reason: str) -> dict:
    return chunk({}, reason)


def call(
    index: int, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index}
    if id is not None:
        fragment["id"] = id
        fragment["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    fragment["function"] = function
    return fragment


def calls(*fragments: dict) -> dict:
    return chunk({"tool_calls": list(fragments)})


def function_tool(name: str) -> dict[str, Any]:
    # Complete definitions: the Open Responses resource requires description,
    # parameters and strict on every echoed function tool.
    return {
        "type": "function",
        "name": name,
        "description": f"the {name} tool",
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }


TOOLS = [function_tool("get_weather"), function_tool("get_time")]
NAMESPACE_TOOL = {
    "type": "namespace",
    "name": "crm",
    "description": "d",
    "tools": [{"type": "function", "name": "lookup"}],
}

# -- expected output items ---------------------------------------------------------


def msg(*parts: tuple[str, str], status: str = "completed", phase: str | None = None) -> dict:
    return {"type": "message", "status": status, "phase": phase, "content": list(parts)}


def out(text: str) -> tuple[str, str]:
    return ("output_text", text)


def refusal(text: str) -> tuple[str, str]:
    return ("refusal", text)


def reasoning(text: str, status: str = "completed") -> dict:
    return {"type": "reasoning", "status": status, "content": [text], "summary": []}


def fc(
    name: str, call_id: str, arguments: str, status: str = "completed", namespace: str | None = None
) -> dict:
    return {
        "type": "function_call",
        "status": status,
        "name": name,
        "call_id": call_id,
        "arguments": arguments,
        "namespace": namespace,
    }


def summarize(item: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of an output item the scenarios pin down (extension prefix removed)."""
    kind = str(item["type"]).removeprefix("openai:")
    base = {"type": kind, "status": item["status"]}
    if kind == "message":
        content = [(p["type"], p["text"] if "text" in p else p["refusal"]) for p in item["content"]]
        return {**base, "phase": item.get("phase"), "content": content}
    if kind == "reasoning":
        texts = [p["text"] for p in item.get("content") or []]
        return {**base, "content": texts, "summary": [p["text"] for p in item["summary"]]}
    if kind == "function_call":
        keys = ("name", "call_id", "arguments")
        return {**base, **{k: item[k] for k in keys}, "namespace": item.get("namespace")}
    if kind == "code_interpreter_call":
        return {**base, "code": item["code"]}
    if kind == "web_search_call":
        return {**base, "action": {k: v for k, v in item["action"].items() if v is not None}}
    if kind == "mcp_call":
        return {**base, **{k: item[k] for k in ("server_label", "name", "arguments")}}
    raise AssertionError(f"unexpected item type {kind}")


def usage(
    inp: int = 0, out: int = 0, cached: int = 0, reasoning: int = 0, total: int | None = None
) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inp + out if total is None else total,
    }


# -- scenarios -------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    chunks: ChatChunks
    output: list[dict[str, Any]]
    status: str = "completed"
    incomplete: str | None = None
    usage: dict[str, Any] = field(default_factory=usage)
    tools: list[dict[str, Any]] = field(default_factory=lambda: TOOLS)
    error: str | None = None  # for status "failed": a piece of the error message


LOGPROBS = {
    "content": [
        {
            "token": "Hi",
            "logprob": -0.25,
            "bytes": [72, 105],
            "top_logprobs": [
                {"token": "Hi", "logprob": -0.25, "bytes": [72, 105]},
                {"token": "Hey", "logprob": -1.5, "bytes": [72, 101, 121]},
            ],
        }
    ]
}
LOGPROBS_2 = {"content": [{"token": "!", "logprob": -0.5, "bytes": None, "top_logprobs": []}]}

# Each unicode piece is split on a code point boundary inside a grapheme cluster.
UNICODE_PIECES = [
    "👩\u200d",  # woman + ZWJ ...
    "👩\u200d👧\u200d",  # ... woman + ZWJ + girl + ZWJ ...
    "👦 ",  # ... boy: one family emoji across three chunks
    "你好",
    "，世界",
    " cafe",
    "\u0301 ",  # combining acute accent on the previous chunk's e
    "🇳",
    "🇴 ",  # a flag split between its regional indicators
    "👍",
    "🏽",  # skin tone modifier on its own
    "\nnew\tline\r\n",  # SSE line breaks inside the JSON payload
    "\u2028\u2029\x85",  # separators str.splitlines() would split on
    "\x00end",
]

CHAT: dict[str, Case] = {
    # 1. text only, fed as raw SSE data payloads ending with [DONE]
    "text": Case(
        [
            json.dumps(chunk({"role": "assistant", "content": ""})),
            json.dumps(text("Hello")),
            json.dumps(text(", world")),
            json.dumps(finish("stop")),
            "[DONE]",
        ],
        [msg(out("Hello, world"))],
    ),
    # 2. reasoning then text, under both reasoning keys
    "reasoning-content": Case(
        [
            chunk({"role": "assistant", "reasoning_content": "Let me "}),
            chunk({"reasoning_content": "think."}),
            text("Answer"),
            finish("stop"),
        ],
        [reasoning("Let me think."), msg(out("Answer"))],
    ),
    "reasoning-key": Case(
        [
            chunk({"reasoning": "Step 1. "}),
            chunk({"reasoning": "Step 2."}),
            text("Done"),
            text("."),
            finish("stop"),
        ],
        [reasoning("Step 1. Step 2."), msg(out("Done."))],
    ),
    # 3. reasoning and text, then two parallel calls in one delta
    "parallel-calls": Case(
        [
            chunk({"reasoning_content": "Need weather and time."}),
            text("Checking both."),
            calls(
                call(0, "call_w", "get_weather", '{"city":"Paris"}'),
                call(1, "call_t", "get_time", '{"tz":"CET"}'),
            ),
            finish("tool_calls"),
        ],
        [
            reasoning("Need weather and time."),
            msg(out("Checking both.")),
            fc("get_weather", "call_w", '{"city":"Paris"}'),
            fc("get_time", "call_t", '{"tz":"CET"}'),
        ],
    ),
    # 4. interleaved fragments: index 0, 1, 0, 1
    "interleaved-calls": Case(
        [
            calls(call(0, "call_a", "get_weather", '{"ci')),
            calls(call(1, "call_b", "get_time", '{"t')),
            calls(call(0, args='ty":"Oslo"}')),
            calls(call(1, args='z":"UTC"}')),
            finish("tool_calls"),
        ],
        [
            fc("get_weather", "call_a", '{"city":"Oslo"}'),
            fc("get_time", "call_b", '{"tz":"UTC"}'),
        ],
    ),
    # 5. empty arguments
    "empty-arguments": Case(
        [calls(call(0, "call_e", "get_time", "")), finish("tool_calls")],
        [fc("get_time", "call_e", "")],
    ),
    # 6. zero-delta items
    "call-without-arguments": Case(
        [calls(call(0, "call_z", "get_time")), finish("tool_calls")],
        [fc("get_time", "call_z", "")],
    ),
    "no-output": Case([finish("stop")], []),
    # 7. length in the middle of a tool call; and in the middle of text
    "length-in-call": Case(
        [
            text("Sure"),
            calls(call(0, "call_l", "get_weather", '{"city": ')),
            calls(call(0, args='"Pa')),
            finish("length"),
        ],
        [msg(out("Sure")), fc("get_weather", "call_l", '{"city": "Pa', status="incomplete")],
        status="incomplete",
        incomplete="max_output_tokens",
    ),
    "length-in-text": Case(
        [text("Once upon"), text(" a"), finish("length")],
        [msg(out("Once upon a"), status="incomplete")],
        status="incomplete",
        incomplete="max_output_tokens",
    ),
    # 8. content filter
    "content-filter": Case(
        [text("I can"), finish("content_filter")],
        [msg(out("I can"), status="incomplete")],
        status="incomplete",
        incomplete="content_filter",
    ),
    # 9. usage present, in the trailing choices-less chunk (the no-usage cases are all above)
    "usage": Case(
        [
            chunk({"reasoning_content": "hmm"}),
            text("ok"),
            finish("stop"),
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": {
                    "prompt_tokens": 11,
                    "completion_tokens": 7,
                    "total_tokens": 18,
                    "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 2, "audio_tokens": 0},
                },
            },
        ],
        [reasoning("hmm"), msg(out("ok"))],
        usage=usage(11, 7, cached=4, reasoning=2),
    ),
    "usage-absent": Case([text("ok"), finish("stop")], [msg(out("ok"))], usage=usage()),
    # 10. unicode split across chunks
    "unicode": Case(
        [*(text(p) for p in UNICODE_PIECES), finish("stop")],
        [msg(out("".join(UNICODE_PIECES)))],
    ),
    # 11. refusal, alone and after text in the same message
    "refusal": Case(
        [chunk({"refusal": "I can't "}), chunk({"refusal": "help with that."}), finish("stop")],
        [msg(refusal("I can't help with that."))],
    ),
    "text-then-refusal": Case(
        [text("Well, "), chunk({"refusal": "no."}), finish("stop")],
        [msg(out("Well, "), refusal("no."))],
    ),
    # 12. a namespaced tool
    "namespace": Case(
        [calls(call(0, "call_n", "crm.lookup", '{"id":7}')), finish("tool_calls")],
        [fc("lookup", "call_n", '{"id":7}', namespace="crm")],
        tools=[NAMESPACE_TOOL, function_tool("get_time")],
    ),
    # 13. logprobs on content deltas
    "logprobs": Case(
        [
            chunk({"content": "Hi"}, logprobs=LOGPROBS),
            chunk({"content": "!"}, logprobs=LOGPROBS_2),
            finish("stop"),
        ],
        [msg(out("Hi!"))],
    ),
    # 14. bad JSON mid-stream: error + response.failed, the text so far kept
    "malformed": Case(
        [json.dumps(text("partial ")), json.dumps(text("answer")), '{"choices": [', text("lost")],
        [msg(out("partial answer"), status="incomplete")],
        status="failed",
        error="not JSON",
    ),
    # an upstream error object mid-stream: failed as well, the call so far kept
    "upstream-error": Case(
        [
            calls(call(0, "call_u", "get_time", '{"tz":')),
            {"error": {"message": "model overloaded", "type": "server_error"}},
        ],
        [fc("get_time", "call_u", '{"tz":', status="incomplete")],
        status="failed",
        error="upstream error: model overloaded",
    ),
    # the upstream stream stops without a finish_reason: incomplete, the text kept
    "no-finish": Case(
        [text("Half a sen"), text("tence")],
        [msg(out("Half a sentence"), status="incomplete")],
        status="incomplete",
        incomplete="max_output_tokens",
    ),
}

# A Harmony session that takes every route of spec/routes/harmony.yaml.
HARMONY_TOOLS = [function_tool("get_weather")]
HARMONY: dict[str, list[HarmonyOp]] = {
    "harmony-all-routes": [
        ("segment", "analysis", None, "The user wants "),
        ("segment", "analysis", None, "the weather."),
        ("end_message", None),
        ("segment", "commentary", None, "Let me look that up."),
        ("end_message", None),
        ("segment", "commentary", "functions.get_weather", '{"city":'),
        ("segment", "commentary", "functions.get_weather", '"Paris"}'),
        ("end_message", "<|constrain|>json"),
        ("segment", "analysis", "python", "print(1 + 1)"),
        ("end_message", None),
        ("segment", "analysis", "browser.search", '{"query": "paris '),
        ("segment", "analysis", "browser.search", 'weather"}'),
        ("end_message", "<|constrain|>json"),
        ("segment", "analysis", "browser.open", '{"url": "https://example.com/paris"}'),
        ("end_message", "<|constrain|>json"),
        ("segment", "analysis", "browser.find", '{"pattern": "°C"}'),
        ("end_message", "<|constrain|>json"),
        ("segment", "commentary", "mcp.deepwiki.ask_question", '{"q": "x"}'),
        ("end_message", "<|constrain|>json"),
        ("segment", "commentary", "container.exec", '{"cmd": ["ls"]}'),
        ("end_message", "<|constrain|>json"),
        ("segment", "scratchpad", None, "A note."),  # no Harmony channel: kept as reasoning
        ("end_message", None),
        ("segment", "final", None, "It is 21°C "),
        ("segment", "final", None, "in Paris."),
        ("end_message", None),
        ("end", {"prompt_tokens": 30, "completion_tokens": 12}),
    ],
    "harmony-cut-short": [
        ("segment", "analysis", None, "Thinking"),
        ("end_message", None),
        ("segment", "final", None, "It is"),
        ("end", None),
    ],
}
HARMONY_OUTPUT = [
    reasoning("The user wants the weather."),
    msg(out("Let me look that up."), phase="commentary"),
    fc("get_weather", "call_0004", '{"city":"Paris"}'),
    {"type": "code_interpreter_call", "status": "completed", "code": "print(1 + 1)"},
    {
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "paris weather"},
    },
    {
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "open_page", "url": "https://example.com/paris"},
    },
    {
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "find_in_page", "pattern": "°C", "url": ""},
    },
    {
        "type": "mcp_call",
        "status": "completed",
        "server_label": "deepwiki",
        "name": "ask_question",
        "arguments": '{"q": "x"}',
    },
    {
        "type": "mcp_call",
        "status": "completed",
        "server_label": "container",
        "name": "exec",
        "arguments": '{"cmd": ["ls"]}',
    },
    reasoning("A note."),
    msg(out("It is 21°C in Paris."), phase="final_answer"),
]

# -- fixtures and helpers --------------------------------------------------------


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    app = make_app({name: case.chunks for name, case in CHAT.items()}, HARMONY)
    with serve(app) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[OpenAI]:
    with OpenAI(
        base_url=f"{base_url}/v1", api_key="x", _strict_response_validation=True, max_retries=0
    ) as c:
        yield c


def fetch(base_url: str, dialect: str, body: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """POST a request and read the raw SSE: the payloads and whether [DONE] ended it."""
    prefix = "" if dialect == "openai" else f"/{dialect}"
    response = httpx.post(f"{base_url}{prefix}/v1/responses", json=body, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


def fetch_valid(base_url: str, dialect: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The raw events, framed and validated in their dialect."""
    events, done = fetch(base_url, dialect, body)
    if dialect == "openai":
        assert not done
        for payload in events:
            validate_openai(payload)
    else:
        assert done, "an Open Responses stream ends with data: [DONE]"
        for payload in events:
            problems = validate_openresponses(payload, rs.DIALECTS[dialect])
            assert problems == [], (payload["type"], problems)
    return events


@dataclass
class SDKRun:
    events: list[Any]
    response: Any  # the final Response: get_final_response(), or the terminal event's


def sdk_stream(client: OpenAI, model: str, tools: list[dict[str, Any]], **params: Any) -> SDKRun:
    """Consume a stream with the SDK (every event validated strictly)."""
    with client.responses.stream(model=model, input="hi", tools=tools, **params) as stream:
        events = list(stream)
        if events[-1].type == "response.completed":
            final = stream.get_final_response()
            assert final.id == events[-1].response.id
        else:
            with pytest.raises(RuntimeError, match="response.completed"):
                stream.get_final_response()
            final = events[-1].response
    return SDKRun(events, final)


def request_body(model: str, tools: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    return {"model": model, "input": "hi", "tools": tools, "stream": True, **params}


def check_final(response: Mapping[str, Any], case: Case) -> None:
    assert [summarize(item) for item in response["output"]] == case.output
    assert response["status"] == case.status
    expected_details = {"reason": case.incomplete} if case.incomplete else None
    assert response["incomplete_details"] == expected_details
    assert response["usage"] == case.usage
    if case.status == "failed":
        # the chat converter's own code stays on the error event; the response's code is
        # a closed enum in the openai SDK
        assert response["error"]["code"] == "server_error"
        assert case.error and case.error in response["error"]["message"]
    else:
        assert response["error"] is None


def output_text(response: Mapping[str, Any]) -> str:
    return "".join(
        part["text"]
        for item in response["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    )


# -- chat scenarios --------------------------------------------------------------


@pytest.mark.parametrize("name", CHAT)
def test_chat_scenario_through_the_sdk(client: OpenAI, base_url: str, name: str) -> None:
    case = CHAT[name]
    run = sdk_stream(client, name, case.tools)
    raw = fetch_valid(base_url, "openai", request_body(name, case.tools))
    final = check_stream(raw)

    # the SDK saw exactly the raw events, in order
    assert [(e.type, e.sequence_number) for e in run.events] == [
        (e["type"], e["sequence_number"]) for e in raw
    ]
    response = run.response.to_dict()
    check_final(response, case)
    check_final(final, case)
    assert [summarize(i) for i in response["output"]] == [summarize(i) for i in final["output"]]
    assert run.response.output_text == output_text(final)
    assert response["model"] == name
    assert response["created_at"] == CREATED_AT


@pytest.mark.parametrize("name", list(CHAT))
def test_chat_scenario_in_openresponses(base_url: str, name: str) -> None:
    case = CHAT[name]
    events = fetch_valid(base_url, "openresponses", request_body(name, case.tools))
    check_final(check_stream(events), case)
    if case.status == "failed":
        assert events[-2]["type"] == "error"
        # an upstream's own error object keeps its identity: its type when it has no code
        expected = "server_error" if name == "upstream-error" else "invalid_upstream_chunk"
        assert events[-2]["error"]["code"] == expected


def test_namespaced_call_in_openresponses(base_url: str) -> None:
    # Everything but the echoed tools list is valid (see NAMESPACE_ECHO_BUG).
    case = CHAT["namespace"]
    events, done = fetch(base_url, "openresponses", request_body("namespace", case.tools))
    assert done
    for payload in events:
        problems = validate_openresponses(payload, rs.DIALECTS["openresponses"])
        assert [p for p in problems if not p.startswith("response/tools/0")] == []
    check_final(check_stream(events), case)


def test_openresponses_echo_of_a_minimal_function_tool(base_url: str) -> None:
    tools = [{"type": "function", "name": "get_time"}]
    events = fetch_valid(base_url, "openresponses", request_body("text", tools))
    assert events[-1]["response"]["tools"][0]["name"] == "get_time"


def test_text_only_message_content(client: OpenAI) -> None:
    run = sdk_stream(client, "text", TOOLS)
    (message,) = run.response.output
    assert message.type == "message" and message.role == "assistant"
    assert [p.text for p in message.content] == ["Hello, world"]
    assert run.response.output_text == "Hello, world"
    deltas = [e.delta for e in run.events if e.type == "response.output_text.delta"]
    assert deltas == ["Hello", ", world"]  # the empty first content delta opens nothing


def test_reasoning_item_content(client: OpenAI) -> None:
    for name, expected in (
        ("reasoning-content", "Let me think."),
        ("reasoning-key", "Step 1. Step 2."),
    ):
        item = sdk_stream(client, name, TOOLS).response.output[0]
        assert item.type == "reasoning"
        assert [(c.type, c.text) for c in item.content or []] == [("reasoning_text", expected)]


def test_parallel_calls_in_one_delta(client: OpenAI) -> None:
    run = sdk_stream(client, "parallel-calls", TOOLS)
    weather, time = run.response.output[2:]
    assert (weather.name, weather.call_id, weather.arguments) == (
        "get_weather",
        "call_w",
        '{"city":"Paris"}',
    )
    assert (time.name, time.call_id, time.arguments) == ("get_time", "call_t", '{"tz":"CET"}')
    deltas = [
        (e.output_index, e.delta)
        for e in run.events
        if e.type == "response.function_call_arguments.delta"
    ]
    assert deltas == [(2, '{"city":"Paris"}'), (3, '{"tz":"CET"}')]


def test_interleaved_fragments_stream_in_index_order(client: OpenAI) -> None:
    run = sdk_stream(client, "interleaved-calls", TOOLS)
    deltas = [
        (e.output_index, e.delta)
        for e in run.events
        if e.type == "response.function_call_arguments.delta"
    ]
    # the first call streams live; the second is buffered and replayed when it opens
    assert deltas == [(0, '{"ci'), (0, 'ty":"Oslo"}'), (1, '{"t'), (1, 'z":"UTC"}')]
    done = [e.arguments for e in run.events if e.type == "response.function_call_arguments.done"]
    assert done == ['{"city":"Oslo"}', '{"tz":"UTC"}']


@pytest.mark.parametrize("name", ["empty-arguments", "call-without-arguments"])
def test_call_without_argument_deltas(client: OpenAI, name: str) -> None:
    run = sdk_stream(client, name, TOOLS)
    types = [e.type for e in run.events]
    assert "response.function_call_arguments.delta" not in types
    done = [e for e in run.events if e.type == "response.function_call_arguments.done"]
    assert [e.arguments for e in done] == [""]
    assert run.response.output[0].arguments == ""


def test_no_output(client: OpenAI) -> None:
    run = sdk_stream(client, "no-output", TOOLS)
    assert [e.type for e in run.events] == [
        "response.created",
        "response.in_progress",
        "response.completed",
    ]
    assert run.response.output == [] and run.response.output_text == ""


def test_length_inside_a_tool_call(client: OpenAI) -> None:
    run = sdk_stream(client, "length-in-call", TOOLS)
    assert run.events[-1].type == "response.incomplete"
    response = run.response
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    message, tool_call = response.output
    assert message.status == "completed"
    assert tool_call.status == "incomplete" and tool_call.arguments == '{"city": "Pa'
    (done,) = [e for e in run.events if e.type == "response.function_call_arguments.done"]
    assert done.arguments == '{"city": "Pa'


def test_content_filter(client: OpenAI) -> None:
    response = sdk_stream(client, "content-filter", TOOLS).response
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "content_filter"
    assert response.output[0].status == "incomplete"
    assert response.output_text == "I can"


def test_usage_mapped(client: OpenAI) -> None:
    u = sdk_stream(client, "usage", TOOLS).response.usage
    assert u is not None
    assert (u.input_tokens, u.output_tokens, u.total_tokens) == (11, 7, 18)
    assert u.input_tokens_details.cached_tokens == 4
    assert u.output_tokens_details.reasoning_tokens == 2


def test_usage_absent_is_all_zeros(client: OpenAI) -> None:
    u = sdk_stream(client, "usage-absent", TOOLS).response.usage
    assert u is not None
    assert u.to_dict() == usage()


def test_unicode_survives_splitting(client: OpenAI) -> None:
    run = sdk_stream(client, "unicode", TOOLS)
    expected = "".join(UNICODE_PIECES)
    assert "👩\u200d👩\u200d👧\u200d👦" in expected and "e\u0301" in expected
    assert run.response.output_text == expected
    deltas = [e.delta for e in run.events if e.type == "response.output_text.delta"]
    assert deltas == UNICODE_PIECES
    (done,) = [e for e in run.events if e.type == "response.output_text.done"]
    assert done.text == expected


def test_refusal_part(client: OpenAI) -> None:
    run = sdk_stream(client, "refusal", TOOLS)
    (message,) = run.response.output
    assert [(p.type, p.refusal) for p in message.content] == [
        ("refusal", "I can't help with that.")
    ]
    assert run.response.output_text == ""
    deltas = [e.delta for e in run.events if e.type == "response.refusal.delta"]
    assert deltas == ["I can't ", "help with that."]
    run = sdk_stream(client, "text-then-refusal", TOOLS)
    added = [e.content_index for e in run.events if e.type == "response.content_part.added"]
    assert added == [0, 1]


def test_namespaced_tool(client: OpenAI) -> None:
    case = CHAT["namespace"]
    response = sdk_stream(client, "namespace", case.tools).response
    (tool_call,) = response.output
    assert tool_call.type == "function_call"
    assert (tool_call.name, tool_call.namespace, tool_call.call_id) == ("lookup", "crm", "call_n")
    assert tool_call.arguments == '{"id":7}'
    assert response.tools[0].type == "namespace"


def test_logprobs_converted(client: OpenAI) -> None:
    run = sdk_stream(client, "logprobs", TOOLS)
    deltas = [e for e in run.events if e.type == "response.output_text.delta"]
    assert [e.delta for e in deltas] == ["Hi", "!"]
    first = [lp.to_dict() for lp in deltas[0].logprobs]
    assert first == [
        {
            "token": "Hi",
            "logprob": -0.25,
            "bytes": [72, 105],
            "top_logprobs": [
                {"token": "Hi", "logprob": -0.25, "bytes": [72, 105]},
                {"token": "Hey", "logprob": -1.5, "bytes": [72, 101, 121]},
            ],
        }
    ]
    second = [lp.to_dict() for lp in deltas[1].logprobs]
    assert second == [{"token": "!", "logprob": -0.5, "bytes": [], "top_logprobs": []}]
    # the done event and the final part carry all of them, in order
    (done,) = [e for e in run.events if e.type == "response.output_text.done"]
    assert [lp.to_dict() for lp in done.logprobs] == first + second
    (part,) = run.response.output[0].content
    assert part.type == "output_text"
    assert [lp.to_dict() for lp in part.logprobs or []] == first + second


def test_malformed_stream(client: OpenAI, base_url: str) -> None:
    # The openai-dialect error event has no nested "error" object, so the SDK does not
    # raise mid-stream: it yields the error event, then response.failed, and
    # get_final_response() refuses (no response.completed).
    run = sdk_stream(client, "malformed", TOOLS)
    assert [e.type for e in run.events[-2:]] == ["error", "response.failed"]
    error = run.events[-2]
    assert error.code == "invalid_upstream_chunk" and "not JSON" in error.message
    response = run.response
    assert response.status == "failed"
    assert response.error is not None and response.error.code == "server_error"
    assert response.output_text == "partial answer"
    for dialect in rs.DIALECTS:
        events = fetch_valid(base_url, dialect, request_body("malformed", TOOLS))
        assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
        failed = events[-1]["response"]
        assert output_text(failed) == "partial answer"
        assert failed["output"][0]["status"] == "incomplete"
        assert "lost" not in json.dumps(events)


def test_openresponses_error_event_makes_the_sdk_raise(base_url: str) -> None:
    # Open Responses nests the error object, which the SDK's stream reader turns into APIError.
    import openai

    with OpenAI(base_url=f"{base_url}/openresponses/v1", api_key="x", max_retries=0) as c:
        with pytest.raises(openai.APIError, match="not JSON"):
            with c.responses.stream(model="malformed", input="hi", tools=TOOLS) as stream:
                for _ in stream:
                    pass


# -- request echo ------------------------------------------------------------------

ECHO_PARAMS: dict[str, Any] = {
    "instructions": "Be brief.",
    "tool_choice": {"type": "function", "name": "get_weather"},
    "parallel_tool_calls": False,
    "temperature": 0.25,
    "top_p": 0.5,
    "max_output_tokens": 256,
    "metadata": {"trace": "abc", "user": "u1"},
}


def check_echo(response: Mapping[str, Any], model: str) -> None:
    assert response["model"] == model
    assert response["tools"] == TOOLS
    for key, value in ECHO_PARAMS.items():
        assert response[key] == value, key


@pytest.mark.parametrize("name", ["text", "length-in-call", "malformed"])
def test_request_echo(client: OpenAI, base_url: str, name: str) -> None:
    run = sdk_stream(client, name, TOOLS, **ECHO_PARAMS)
    for event in (run.events[0], run.events[1], run.events[-1]):
        check_echo(event.response.to_dict(), name)
    check_echo(run.response.to_dict(), name)
    for dialect in rs.DIALECTS:
        events = fetch_valid(base_url, dialect, request_body(name, TOOLS, **ECHO_PARAMS))
        for event in (events[0], events[1], events[-1]):
            check_echo(event["response"], name)


# -- Harmony ---------------------------------------------------------------------


def test_the_harmony_session_takes_every_route() -> None:
    routes = rs.DIALECTS["openai"].tables.HARMONY_ROUTES
    conv = rs.HarmonyToResponses(rs.StreamProcessor("openai"), None)
    session = HARMONY["harmony-all-routes"]
    used = [routes.index(conv.match(op[1], op[2])) for op in session if op[0] == "segment"]
    assert sorted(set(used)) == list(range(len(routes)))


def test_harmony_every_route_through_the_sdk(client: OpenAI, base_url: str) -> None:
    run = sdk_stream(client, "harmony-all-routes", HARMONY_TOOLS)
    response = run.response
    assert [item.type for item in response.output] == [
        "reasoning",
        "message",
        "function_call",
        "code_interpreter_call",
        "web_search_call",
        "web_search_call",
        "web_search_call",
        "mcp_call",
        "mcp_call",
        "reasoning",
        "message",
    ]
    dumped = response.to_dict()
    assert [summarize(i) for i in dumped["output"]] == HARMONY_OUTPUT
    assert [i.action.type for i in response.output if i.type == "web_search_call"] == [
        "search",
        "open_page",
        "find_in_page",
    ]
    assert [i.server_label for i in response.output if i.type == "mcp_call"] == [
        "deepwiki",
        "container",
    ]
    assert response.output[1].phase == "commentary"
    assert response.output[-1].phase == "final_answer"
    assert dumped["usage"] == usage(30, 12)
    raw = fetch_valid(base_url, "openai", request_body("harmony-all-routes", HARMONY_TOOLS))
    final = check_stream(raw)
    assert [(e.type, e.sequence_number) for e in run.events] == [
        (e["type"], e["sequence_number"]) for e in raw
    ]
    assert [summarize(i) for i in final["output"]] == HARMONY_OUTPUT


def test_harmony_every_route_in_openresponses(base_url: str) -> None:
    body = request_body("harmony-all-routes", HARMONY_TOOLS)
    events = fetch_valid(base_url, "openresponses", body)
    final = check_stream(events)
    assert [i["type"] for i in final["output"]] == [
        "reasoning",
        "message",
        "function_call",
        "openai:code_interpreter_call",
        "openai:web_search_call",
        "openai:web_search_call",
        "openai:web_search_call",
        "openai:mcp_call",
        "openai:mcp_call",
        "reasoning",
        "message",
    ]
    assert [summarize(i) for i in final["output"]] == HARMONY_OUTPUT
    assert final["status"] == "completed" and final["usage"] == usage(30, 12)


@pytest.mark.parametrize("dialect", sorted(rs.DIALECTS))
def test_harmony_cut_short(client: OpenAI, base_url: str, dialect: str) -> None:
    events = fetch_valid(base_url, dialect, request_body("harmony-cut-short", HARMONY_TOOLS))
    final = check_stream(events)
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert [summarize(i) for i in final["output"]] == [
        reasoning("Thinking"),
        msg(out("It is"), status="incomplete", phase="final_answer"),
    ]
    if dialect == "openai":
        run = sdk_stream(client, "harmony-cut-short", HARMONY_TOOLS)
        assert run.response.status == "incomplete"
        assert run.response.output_text == "It is"
