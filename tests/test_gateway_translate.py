"""The gateway's request translations, field by field: Responses -> Chat Completions
(``chat_request``), Chat Completions -> Responses (``responses_request``), the input
items they read (``items``) and the compaction token (``compaction_token``)."""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from sdk_params import sdk_errors

from responses_stream._runtime.gateway.chat_request import translate
from responses_stream._runtime.gateway.compaction_token import open_summary, seal_summary
from responses_stream._runtime.gateway.errors import GatewayError
from responses_stream._runtime.gateway.items import normalize_input, with_ids
from responses_stream._runtime.gateway.request_check import check_request
from responses_stream._runtime.gateway.responses_request import responses_request

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "spec" / "vendor" / "openresponses-openapi-2026-04-24.json"
STREAM = {"stream": True, "stream_options": {"include_usage": True}}
HI = [{"role": "user", "content": "hi"}]
CHAT_HI = [{"role": "user", "content": "hi"}]


# The codes of a value the schemas refuse (OpenAI's): one kind of refusal, a bad value,
# told apart from a field the gateway cannot serve or one the API does not know.
SCHEMA_CODES = (
    "invalid_value",
    "invalid_type",
    "missing_required_parameter",
    "string_below_min_length",
    "integer_below_min_value",
    "integer_above_max_value",
    "array_below_min_length",
)


def kind(code: str | None) -> str | None:
    return "invalid" if code in SCHEMA_CODES else code


def refusal(call: Callable[..., Any], *args: Any, **kwargs: Any) -> GatewayError:
    """The 400 ``call`` raises."""
    with pytest.raises(GatewayError) as info:
        call(*args, **kwargs)
    assert info.value.status == 400, info.value.message
    return info.value


# -- chat_request helpers -----------------------------------------------------------------
def to_chat(body: Mapping[str, Any] | None = None, items: Any = None, **kw: Any) -> dict[str, Any]:
    """The chat body for ``{"model": "m", **body}`` with ``items`` (default: "hi") as
    its input, checked first as the gateway checks a body."""
    full = {"model": "m", **(body or {})}
    given = HI if items is None else items
    check_request({**full, "input": given}, "responses")
    return translate(full, normalize_input(given), **kw).body


def chat_error(body: Mapping[str, Any] | None = None, items: Any = None, **kw: Any) -> str | None:
    """The ``param`` of the 400 ``to_chat`` raises."""
    return refusal(to_chat, body, items, **kw).param


def messages(items: Any, **kw: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = to_chat(None, items, **kw)["messages"]
    return out


def one_message(items: Any, **kw: Any) -> dict[str, Any]:
    [msg] = messages(items, **kw)
    return msg


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": list(parts)}


def text(value: str, kind: str = "input_text") -> dict[str, Any]:
    return {"type": kind, "text": value}


def call(call_id: str = "c1", name: str = "f", arguments: str = "{}") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def output(call_id: str = "c1", value: Any = "42") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": value}


def reasoning(summary: str = "", raw: str = "", **extra: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "reasoning", "summary": [], **extra}
    if summary:
        item["summary"] = [{"type": "summary_text", "text": summary}]
    if raw:
        item["content"] = [{"type": "reasoning_text", "text": raw}]
    return item


def assistant(value: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [text(value, "output_text")]}


# -- items.normalize_input --------------------------------------------------------------------
def test_normalize_none_is_empty() -> None:
    assert normalize_input(None) == []


def test_normalize_string_is_one_user_message() -> None:
    assert normalize_input("hello") == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}
    ]


@pytest.mark.parametrize("role", ["user", "system", "developer"])
def test_normalize_string_content_is_input_text(role: str) -> None:
    assert normalize_input([{"role": role, "content": "x"}]) == [
        {"type": "message", "role": role, "content": [{"type": "input_text", "text": "x"}]}
    ]


def test_normalize_assistant_string_content_is_output_text() -> None:
    assert normalize_input([{"role": "assistant", "content": "x"}]) == [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "x", "annotations": []}],
        }
    ]


def test_normalize_keeps_parts_and_other_items() -> None:
    items = [
        {"type": "message", "role": "user", "content": [text("a")], "id": "msg_1"},
        {"type": "function_call_output", "call_id": "c", "output": "o"},
    ]
    assert normalize_input(items) == items


def test_normalize_null_type_is_message() -> None:
    [item] = normalize_input([{"type": None, "role": "user", "content": "x"}])
    assert item["type"] == "message"


def test_normalize_copies() -> None:
    items = [{"role": "user", "content": [text("a")]}]
    before = copy.deepcopy(items)
    out = normalize_input(items)
    out[0]["content"][0]["text"] = "changed"
    out[0]["role"] = "system"
    assert items == before


@pytest.mark.parametrize(
    ("value", "param"),
    [
        (42, "input"),
        ({"role": "user"}, "input"),
        (["hi"], "input[0]"),
        ([{"role": "user", "content": "a"}, 3], "input[1]"),
        ([{"content": "a"}], "input[0].role"),
        ([{"role": "tool", "content": "a"}], "input[0].role"),
        ([{"role": "user"}], "input[0].content"),
        ([{"role": "user", "content": 5}], "input[0].content"),
        ([{"role": "user", "content": [text("a"), "b"]}], "input[0].content[1]"),
        ([{"type": 7}], "input[0].type"),
        ([{"type": ""}], "input[0].type"),
    ],
)
def test_normalize_bad_shapes(value: Any, param: str) -> None:
    assert refusal(check_request, {"model": "m", "input": value}, "responses").param == param


# -- items.with_ids ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "prefix"),
    [
        ("message", "msg_"),
        ("function_call", "fc_"),
        ("function_call_output", "fco_"),
        ("reasoning", "rs_"),
        ("custom_tool_call", "ctc_"),
        ("custom_tool_call_output", "ctco_"),
        ("compaction", "cmp_"),
        ("web_search_call", "item_"),
    ],
)
def test_with_ids_prefixes(kind: str, prefix: str) -> None:
    [item] = with_ids([{"type": kind}])
    assert re.fullmatch(re.escape(prefix) + "[0-9a-f]{32}", item["id"])
    assert list(item) == ["id", "type"]


def test_with_ids_keeps_ids_and_copies() -> None:
    items = [{"type": "message", "id": "msg_mine"}, {"type": "message"}]
    out = with_ids(items)
    assert out[0] == {"type": "message", "id": "msg_mine"}
    assert out[0] is not items[0]
    assert "id" not in items[1]
    assert out[0]["id"] != out[1]["id"]


@pytest.mark.parametrize("empty", [None, ""])
def test_with_ids_fills_empty_ids(empty: Any) -> None:
    [item] = with_ids([{"type": "reasoning", "id": empty}])
    assert item["id"].startswith("rs_") and len(item["id"]) == 35


def test_with_ids_are_unique() -> None:
    assert len({i["id"] for i in with_ids([{"type": "message"}] * 50)}) == 50


# -- compaction_token -------------------------------------------------------------------------
@pytest.mark.parametrize("summary", ["", "plain", 'ünïcødé ✓ and "quotes"\nlines'])
def test_compaction_token_round_trip(summary: str) -> None:
    token = seal_summary(summary)
    assert open_summary(token, "p") == summary


def test_compaction_token_format() -> None:
    token = seal_summary("hi")
    assert token.startswith("rsgc1.") and "=" not in token
    data = token.removeprefix("rsgc1.")
    assert re.fullmatch("[A-Za-z0-9_-]+", data)
    assert json.loads(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))) == {"summary": "hi"}


def _token(raw: bytes) -> str:
    return "rsgc1." + base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        None,
        7,
        "",
        "rsgc1.",
        "rsgc2." + seal_summary("x").removeprefix("rsgc1."),
        seal_summary("x").removeprefix("rsgc1."),
        "rsgc1.!!!!",
        "rsgc1.é",
        "rsgc1.abc",
        _token(b"not json"),
        _token(b"\xff\xfe"),
        _token(b'["summary"]'),
        _token(b'{"summary": 1}'),
        _token(b'{"text": "x"}'),
    ],
)
def test_compaction_token_refusals(token: Any) -> None:
    error = refusal(open_summary, token, "input[3].encrypted_content")
    assert error.param == "input[3].encrypted_content"
    assert error.code == "invalid_encrypted_content"


# -- chat_request: the body -------------------------------------------------------------------
def test_chat_minimal() -> None:
    assert to_chat() == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_chat_model_missing() -> None:
    error = refusal(check_request, {"input": "hi"}, "responses")
    assert (error.param, error.code) == ("model", "missing_required_parameter")


@pytest.mark.parametrize(
    ("model", "code"),
    [("", "string_below_min_length"), (3, "invalid_type"), (["m"], "invalid_type")],
)
def test_chat_model_bad(model: Any, code: str) -> None:
    error = refusal(check_request, {"model": model}, "responses")
    assert (error.param, error.code) == ("model", code)


def test_chat_instructions_are_the_first_system_message() -> None:
    out = to_chat({"instructions": "be brief"}, [{"role": "developer", "content": "d"}])
    assert out["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "system", "content": "d"},
    ]


def test_chat_empty_instructions_send_nothing() -> None:
    assert to_chat({"instructions": ""})["messages"] == [{"role": "user", "content": "hi"}]


def test_chat_instructions_must_be_a_string() -> None:
    assert chat_error({"instructions": ["x"]}) == "instructions"


def test_chat_does_not_read_input() -> None:
    out = translate({"model": "m", "input": "ignored"}, normalize_input("used")).body
    assert out["messages"] == [{"role": "user", "content": "used"}]


@pytest.mark.parametrize(
    "fields",
    [
        {"stream": True},
        {"stream": False},
        {"store": False},
        {"previous_response_id": "resp_1"},
        {"input": [{"role": "user", "content": "x"}]},
        {"background": False},
        {"background": None},
        {"stream_options": {"include_obfuscation": False}},
        {"truncation": "auto"},
        {"truncation": "disabled"},
        {"include": ["reasoning.encrypted_content"]},
        {"include": []},
        {"top_logprobs": 0},
        {"top_logprobs": None},
        {"max_tool_calls": None},
        {"conversation": None},
        {"prompt": None},
        {"context_management": None},
        {"reasoning": {"summary": "auto", "generate_summary": "concise"}},
        {"text": {"format": {"type": "text"}}},
        {"text": {}},
        {"tools": []},
        {"temperature": None},
    ],
)
def test_chat_fields_with_no_effect(fields: dict[str, Any]) -> None:
    assert to_chat(fields) == to_chat()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("parallel_tool_calls", False),
        ("temperature", 0.5),
        ("temperature", 1),
        ("top_p", 0.9),
        ("presence_penalty", -1.5),
        ("frequency_penalty", 2),
        ("user", "u-1"),
        ("metadata", {"k": "v"}),
        ("stop", "END"),
        ("stop", ["a", "b"]),
        ("prompt_cache_key", "key"),
        ("prompt_cache_retention", "24h"),
        ("safety_identifier", "hash"),
        ("service_tier", "flex"),
    ],
)
def test_chat_passed_fields(name: str, value: Any) -> None:
    assert to_chat({name: value}) == {**to_chat(), name: value}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("parallel_tool_calls", "yes"),
        ("temperature", "hot"),
        ("temperature", True),
        ("top_p", [1]),
        ("presence_penalty", "0"),
        ("frequency_penalty", {}),
        ("user", 5),
        ("metadata", {"k": 1}),
        ("metadata", ["k"]),
        ("stop", 3),
        ("stop", ["a", 1]),
        ("prompt_cache_key", 1),
        ("prompt_cache_retention", False),
        ("safety_identifier", 1.0),
        ("service_tier", ["auto"]),
        ("max_output_tokens", 0),
        ("max_output_tokens", "5"),
        ("max_output_tokens", True),
        ("max_output_tokens", 2.5),
        ("truncation", "sometimes"),
        ("include", "reasoning.encrypted_content"),
        ("top_logprobs", -1),
        ("top_logprobs", "2"),
        ("reasoning", "high"),
        ("text", "json"),
        ("tools", {"type": "function"}),
        ("stream_options", "yes"),
    ],
)
def test_chat_bad_values(name: str, value: Any) -> None:
    param = chat_error({name: value})
    assert param == name or str(param).startswith(f"{name}[")  # an array's entry is named


def test_chat_max_output_tokens() -> None:
    out = to_chat({"max_output_tokens": 64})
    assert out["max_completion_tokens"] == 64 and "max_output_tokens" not in out


def test_chat_reasoning_effort() -> None:
    out = to_chat({"reasoning": {"effort": "high", "summary": "detailed"}})
    assert out == {**to_chat(), "reasoning_effort": "high"}


@pytest.mark.parametrize(
    ("reasoning", "param"),
    [
        ({"effort": 3}, "reasoning.effort"),
        ({"summary": 3}, "reasoning.summary"),
        ({"generate_summary": True}, "reasoning.generate_summary"),
        ({"colour": "red"}, "reasoning.colour"),
    ],
)
def test_chat_reasoning_refusals(reasoning: dict[str, Any], param: str) -> None:
    assert chat_error({"reasoning": reasoning}) == param


def test_chat_text_format_json_object() -> None:
    out = to_chat({"text": {"format": {"type": "json_object"}}})
    assert out["response_format"] == {"type": "json_object"}


def test_chat_text_format_json_schema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    fmt = {
        "type": "json_schema",
        "name": "thing",
        "schema": schema,
        "strict": True,
        "description": "a thing",
    }
    out = to_chat({"text": {"format": fmt}})
    assert out["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "thing",
            "schema": schema,
            "strict": True,
            "description": "a thing",
        },
    }


def test_chat_text_format_json_schema_minimal() -> None:
    out = to_chat({"text": {"format": {"type": "json_schema", "name": "n", "schema": {}}}})
    assert out["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "n", "schema": {}},
    }


def test_chat_text_verbosity() -> None:
    assert to_chat({"text": {"verbosity": "low"}}) == {**to_chat(), "verbosity": "low"}


@pytest.mark.parametrize(
    ("text_param", "param"),
    [
        ({"format": "json"}, "text.format"),
        ({"format": {"type": "grammar"}}, "text.format.type"),
        ({"format": {}}, "text.format.type"),
        ({"format": {"type": "json_schema", "schema": {}}}, "text.format.name"),
        ({"format": {"type": "json_schema", "name": "n"}}, "text.format.schema"),
        ({"format": {"type": "json_schema", "name": "n", "schema": []}}, "text.format.schema"),
        (
            {"format": {"type": "json_schema", "name": "n", "schema": {}, "strict": "y"}},
            "text.format.strict",
        ),
        (
            {"format": {"type": "json_schema", "name": "n", "schema": {}, "description": 1}},
            "text.format.description",
        ),
        ({"format": {"type": "json_schema", "name": "n", "schema": {}, "x": 1}}, "text.format.x"),
        ({"format": {"type": "text", "x": 1}}, "text.format.x"),
        ({"verbosity": 2}, "text.verbosity"),
        ({"colour": "red"}, "text.colour"),
    ],
)
def test_chat_text_refusals(text_param: dict[str, Any], param: str) -> None:
    assert chat_error({"text": text_param}) == param


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"include": ["reasoning.encrypted_content", "colour"]}, "include[1]", "invalid_value"),
        ({"top_logprobs": 21}, "top_logprobs", "integer_above_max_value"),
        ({"moderation": {"model": "omni"}}, "moderation", "unsupported_parameter"),
        ({"max_tool_calls": 3}, "max_tool_calls", "unsupported_parameter"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt", "unsupported_parameter"),
        (
            {"context_management": [{"type": "compaction"}]},
            "context_management",
            "unsupported_parameter",
        ),
        ({"colour": "red"}, "colour", "unknown_parameter"),
        ({"messages": []}, "messages", "unknown_parameter"),
        (
            {"stream_options": {"include_usage": True}},
            "stream_options.include_usage",
            "unknown_parameter",
        ),
    ],
)
def test_chat_refused_fields(fields: dict[str, Any], param: str, code: str) -> None:
    error = refusal(to_chat, fields)
    assert (error.param, kind(error.code)) == (param, kind(code))


def test_chat_includes_with_no_effect_are_taken() -> None:
    include = ["reasoning.encrypted_content", "file_search_call.results"]
    out = to_chat({"include": include, "top_logprobs": 3})
    assert "logprobs" not in out and "top_logprobs" not in out


def test_chat_logprobs_are_asked_for() -> None:
    out = to_chat({"include": ["message.output_text.logprobs"], "top_logprobs": 3})
    assert (out["logprobs"], out["top_logprobs"]) == (True, 3)
    assert to_chat({"include": ["message.output_text.logprobs"]})["logprobs"] is True


@pytest.mark.parametrize(
    "fields",
    [
        {"client_metadata": {"session": "s1"}},
        {"access_programs": {"x": 1}},
        {"background_options": {"completion_window": "2h"}},
        {"image": {"quality": "low"}},
        {"prompt_cache_options": {"mode": "explicit", "ttl": "30m"}},
    ],
)
def test_chat_fields_with_no_effect_are_taken(fields: dict[str, Any]) -> None:
    out = to_chat(fields)
    assert not set(fields) & set(out)


def test_chat_unknown_field_message() -> None:
    assert (
        refusal(to_chat, {"colour": 1}).message == "Unrecognized request argument supplied: colour"
    )


# -- chat_request: tools ----------------------------------------------------------------------
WEATHER_PARAMS = {"type": "object", "properties": {"city": {"type": "string"}}}


def tools_of(*tools: Any) -> Any:
    return to_chat({"tools": list(tools)}).get("tools")


def test_chat_function_tool() -> None:
    tool = {
        "type": "function",
        "name": "weather",
        "description": "Get the weather",
        "parameters": WEATHER_PARAMS,
        "strict": True,
    }
    assert tools_of(tool) == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Get the weather",
                "parameters": WEATHER_PARAMS,
                "strict": True,
            },
        }
    ]


def test_chat_function_tool_default_parameters() -> None:
    assert tools_of({"type": "function", "name": "f", "parameters": None, "strict": None}) == [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": {}}},
        }
    ]


def test_chat_custom_tool() -> None:
    tool = {"type": "custom", "name": "sql", "description": "Run SQL", "format": {"type": "text"}}
    assert tools_of(tool) == [
        {
            "type": "custom",
            "custom": {"name": "sql", "description": "Run SQL", "format": {"type": "text"}},
        }
    ]


def test_chat_custom_tool_grammar_is_nested() -> None:
    fmt = {"type": "grammar", "syntax": "lark", "definition": "start: /x/"}
    assert tools_of({"type": "custom", "name": "g", "format": fmt}) == [
        {
            "type": "custom",
            "custom": {
                "name": "g",
                "format": {
                    "type": "grammar",
                    "grammar": {"definition": "start: /x/", "syntax": "lark"},
                },
            },
        }
    ]


def test_chat_namespace_tools_are_flattened() -> None:
    space = {
        "type": "namespace",
        "name": "crm",
        "description": "Customer records",
        "tools": [
            {"type": "function", "name": "lookup", "parameters": WEATHER_PARAMS},
            {"type": "custom", "name": "note"},
        ],
    }
    assert tools_of({"type": "function", "name": "f"}, space) == [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": {}}},
        },
        {"type": "function", "function": {"name": "crm__lookup", "parameters": WEATHER_PARAMS}},
        {"type": "custom", "custom": {"name": "crm__note"}},
    ]


def test_chat_tool_names_fit_what_chat_apis_take() -> None:
    long = "x" * 70
    space = {
        "type": "namespace",
        "name": "multi_agent_v1",
        "description": "Agents",
        "tools": [{"type": "function", "name": "close_agent"}, {"type": "function", "name": long}],
    }
    clash = {"type": "function", "name": "multi_agent_v1__close_agent"}
    odd = {"type": "function", "name": "a b"}
    names = [t["function"]["name"] for t in tools_of(space, clash, odd)]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names)
    assert len(set(names)) == 4
    assert names[2] == "multi_agent_v1__close_agent"  # a name that fits is never changed
    assert names[0] != names[2] and names[0].startswith("multi_agent_v1__close_agent_")
    assert names[1].startswith("multi_agent_v1__xxx") and len(names[1]) == 64
    assert names[3].startswith("a_b_")


def test_chat_client_tool_search_is_a_function() -> None:
    params = {"type": "object", "properties": {"goal": {"type": "string"}}}
    tool = {"type": "tool_search", "execution": "client", "parameters": params}
    [out] = tools_of(tool)
    assert out["function"]["name"] == "tool_search"
    assert out["function"]["parameters"] == params


@pytest.mark.parametrize(
    "kind",
    [
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "image_generation",
        "mcp",
        "tool_search",
        "programmatic_tool_calling",
    ],
)
def test_chat_hosted_tools_are_dropped_and_named(kind: str) -> None:
    tools = [{"type": "function", "name": "f"}, {"type": kind}]
    out = translate({"model": "m", "tools": tools}, normalize_input("hi"))
    assert [t["function"]["name"] for t in out.body["tools"]] == ["f"]
    assert out.dropped == [kind]
    alone = translate({"model": "m", "tools": [{"type": kind}]}, normalize_input("hi"))
    assert "tools" not in alone.body and alone.dropped == [kind]


# Hosted tools with the fields the schemas require of them.
HOSTED = {
    "file_search": {"type": "file_search", "vector_store_ids": ["vs_1"]},
    "code_interpreter": {"type": "code_interpreter", "container": "cntr_1"},
    "computer_use_preview": {
        "type": "computer_use_preview",
        "environment": "linux",
        "display_width": 1024,
        "display_height": 768,
    },
    "mcp": {"type": "mcp", "server_label": "docs"},
}


@pytest.mark.parametrize(
    "kind",
    [
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "image_generation",
        "mcp",
        "tool_search",
    ],
)
def test_chat_hosted_tools_are_refused(kind: Any) -> None:
    tools = [{"type": "function", "name": "f"}, HOSTED.get(kind, {"type": kind})]
    error = refusal(to_chat, {"tools": tools}, hosted_tools="refuse")
    assert (error.param, error.code) == ("tools[1].type", "unsupported_parameter")


@pytest.mark.parametrize(
    "kind", ["shell", "local_shell", "apply_patch", "computer", "computer_use_preview"]
)
def test_chat_client_run_typed_tools_are_offered_whatever_the_policy(kind: str) -> None:
    tool = HOSTED.get(kind, {"type": kind})
    for policy in ("drop", "refuse"):
        out = translate({"model": "m", "tools": [tool]}, normalize_input("hi"), hosted_tools=policy)
        [offered] = out.body["tools"]
        assert offered["type"] == "function" and out.dropped == []
        assert offered["function"]["name"] == ("computer" if "computer" in kind else kind)


def test_chat_a_tool_without_a_type_is_refused() -> None:
    error = refusal(to_chat, {"tools": [{"type": None}]})
    assert error.param == "tools[0].type"


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        ("f", "tools[0]"),
        ({"type": "function"}, "tools[0].name"),
        ({"type": "function", "name": ""}, "tools[0].name"),
        ({"type": "function", "name": "f", "parameters": "x"}, "tools[0].parameters"),
        ({"type": "function", "name": "f", "strict": "y"}, "tools[0].strict"),
        ({"type": "function", "name": "f", "description": 1}, "tools[0].description"),
        ({"type": "function", "name": "f", "output_schema": {}}, "tools[0].output_schema"),
        (
            {"type": "function", "name": "f", "allowed_callers": ["direct"]},
            "tools[0].allowed_callers",
        ),
        ({"type": "function", "name": "f", "colour": 1}, "tools[0].colour"),
        ({"type": "custom", "name": "c", "format": {"type": "regex"}}, "tools[0].format.type"),
        (
            {"type": "custom", "name": "c", "format": {"type": "grammar", "syntax": "lark"}},
            "tools[0].format.definition",
        ),
        ({"type": "namespace", "name": "ns", "tools": [{"type": "mcp"}]}, "tools[0].tools[0].type"),
        ({"type": "namespace", "name": "ns", "tools": "x"}, "tools[0].tools"),
        (
            {"type": "namespace", "description": "d", "tools": [{"type": "function", "name": "f"}]},
            "tools[0].name",
        ),
    ],
)
def test_chat_tool_refusals(tool: Any, param: str) -> None:
    assert chat_error({"tools": [tool]}) == param


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_chat_tool_choice_strings(choice: str) -> None:
    assert to_chat({"tool_choice": choice})["tool_choice"] == choice


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "function", "name": "f"}, {"type": "function", "function": {"name": "f"}}),
        ({"type": "custom", "name": "c"}, {"type": "custom", "custom": {"name": "c"}}),
        (
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "f"}, {"type": "custom", "name": "c"}],
            },
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [
                        {"type": "function", "function": {"name": "f"}},
                        {"type": "custom", "custom": {"name": "c"}},
                    ],
                },
            },
        ),
    ],
)
def test_chat_tool_choice_objects(choice: dict[str, Any], expected: dict[str, Any]) -> None:
    tools = [{"type": "function", "name": "f"}, {"type": "custom", "name": "c"}]
    assert to_chat({"tools": tools, "tool_choice": choice})["tool_choice"] == expected


def test_chat_tool_choice_naming_no_declared_tool_is_refused() -> None:
    tools = [{"type": "function", "name": "f"}]
    error = refusal(to_chat, {"tools": tools, "tool_choice": {"type": "function", "name": "g"}})
    assert (error.param, error.message) == (
        "tool_choice",
        "Tool choice 'g' not found in 'tools' parameter.",
    )


@pytest.mark.parametrize(
    ("choice", "param"),
    [
        ("sometimes", "tool_choice"),
        (3, "tool_choice"),
        ({"type": "apply_patch"}, "tool_choice.type"),
        ({"type": "shell"}, "tool_choice.type"),
        ({"type": "function"}, "tool_choice.name"),
        ({"type": "function", "name": "f", "namespace": "ns"}, "tool_choice.namespace"),
        ({"type": "allowed_tools", "tools": []}, "tool_choice.mode"),
        ({"type": "allowed_tools", "mode": "none", "tools": []}, "tool_choice.mode"),
        ({"type": "allowed_tools", "mode": "auto"}, "tool_choice.tools"),
        (
            {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [{"type": "function", "name": "f"}, {"type": "mcp"}],
            },
            "tool_choice.tools[1].type",
        ),
    ],
)
def test_chat_tool_choice_refusals(choice: Any, param: str) -> None:
    assert chat_error({"tool_choice": choice}) == param


@pytest.mark.parametrize("kind", ["file_search", "web_search_preview", "mcp"])
def test_chat_hosted_tool_choice_goes_with_its_tool(kind: str) -> None:
    choice = {"type": kind, **({"server_label": "docs"} if kind == "mcp" else {})}
    out = translate({"model": "m", "tool_choice": choice}, normalize_input("hi"))
    assert "tool_choice" not in out.body and out.dropped == [f"tool_choice:{kind}"]
    error = refusal(to_chat, {"tool_choice": choice}, hosted_tools="refuse")
    assert error.param == "tool_choice.type"


# -- chat_request: messages -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("role", "chat_role"), [("user", "user"), ("system", "system"), ("developer", "system")]
)
def test_chat_text_message_roles(role: str, chat_role: str) -> None:
    assert one_message([{"role": role, "content": "x"}]) == {"role": chat_role, "content": "x"}


def test_chat_developer_role_option() -> None:
    msg = one_message([{"role": "developer", "content": "x"}], developer_role="developer")
    assert msg == {"role": "developer", "content": "x"}


def test_chat_several_text_parts_are_a_list() -> None:
    msg = one_message([user(text("a"), text("b", "output_text"))])
    assert msg == {
        "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }


def test_chat_system_text_parts_are_a_list() -> None:
    msg = one_message([{"role": "system", "content": [text("a"), text("b")]}])
    assert msg["content"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]


def test_chat_no_parts_is_empty_text() -> None:
    assert one_message([user()]) == {"role": "user", "content": ""}


def test_chat_item_labels_are_accepted() -> None:
    item = {**user(text("a")), "id": "msg_1", "status": "completed"}
    assert one_message([item]) == {"role": "user", "content": "a"}


def test_chat_image_part() -> None:
    image = {"type": "input_image", "image_url": "https://x/y.png", "detail": "high"}
    assert one_message([user(text("look"), image)])["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "high"}},
    ]


@pytest.mark.parametrize("detail", ["auto", None])
def test_chat_image_part_auto_detail_is_left_out(detail: Any) -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": detail}
    assert one_message([user(image)])["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    ]


def test_chat_file_part_with_data() -> None:
    part = {
        "type": "input_file",
        "file_data": "data:application/pdf;base64,AA",
        "filename": "a.pdf",
    }
    assert one_message([user(part)])["content"] == [
        {
            "type": "file",
            "file": {"file_data": "data:application/pdf;base64,AA", "filename": "a.pdf"},
        }
    ]


def test_chat_file_part_with_id() -> None:
    part = {"type": "input_file", "file_id": "file-1"}
    assert one_message([user(part)])["content"] == [{"type": "file", "file": {"file_id": "file-1"}}]


@pytest.mark.parametrize(
    ("part", "param", "code"),
    [
        (
            {"type": "input_image", "file_id": "file-1"},
            "input[0].content[0].file_id",
            "unsupported_parameter",
        ),
        (
            {"type": "input_image", "file_id": "file-1", "image_url": "https://x"},
            "input[0].content[0].file_id",
            "unsupported_parameter",
        ),
        ({"type": "input_image"}, "input[0].content[0].image_url", "invalid_value"),
        (
            {"type": "input_image", "image_url": "u", "detail": 1},
            "input[0].content[0].detail",
            "invalid_value",
        ),
        (
            {"type": "input_file", "file_url": "https://x/a.pdf"},
            "input[0].content[0].file_url",
            "unsupported_parameter",
        ),
        (
            {"type": "input_file", "filename": "a.pdf"},
            "input[0].content[0].file_data",
            "invalid_value",
        ),
        ({"type": "input_file", "file_id": 3}, "input[0].content[0].file_id", "invalid_value"),
        (
            {"type": "input_file", "file_id": "f", "colour": "red"},
            "input[0].content[0].colour",
            "unknown_parameter",
        ),
        # part types the Responses API does not have
        ({"type": "input_audio", "input_audio": {}}, "input[0].content[0].type", "invalid_value"),
        ({"type": "input_video"}, "input[0].content[0].type", "invalid_value"),
        ({"type": "refusal", "refusal": "no"}, "input[0].content[0].type", "unsupported_parameter"),
        ({"type": "input_text"}, "input[0].content[0].text", "invalid_value"),
        (
            {"type": "input_text", "text": "a", "colour": 1},
            "input[0].content[0].colour",
            "unknown_parameter",
        ),
        (
            {"type": "input_text", "text": "a", "prompt_cache_breakpoint": {"mode": "explicit"}},
            "input[0].content[0].prompt_cache_breakpoint",
            "unsupported_parameter",
        ),
    ],
)
def test_chat_user_part_refusals(part: dict[str, Any], param: str, code: str) -> None:
    error = refusal(to_chat, None, [user(part)])
    assert (error.param, kind(error.code)) == (param, kind(code))


def test_refused_keys_are_found_deep_in_lists_and_not_in_schemas() -> None:
    """The table's keys are refused on the parts of a tool output too, and on no key of a
    function's parameters schema (a property may be named ``caller``)."""
    breakpoint_part = {**text("a"), "prompt_cache_breakpoint": {"mode": "explicit"}}
    items = [
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": [breakpoint_part]},
    ]
    assert chat_error(None, items) == "input[1].output[0].prompt_cache_breakpoint"
    schema = {"type": "object", "properties": {"caller": {"type": "string"}}}
    tool = {"type": "function", "name": "f", "parameters": schema}
    assert to_chat({"tools": [tool]})["tools"][0]["function"]["parameters"] == schema


@pytest.mark.parametrize(
    ("part", "param", "code"),
    [
        ({"type": "input_image", "file_id": "f"}, "file_id", "unsupported_parameter"),
        ({"type": "input_file", "file_url": "u"}, "file_url", "unsupported_parameter"),
        ({"type": "input_file", "filename": "a"}, "file_data", "missing_required_parameter"),
        ({"type": "input_image"}, "image_url", "missing_required_parameter"),
    ],
)
def test_compact_context_parts_are_checked_as_on_responses(
    part: dict[str, Any], param: str, code: str
) -> None:
    error = refusal(check_request, {"model": "m", "input": [user(part)]}, "compact")
    assert (error.param, error.code) == (f"input[0].content[0].{param}", code)


@pytest.mark.parametrize("role", ["system", "developer", "assistant"])
@pytest.mark.parametrize(
    "part",
    [
        {"type": "input_image", "image_url": "https://x"},
        {"type": "input_file", "file_data": "AA"},
    ],
)
def test_chat_media_outside_user_messages(role: str, part: dict[str, Any]) -> None:
    items = [{"role": role, "content": [text("a"), part]}]
    error = refusal(to_chat, None, items)
    assert (error.param, error.code) == ("input[0].content[1].type", "unsupported_parameter")


def test_chat_assistant_text_is_a_string() -> None:
    item = {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "phase": "final_answer",
        "content": [
            {
                "type": "output_text",
                "text": "a",
                "annotations": [
                    {
                        "type": "url_citation",
                        "url": "https://x",
                        "title": "x",
                        "start_index": 0,
                        "end_index": 1,
                    }
                ],
                "logprobs": [],
            },
            {"type": "output_text", "text": "b", "annotations": []},
        ],
    }
    assert one_message([item]) == {"role": "assistant", "content": "ab"}


def test_chat_assistant_refusal() -> None:
    item = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't"}]}
    assert one_message([item]) == {"role": "assistant", "content": None, "refusal": "I can't"}


def test_chat_assistant_text_and_refusal() -> None:
    parts = [text("a", "output_text"), {"type": "refusal", "refusal": "no"}]
    msg = one_message([{"role": "assistant", "content": parts}])
    assert msg == {"role": "assistant", "content": "a", "refusal": "no"}


@pytest.mark.parametrize(
    ("item", "param", "code"),
    [
        ({"role": "user", "content": "a", "colour": 1}, "input[0].colour", "unknown_parameter"),
        (
            {"role": "assistant", "content": [{"type": "refusal"}]},
            "input[0].content[0].refusal",
            "invalid_value",
        ),
        (
            {"role": "assistant", "content": [{"type": "output_text", "text": 3}]},
            "input[0].content[0].text",
            "invalid_value",
        ),
        (  # a part of reasoning items, not of messages
            {"role": "assistant", "content": [{"type": "reasoning_text", "text": "x"}]},
            "input[0].content[0].type",
            "invalid_value",
        ),
    ],
)
def test_chat_message_refusals(item: dict[str, Any], param: str, code: str) -> None:
    error = refusal(to_chat, None, [item])
    assert (error.param, kind(error.code)) == (param, kind(code))


# -- chat_request: tool calls and outputs --------------------------------------------------------
def test_chat_function_call_and_output() -> None:
    items = [
        {**call("c1", "weather", '{"city":"Paris"}'), "id": "fc_1", "status": "completed"},
        {**output("c1", "sunny"), "id": "fco_1", "status": "completed"},
    ]
    assert messages(items) == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]


def test_chat_calls_merge_with_each_other_and_the_message_before() -> None:
    items = [
        assistant("let me check"),
        call("c1", "a"),
        call("c2", "b"),
        output("c1"),
        output("c2"),
    ]
    out = messages(items)
    assert out[0] == {
        "role": "assistant",
        "content": "let me check",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{}"}},
        ],
    }
    assert [m["role"] for m in out] == ["assistant", "tool", "tool"]


def test_chat_calls_after_outputs_start_a_new_message() -> None:
    out = messages([call("c1"), output("c1"), call("c2"), output("c2")])
    assert [m["role"] for m in out] == ["assistant", "tool", "assistant", "tool"]


def test_chat_calls_do_not_merge_into_user_messages() -> None:
    out = messages([{"role": "user", "content": "q"}, call("c1")])
    assert out[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


def test_chat_namespaced_call() -> None:
    [msg] = messages([{**call("c1", "lookup"), "namespace": "crm"}])
    assert msg["tool_calls"][0]["function"]["name"] == "crm__lookup"


def test_chat_tool_search_call_and_output() -> None:
    items = [
        {"type": "tool_search_call", "call_id": "ts1", "arguments": {"goal": "weather"}},
        {
            "type": "tool_search_output",
            "call_id": "ts1",
            "tools": [{"type": "function", "name": "f"}],
        },
    ]
    call, output = messages(items)
    fn = call["tool_calls"][0]["function"]
    assert (fn["name"], json.loads(fn["arguments"])) == ("tool_search", {"goal": "weather"})
    assert output["tool_call_id"] == "ts1"
    assert json.loads(output["content"]) == {"tools": [{"type": "function", "name": "f"}]}


def test_chat_custom_tool_call_and_output() -> None:
    items = [
        {
            "type": "custom_tool_call",
            "call_id": "k1",
            "name": "sql",
            "input": "SELECT 1",
            "id": "ctc_1",
        },
        {"type": "custom_tool_call_output", "call_id": "k1", "output": "1"},
    ]
    assert messages(items) == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "k1", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
            ],
        },
        {"role": "tool", "tool_call_id": "k1", "content": "1"},
    ]


def test_chat_tool_output_parts_are_joined() -> None:
    value = [text("a"), text("b")]
    assert messages([call("c1"), output("c1", value)])[1]["content"] == "ab"


@pytest.mark.parametrize(
    ("value", "param", "code"),
    [
        (
            [text("a"), {"type": "input_image", "image_url": "u"}],
            "input[1].output[1].type",
            "unsupported_parameter",
        ),
        (
            [{"type": "input_file", "file_id": "f"}],
            "input[1].output[0].type",
            "unsupported_parameter",
        ),
        (42, "input[1].output", "invalid_value"),
        (None, "input[1].output", "invalid_value"),
        (["a"], "input[1].output[0]", "invalid_value"),
    ],
)
def test_chat_tool_output_refusals(value: Any, param: str, code: str) -> None:
    error = refusal(to_chat, None, [call("c1"), output("c1", value)])
    assert (error.param, kind(error.code)) == (param, kind(code))


@pytest.mark.parametrize(
    "items",
    [
        [output("nope")],
        [output("c1"), call("c1")],
        [call("c1"), output("c2")],
        [{"type": "custom_tool_call_output", "call_id": "x", "output": ""}],
    ],
)
def test_chat_output_without_its_call(items: list[dict[str, Any]]) -> None:
    error = refusal(to_chat, None, items)
    assert (error.param, error.code) == ("input", "tool_call_not_found")
    call_id = items[0]["call_id"] if items[0]["type"].endswith("output") else items[1]["call_id"]
    assert error.message == f"No tool call found for function call output with call_id {call_id!r}."


@pytest.mark.parametrize(
    ("item", "param", "code"),
    [
        (
            {"type": "function_call", "name": "f", "arguments": "{}"},
            "input[0].call_id",
            "invalid_value",
        ),
        (
            {"type": "function_call", "call_id": "c", "arguments": "{}"},
            "input[0].name",
            "invalid_value",
        ),
        (
            {"type": "function_call", "call_id": "c", "name": "f"},
            "input[0].arguments",
            "invalid_value",
        ),
        ({**call(), "arguments": {"a": 1}}, "input[0].arguments", "invalid_value"),
        ({**call(), "namespace": 3}, "input[0].namespace", "invalid_value"),
        ({**call(), "caller": {"type": "direct"}}, "input[0].caller", "unsupported_parameter"),
        ({**call(), "colour": 1}, "input[0].colour", "unknown_parameter"),
        (
            {"type": "custom_tool_call", "call_id": "c", "name": "f"},
            "input[0].input",
            "invalid_value",
        ),
    ],
)
def test_chat_call_refusals(item: dict[str, Any], param: str, code: str) -> None:
    error = refusal(to_chat, None, [item])
    assert (error.param, kind(error.code)) == (param, kind(code))


def test_chat_null_optional_fields_are_unset() -> None:
    item = {**call(), "namespace": None, "caller": None, "status": None, "id": None}
    assert messages([item])[0]["tool_calls"][0]["function"]["name"] == "f"


def test_chat_function_call_output_labels() -> None:
    items = [call("c1"), {**output("c1"), "name": "f", "namespace": None, "status": "completed"}]
    assert messages(items)[1] == {"role": "tool", "tool_call_id": "c1", "content": "42"}


# -- chat_request: reasoning ------------------------------------------------------------------
def test_chat_reasoning_goes_on_the_next_assistant_message() -> None:
    out = messages(
        [{"role": "user", "content": "q"}, reasoning("thought", id="rs_1"), assistant("a")]
    )
    assert out[1] == {"role": "assistant", "content": "a", "reasoning_content": "thought"}


def test_chat_reasoning_field_option() -> None:
    msg = one_message([reasoning("thought"), assistant("a")], reasoning_field="reasoning")
    assert msg == {"role": "assistant", "content": "a", "reasoning": "thought"}


def test_chat_reasoning_raw_text_wins_over_summary() -> None:
    msg = one_message([reasoning("summary", "raw"), assistant("a")])
    assert msg["reasoning_content"] == "raw"


def test_chat_reasoning_summaries_are_joined() -> None:
    item = {
        "type": "reasoning",
        "summary": [
            {"type": "summary_text", "text": "one"},
            {"type": "summary_text", "text": "two"},
        ],
    }
    assert one_message([item, assistant("a")])["reasoning_content"] == "one\n\ntwo"


def test_chat_reasoning_items_in_a_row_are_joined() -> None:
    msg = one_message([reasoning("one"), reasoning("two"), assistant("a")])
    assert msg["reasoning_content"] == "one\n\ntwo"


def test_chat_reasoning_before_calls_goes_on_the_call_message() -> None:
    out = messages([assistant("hm"), reasoning("plan"), call("c1"), output("c1")])
    assert out[0] == {"role": "assistant", "content": "hm"}
    assert out[1]["reasoning_content"] == "plan" and out[1]["content"] is None
    assert out[1]["tool_calls"][0]["id"] == "c1"


def test_chat_reasoning_at_the_end_belongs_to_nothing() -> None:
    assert messages([{"role": "user", "content": "q"}, reasoning("thought")]) == [
        {"role": "user", "content": "q"}
    ]


def test_chat_reasoning_followed_by_no_assistant_turn_gets_a_message() -> None:
    out = messages([reasoning("thought"), {"role": "user", "content": "q"}])
    assert out == [
        {"role": "assistant", "content": "", "reasoning_content": "thought"},
        {"role": "user", "content": "q"},
    ]


def test_chat_reasoning_with_text_and_encrypted_content() -> None:
    msg = one_message([reasoning("thought", encrypted_content="gAAAA"), assistant("a")])
    assert msg["reasoning_content"] == "thought"


def test_chat_empty_reasoning_is_nothing() -> None:
    assert one_message([reasoning(), assistant("a")]) == {"role": "assistant", "content": "a"}


def test_chat_encrypted_reasoning_is_refused() -> None:
    error = refusal(to_chat, None, [assistant("a"), reasoning(encrypted_content="gAAAA")])
    assert (error.param, error.code) == ("input[1].encrypted_content", "unsupported_parameter")


@pytest.mark.parametrize(
    ("item", "param"),
    [
        ({"type": "reasoning", "summary": "x"}, "input[0].summary"),
        (
            {"type": "reasoning", "summary": [{"type": "reasoning_text", "text": "x"}]},
            "input[0].summary[0].type",
        ),
        ({"type": "reasoning", "summary": [{"type": "summary_text"}]}, "input[0].summary[0].text"),
        (
            {
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "summary_text", "text": "x"}],
            },
            "input[0].content[0].type",
        ),
        ({"type": "reasoning", "summary": [], "colour": 1}, "input[0].colour"),
    ],
)
def test_chat_reasoning_item_refusals(item: dict[str, Any], param: str) -> None:
    assert chat_error(None, [item]) == param


# -- chat_request: compaction and other items ----------------------------------------------------
def test_chat_compaction_is_a_summary_message() -> None:
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": seal_summary("we met")}
    assert messages([item, {"role": "user", "content": "go on"}]) == [
        {"role": "system", "content": "Summary of the earlier conversation:\nwe met"},
        {"role": "user", "content": "go on"},
    ]


def test_chat_compaction_uses_the_developer_role() -> None:
    item = {"type": "compaction", "encrypted_content": seal_summary("s")}
    assert one_message([item], developer_role="developer")["role"] == "developer"


def test_chat_foreign_compaction_is_refused() -> None:
    items = [{"role": "user", "content": "q"}, {"type": "compaction", "encrypted_content": "gAAAA"}]
    error = refusal(to_chat, None, items)
    assert (error.param, error.code) == ("input[1].encrypted_content", "invalid_encrypted_content")


# Items of kinds no chat message holds, each with the fields the schemas require.
OTHER_ITEMS = {
    "item_reference": {"type": "item_reference", "id": "msg_1"},
    "web_search_call": {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "q"},
    },
    "file_search_call": {
        "type": "file_search_call",
        "id": "fs_1",
        "status": "completed",
        "queries": ["q"],
    },
    "code_interpreter_call": {
        "type": "code_interpreter_call",
        "id": "ci_1",
        "status": "completed",
        "container_id": "cntr_1",
        "code": "1",
        "outputs": [],
    },
    "image_generation_call": {
        "type": "image_generation_call",
        "id": "ig_1",
        "status": "completed",
        "result": None,
    },
    "mcp_call": {
        "type": "mcp_call",
        "id": "mcp_1",
        "server_label": "s",
        "name": "n",
        "arguments": "{}",
    },
    "mcp_list_tools": {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "s", "tools": []},
    "mcp_approval_request": {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "server_label": "s",
        "name": "n",
        "arguments": "{}",
    },
    "mcp_approval_response": {
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_1",
        "approve": True,
    },
    "program": {"type": "program", "id": "prog_1", "call_id": "c", "code": "1", "fingerprint": "f"},
}


@pytest.mark.parametrize("kind", sorted(OTHER_ITEMS))
def test_chat_other_items_are_refused(kind: str) -> None:
    error = refusal(to_chat, None, [{"role": "user", "content": "q"}, OTHER_ITEMS[kind]])
    assert (error.param, error.code) == ("input[1].type", "unsupported_parameter")


def test_chat_context_len_names_input_from_this_turn() -> None:
    context = normalize_input([{"role": "user", "content": "q"}, assistant("a")])
    body = {"model": "m"}
    bad = normalize_input([{"type": "web_search_call"}])
    error = refusal(translate, body, [*context, *bad], context_len=len(context))
    assert error.param == "input[0].type"


def test_chat_context_len_names_previous_response_for_context_items() -> None:
    context = [{"type": "web_search_call", "id": "ws_1"}]
    error = refusal(translate, {"model": "m"}, [*context, *normalize_input("hi")], context_len=1)
    assert (error.param, error.code) == ("previous_response_id", "unsupported_parameter")


def test_chat_outputs_answer_calls_from_the_context() -> None:
    context = [{**call("c1"), "id": "fc_1", "status": "completed"}]
    items = [*context, output("c1")]
    out = translate({"model": "m"}, items, context_len=1).body
    assert [m["role"] for m in out["messages"]] == ["assistant", "tool"]


def test_chat_does_not_mutate_its_arguments() -> None:
    body = {
        "model": "m",
        "tools": [{"type": "function", "name": "f", "parameters": WEATHER_PARAMS}],
    }
    items = normalize_input([{"role": "user", "content": "q"}, call("c1"), output("c1")])
    before = copy.deepcopy((body, items))
    out = translate(body, items).body
    out["tools"][0]["function"]["parameters"]["x"] = 1
    assert (body, items) == before


# -- responses_request: the body ----------------------------------------------------------------
def to_responses(body: Mapping[str, Any] | None = None, msgs: Any = None) -> dict[str, Any]:
    """The Responses body for a chat body, checked first as the gateway checks it."""
    full = {"model": "m", "messages": CHAT_HI if msgs is None else msgs, **(body or {})}
    check_request(full, "chat")
    return responses_request(full)


def responses_error(body: Mapping[str, Any] | None = None, msgs: Any = None) -> str | None:
    return refusal(to_responses, body, msgs).param


def input_of(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = to_responses(None, msgs)["input"]
    return out


def test_responses_minimal() -> None:
    assert to_responses() == {
        "model": "m",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
        ],
        "stream": True,
    }


def test_responses_model_missing() -> None:
    error = refusal(check_request, {"messages": CHAT_HI}, "chat")
    assert (error.param, error.code) == ("model", "missing_required_parameter")


@pytest.mark.parametrize("model", ["", 1])
def test_responses_model_bad(model: Any) -> None:
    assert refusal(check_request, {"model": model, "messages": CHAT_HI}, "chat").param == "model"


def test_responses_messages_missing() -> None:
    error = refusal(check_request, {"model": "m"}, "chat")
    assert (error.param, error.code) == ("messages", "missing_required_parameter")


@pytest.mark.parametrize(
    ("msgs", "param"), [([], "messages"), ("hi", "messages"), (["hi"], "messages[0]")]
)
def test_responses_messages_bad(msgs: Any, param: str) -> None:
    assert responses_error(None, msgs) == param


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("temperature", 0.2),
        ("top_p", 1),
        ("parallel_tool_calls", True),
        ("user", "u"),
        ("metadata", {"a": "b"}),
        ("store", False),
        ("presence_penalty", 0.5),
        ("frequency_penalty", -0.5),
        ("prompt_cache_key", "k"),
        ("prompt_cache_retention", "in_memory"),
        ("safety_identifier", "s"),
        ("service_tier", "priority"),
    ],
)
def test_responses_passed_fields(name: str, value: Any) -> None:
    assert to_responses({name: value}) == {**to_responses(), name: value}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("temperature", "x"),
        ("top_p", False),
        ("parallel_tool_calls", 1),
        ("user", 1),
        ("metadata", {"a": 1}),
        ("store", "yes"),
        ("presence_penalty", "1"),
        ("frequency_penalty", []),
        ("prompt_cache_key", 1),
        ("prompt_cache_retention", 24),
        ("safety_identifier", {}),
        ("service_tier", 1),
        ("max_tokens", "9"),
        ("reasoning_effort", 1),
        ("verbosity", 1),
        ("response_format", "json"),
        ("tools", {}),
        ("tool_choice", "sometimes"),
        ("n", 0),
        ("n", "1"),
        ("logprobs", "yes"),
        ("top_logprobs", -1),
        ("modalities", "text"),
        ("stream_options", []),
    ],
)
def test_responses_bad_values(name: str, value: Any) -> None:
    assert responses_error({name: value}) == name


@pytest.mark.parametrize(
    "fields",
    [
        {"stream": True},
        {"stream": False},
        {"stream_options": {"include_usage": True}},
        {"stream_options": {"include_obfuscation": False}},
        {"n": 1},
        {"logprobs": False},
        {"top_logprobs": 0},
        {"top_logprobs": 3},  # without logprobs: true, nothing is asked for
        {"modalities": ["text"]},
        {"stop": None},
        {"seed": None},
        {"functions": None},
    ],
)
def test_responses_fields_with_no_effect(fields: dict[str, Any]) -> None:
    assert to_responses(fields) == to_responses()


def test_responses_logprobs_are_asked_for() -> None:
    out = to_responses({"logprobs": True, "top_logprobs": 3})
    assert (out["include"], out["top_logprobs"]) == (["message.output_text.logprobs"], 3)
    assert to_responses({"top_logprobs": 2, "logprobs": True})["top_logprobs"] == 2
    assert "top_logprobs" not in to_responses({"logprobs": True})


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"n": 2}, "n", "unsupported_parameter"),
        ({"stop": ["END"]}, "stop", "unsupported_parameter"),
        ({"stop": "END"}, "stop", "unsupported_parameter"),
        ({"seed": 7}, "seed", "unsupported_parameter"),
        ({"logit_bias": {"50256": -100}}, "logit_bias", "unsupported_parameter"),
        ({"logprobs": True, "top_logprobs": 21}, "top_logprobs", "invalid_value"),
        ({"modalities": ["text", "audio"]}, "modalities[1]", "unsupported_parameter"),
        ({"audio": {"voice": "alloy", "format": "mp3"}}, "audio", "unsupported_parameter"),
        (
            {"prediction": {"type": "content", "content": "x"}},
            "prediction",
            "unsupported_parameter",
        ),
        ({"web_search_options": {}}, "web_search_options", "unsupported_parameter"),
        ({"functions": [{"name": "f"}]}, "functions", "unsupported_parameter"),
        ({"function_call": "auto"}, "function_call", "unsupported_parameter"),
        ({"colour": "red"}, "colour", "unknown_parameter"),
        ({"input": "hi"}, "input", "unknown_parameter"),
        ({"stream_options": {"colour": 1}}, "stream_options.colour", "unknown_parameter"),
        (
            {"stream_options": {"include_usage": "y"}},
            "stream_options.include_usage",
            "invalid_value",
        ),
    ],
)
def test_responses_refused_fields(fields: dict[str, Any], param: str, code: str) -> None:
    error = refusal(to_responses, fields)
    assert (error.param, kind(error.code)) == (param, kind(code))


@pytest.mark.parametrize(
    "fields",
    [
        {"max_completion_tokens": 100},
        {"max_tokens": 100},
        {"max_tokens": 100, "max_completion_tokens": 100},
    ],
)
def test_responses_max_output_tokens(fields: dict[str, Any]) -> None:
    assert to_responses(fields) == {**to_responses(), "max_output_tokens": 100}


def test_responses_max_tokens_that_differ() -> None:
    error = refusal(to_responses, {"max_tokens": 10, "max_completion_tokens": 20})
    assert error.param == "max_tokens"


def test_responses_reasoning_effort() -> None:
    assert to_responses({"reasoning_effort": "low"})["reasoning"] == {"effort": "low"}


@pytest.mark.parametrize("kind", ["text", "json_object"])
def test_responses_simple_formats(kind: str) -> None:
    out = to_responses({"response_format": {"type": kind}})
    assert out["text"] == {"format": {"type": kind}}


def test_responses_json_schema_is_unwrapped() -> None:
    spec = {"name": "thing", "schema": WEATHER_PARAMS, "strict": True, "description": "d"}
    out = to_responses({"response_format": {"type": "json_schema", "json_schema": spec}})
    assert out["text"] == {
        "format": {
            "type": "json_schema",
            "name": "thing",
            "schema": WEATHER_PARAMS,
            "strict": True,
            "description": "d",
        }
    }


def test_responses_verbosity_and_format_share_text() -> None:
    out = to_responses({"verbosity": "high", "response_format": {"type": "json_object"}})
    assert out["text"] == {"verbosity": "high", "format": {"type": "json_object"}}


@pytest.mark.parametrize(
    ("fmt", "param"),
    [
        ({"type": "grammar"}, "response_format.type"),
        ({"type": "json_schema"}, "response_format.json_schema"),
        (
            {"type": "json_schema", "json_schema": {"schema": {}}},
            "response_format.json_schema.name",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "n", "schema": 1}},
            "response_format.json_schema.schema",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "n", "strict": 1}},
            "response_format.json_schema.strict",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "n", "x": 1}},
            "response_format.json_schema.x",
        ),
        ({"type": "text", "x": 1}, "response_format.x"),
    ],
)
def test_responses_format_refusals(fmt: dict[str, Any], param: str) -> None:
    assert responses_error({"response_format": fmt}) == param


# -- responses_request: tools -----------------------------------------------------------------
def test_responses_function_tool() -> None:
    tool = {
        "type": "function",
        "function": {"name": "w", "description": "d", "parameters": WEATHER_PARAMS, "strict": True},
    }
    assert to_responses({"tools": [tool]})["tools"] == [
        {
            "type": "function",
            "name": "w",
            "description": "d",
            "parameters": WEATHER_PARAMS,
            "strict": True,
        }
    ]


def test_responses_function_tool_defaults_are_chat_defaults() -> None:
    tool = {"type": "function", "function": {"name": "w"}}
    assert to_responses({"tools": [tool]})["tools"] == [
        {
            "type": "function",
            "name": "w",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        }
    ]


def test_responses_custom_tool() -> None:
    grammar = {"type": "grammar", "grammar": {"definition": "start: /x/", "syntax": "lark"}}
    tools = [
        {"type": "custom", "custom": {"name": "c", "description": "d", "format": {"type": "text"}}},
        {"type": "custom", "custom": {"name": "g", "format": grammar}},
    ]
    assert to_responses({"tools": tools})["tools"] == [
        {"type": "custom", "name": "c", "description": "d", "format": {"type": "text"}},
        {
            "type": "custom",
            "name": "g",
            "format": {"type": "grammar", "definition": "start: /x/", "syntax": "lark"},
        },
    ]


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        ({"type": "web_search"}, "tools[0].type"),
        ({"type": "function"}, "tools[0].function"),
        ({"type": "function", "function": {}}, "tools[0].function.name"),
        (
            {"type": "function", "function": {"name": "f", "parameters": []}},
            "tools[0].function.parameters",
        ),
        (
            {"type": "function", "function": {"name": "f", "strict": "y"}},
            "tools[0].function.strict",
        ),
        ({"type": "function", "function": {"name": "f", "x": 1}}, "tools[0].function.x"),
        ({"type": "function", "function": {"name": "f"}, "x": 1}, "tools[0].x"),
        (
            {"type": "custom", "custom": {"name": "c", "format": {"type": "regex"}}},
            "tools[0].custom.format.type",
        ),
        (
            {
                "type": "custom",
                "custom": {
                    "name": "c",
                    "format": {"type": "grammar", "grammar": {"syntax": "lark"}},
                },
            },
            "tools[0].custom.format.grammar.definition",
        ),
    ],
)
def test_responses_tool_refusals(tool: dict[str, Any], param: str) -> None:
    assert responses_error({"tools": [tool]}) == param


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ({"type": "function", "function": {"name": "f"}}, {"type": "function", "name": "f"}),
        ({"type": "custom", "custom": {"name": "c"}}, {"type": "custom", "name": "c"}),
        (
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "auto",
                    "tools": [
                        {"type": "function", "function": {"name": "f"}},
                        {"type": "custom", "custom": {"name": "c"}},
                    ],
                },
            },
            {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [{"type": "function", "name": "f"}, {"type": "custom", "name": "c"}],
            },
        ),
    ],
)
def test_responses_tool_choice(choice: Any, expected: Any) -> None:
    assert to_responses({"tool_choice": choice})["tool_choice"] == expected


@pytest.mark.parametrize(
    ("choice", "param"),
    [
        ({"type": "file_search"}, "tool_choice.type"),
        ({"type": "function"}, "tool_choice.function"),
        ({"type": "function", "function": {}}, "tool_choice.function.name"),
        ({"type": "function", "name": "f"}, "tool_choice.name"),
        (
            {"type": "allowed_tools", "allowed_tools": {"tools": []}},
            "tool_choice.allowed_tools.mode",
        ),
        (
            {
                "type": "allowed_tools",
                "allowed_tools": {"mode": "auto", "tools": [{"type": "mcp"}]},
            },
            "tool_choice.allowed_tools.tools[0].type",
        ),
    ],
)
def test_responses_tool_choice_refusals(choice: Any, param: str) -> None:
    assert responses_error({"tool_choice": choice}) == param


# -- responses_request: messages ---------------------------------------------------------------
@pytest.mark.parametrize("role", ["system", "developer"])
def test_responses_system_messages_stay_in_place(role: str) -> None:
    msgs = [
        {"role": "user", "content": "a"},
        {"role": role, "content": [{"type": "text", "text": "s"}]},
    ]
    out = to_responses(None, msgs)
    assert "instructions" not in out
    assert out["input"][1] == {
        "type": "message",
        "role": role,
        "content": [{"type": "input_text", "text": "s"}],
    }


def test_responses_user_parts() -> None:
    content = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        {"type": "image_url", "image_url": {"url": "https://x/z.png", "detail": "low"}},
        {"type": "file", "file": {"file_id": "file-1"}},
        {
            "type": "file",
            "file": {"file_data": "data:application/pdf;base64,AA", "filename": "a.pdf"},
        },
    ]
    assert input_of([{"role": "user", "content": content}]) == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"},
                {"type": "input_image", "image_url": "https://x/z.png", "detail": "low"},
                {"type": "input_file", "file_id": "file-1"},
                {
                    "type": "input_file",
                    "file_data": "data:application/pdf;base64,AA",
                    "filename": "a.pdf",
                },
            ],
        }
    ]


@pytest.mark.parametrize(
    ("msg", "param", "code"),
    [
        (
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "a"},
                    {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}},
                ],
            },
            "messages[0].content[1].type",
            "unsupported_parameter",
        ),
        (  # chat's system messages hold text parts only
            {"role": "system", "content": [{"type": "image_url", "image_url": {"url": "u"}}]},
            "messages[0].content[0].type",
            "invalid_value",
        ),
        (
            {"role": "user", "content": [{"type": "refusal", "refusal": "no"}]},
            "messages[0].content[0].type",
            "invalid_value",
        ),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
            "messages[0].content[0].image_url.url",
            "invalid_value",
        ),
        (
            {"role": "user", "content": [{"type": "file", "file": {"filename": "a"}}]},
            "messages[0].content[0].file.file_data",
            "invalid_value",
        ),
        (
            {
                "role": "user",
                "content": [
                    {
                        "type": "file",
                        "file": {"file_id": "f"},
                        "prompt_cache_breakpoint": {"mode": "explicit"},
                    }
                ],
            },
            "messages[0].content[0].prompt_cache_breakpoint",
            "unsupported_parameter",
        ),
        (
            {"role": "user", "content": [{"type": "text"}]},
            "messages[0].content[0].text",
            "invalid_value",
        ),
        ({"role": "user"}, "messages[0].content", "invalid_value"),
        ({"role": "user", "content": 3}, "messages[0].content", "invalid_value"),
        (
            {"role": "user", "content": "a", "name": "bob"},
            "messages[0].name",
            "unsupported_parameter",
        ),
        (
            {"role": "system", "content": "a", "name": "bob"},
            "messages[0].name",
            "unsupported_parameter",
        ),
        ({"role": "user", "content": "a", "colour": 1}, "messages[0].colour", "unknown_parameter"),
        (
            {"role": "function", "name": "f", "content": "x"},
            "messages[0].role",
            "unsupported_parameter",
        ),
        ({"role": "robot", "content": "x"}, "messages[0].role", "invalid_value"),
        ({"content": "x"}, "messages[0].role", "invalid_value"),
        ({"role": "tool", "content": "x"}, "messages[0].tool_call_id", "invalid_value"),
        (
            {
                "role": "tool",
                "tool_call_id": "c",
                "content": [{"type": "image_url", "image_url": {"url": "u"}}],
            },
            "messages[0].content[0].type",
            "invalid_value",
        ),
        ({"role": "assistant"}, "messages[0].content", "invalid_value"),
        (
            {"role": "assistant", "content": "a", "audio": {"id": "a1"}},
            "messages[0].audio",
            "unsupported_parameter",
        ),
        (
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "f", "arguments": "{}"},
            },
            "messages[0].function_call",
            "unsupported_parameter",
        ),
        (
            {"role": "assistant", "content": "a", "reasoning": "x", "reasoning_content": "y"},
            "messages[0].reasoning",
            "invalid_value",
        ),
        (
            {"role": "assistant", "content": "a", "tool_calls": {}},
            "messages[0].tool_calls",
            "invalid_value",
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            "messages[0].tool_calls[0].id",
            "invalid_value",
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}],
            },
            "messages[0].tool_calls[0].function.arguments",
            "invalid_value",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "mcp"}]},
            "messages[0].tool_calls[0].type",
            "invalid_value",
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "f"}}],
            },
            "messages[0].tool_calls[0].custom.input",
            "invalid_value",
        ),
    ],
)
def test_responses_message_refusals(msg: dict[str, Any], param: str, code: str) -> None:
    error = refusal(to_responses, None, [msg])
    assert (error.param, kind(error.code)) == (param, kind(code))


def new_id(item: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``item`` without its ``id``, once that is checked to be a new one of ``prefix``."""
    assert re.fullmatch(re.escape(prefix) + "[0-9a-f]{32}", item.pop("id"))
    return item


def test_responses_assistant_message() -> None:
    [message] = input_of([{"role": "assistant", "content": "hello"}])
    assert new_id(message, "msg_") == {
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "hello", "annotations": []}],
    }


def test_responses_assistant_parts_and_refusal() -> None:
    msg = {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "b"}],
        "refusal": "c",
    }
    assert input_of([msg])[0]["content"] == [
        {"type": "output_text", "text": "a", "annotations": []},
        {"type": "refusal", "refusal": "b"},
        {"type": "refusal", "refusal": "c"},
    ]


def test_responses_assistant_refusal_only() -> None:
    [message] = input_of([{"role": "assistant", "content": None, "refusal": "no"}])
    assert message["content"] == [{"type": "refusal", "refusal": "no"}]


def test_responses_empty_assistant_message_is_kept() -> None:
    assert input_of([{"role": "assistant", "content": ""}])[0]["content"] == [
        {"type": "output_text", "text": "", "annotations": []}
    ]


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_responses_assistant_reasoning_then_message_then_calls(key: str) -> None:
    msg = {
        "role": "assistant",
        "content": "checking",
        key: "I should call f",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
            {"id": "c2", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}},
        ],
    }
    [thought, message, fn, custom] = input_of([msg])
    assert new_id(thought, "rs_") == {
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "I should call f"}],
    }
    assert new_id(message, "msg_") == {
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "checking", "annotations": []}],
    }
    assert fn == {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a":1}'}
    assert custom == {
        "type": "custom_tool_call",
        "call_id": "c2",
        "name": "sql",
        "input": "SELECT 1",
    }


def test_responses_same_reasoning_twice_is_one_item() -> None:
    msg = {"role": "assistant", "content": "a", "reasoning": "r", "reasoning_content": "r"}
    assert [i["type"] for i in input_of([msg])] == ["reasoning", "message"]


@pytest.mark.parametrize("content", ["", None])
def test_responses_empty_content_with_tool_calls_is_no_message(content: Any) -> None:
    msg = {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    assert [i["type"] for i in input_of([msg])] == ["function_call"]


def test_responses_tool_messages() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {
            "role": "tool",
            "tool_call_id": "c2",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        },
    ]
    assert input_of(msgs) == [
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "c2", "output": "ab"},
    ]


def test_responses_does_not_mutate_its_argument() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "q"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": WEATHER_PARAMS}}],
    }
    before = copy.deepcopy(body)
    responses_request(body)["tools"][0]["parameters"]["x"] = 1
    assert body == before


# -- the shapes real servers expect -------------------------------------------------------------
RICH_CONTEXT: list[dict[str, Any]] = [
    {"role": "developer", "content": "be brief"},
    {
        "role": "user",
        "content": [
            text("what is this?"),
            {"type": "input_image", "image_url": "https://x/y.png", "detail": "low"},
            {
                "type": "input_file",
                "file_data": "data:application/pdf;base64,AA",
                "filename": "a.pdf",
            },
        ],
    },
    reasoning("let me look"),
    {**assistant("looking"), "id": "msg_1", "status": "completed", "phase": "commentary"},
    {**call("c1", "weather", '{"city":"Paris"}'), "id": "fc_1", "status": "completed"},
    {"type": "custom_tool_call", "call_id": "c2", "name": "sql", "input": "SELECT 1"},
    output("c1", "sunny"),
    {"type": "custom_tool_call_output", "call_id": "c2", "output": [text("1")]},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
    {"type": "compaction", "encrypted_content": seal_summary("earlier")},
    {"role": "user", "content": "and now?"},
]
RICH_RESPONSES_BODY: dict[str, Any] = {
    "model": "m",
    "instructions": "you are terse",
    "temperature": 0.3,
    "top_p": 0.9,
    "max_output_tokens": 256,
    "parallel_tool_calls": True,
    "metadata": {"k": "v"},
    "user": "u",
    "prompt_cache_key": "pk",
    "safety_identifier": "sid",
    "service_tier": "auto",
    "reasoning": {"effort": "low", "summary": "auto"},
    "text": {
        "format": {"type": "json_schema", "name": "r", "schema": WEATHER_PARAMS, "strict": False},
        "verbosity": "low",
    },
    "tools": [
        {"type": "function", "name": "weather", "parameters": WEATHER_PARAMS, "description": "d"},
        {
            "type": "custom",
            "name": "sql",
            "format": {"type": "grammar", "syntax": "regex", "definition": ".*"},
        },
    ],
    "tool_choice": {
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [{"type": "function", "name": "weather"}],
    },
}
RICH_CHAT_BODY: dict[str, Any] = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "s"},
        {"role": "developer", "content": [{"type": "text", "text": "d"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "q"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "high"}},
                {
                    "type": "file",
                    "file": {"file_data": "data:application/pdf;base64,AA", "filename": "a.pdf"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": "checking",
            "reasoning_content": "think",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": None, "refusal": "no"},
        {"role": "user", "content": "thanks"},
    ],
    "stream": True,
    "stream_options": {"include_usage": True},
    "temperature": 0.5,
    "max_completion_tokens": 100,
    "reasoning_effort": "medium",
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "r", "schema": WEATHER_PARAMS, "strict": True},
    },
    "verbosity": "medium",
    "tools": [{"type": "function", "function": {"name": "weather", "parameters": WEATHER_PARAMS}}],
    "tool_choice": {"type": "function", "function": {"name": "weather"}},
    "parallel_tool_calls": False,
    "metadata": {"k": "v"},
    "store": False,
    "user": "u",
}


def test_chat_output_is_an_sdk_chat_request() -> None:
    body = translate(RICH_RESPONSES_BODY, normalize_input(RICH_CONTEXT)).body
    assert [m["role"] for m in body["messages"]] == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "system",
        "user",
    ]
    assert sdk_errors(CompletionCreateParamsStreaming, body) == []


def test_responses_output_is_an_sdk_responses_request() -> None:
    body = responses_request(RICH_CHAT_BODY)
    assert [i["type"] for i in body["input"]][3:6] == ["reasoning", "message", "function_call"]
    assert sdk_errors(ResponseCreateParamsStreaming, body) == []


def test_responses_custom_tools_are_sdk_shaped() -> None:
    chat_body = {
        **RICH_CHAT_BODY,
        "tools": [
            {
                "type": "custom",
                "custom": {
                    "name": "g",
                    "format": {
                        "type": "grammar",
                        "grammar": {"definition": ".*", "syntax": "regex"},
                    },
                },
            }
        ],
        "tool_choice": {"type": "custom", "custom": {"name": "g"}},
    }
    assert sdk_errors(ResponseCreateParamsStreaming, responses_request(chat_body)) == []


def test_sdk_check_catches_a_bad_shape() -> None:
    body = translate({"model": "m"}, normalize_input("hi")).body
    body["messages"][0]["content"] = [{"type": "input_text", "text": "hi"}]
    assert sdk_errors(CompletionCreateParamsStreaming, body)


def open_responses_errors(instance: Any) -> list[str]:
    doc = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/CreateResponseBody", "components": doc["components"]}
    )
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(instance)
    ]


def test_responses_output_is_an_open_responses_request() -> None:
    # Open Responses reasoning items take no raw ``content`` (it must be null), so the
    # reasoning turn is left out here; the SDK test above covers it.
    msgs = [m for m in RICH_CHAT_BODY["messages"] if "reasoning_content" not in m]
    msgs.insert(
        3,
        {
            "role": "assistant",
            "content": "checking",
            "tool_calls": RICH_CHAT_BODY["messages"][3]["tool_calls"],
        },
    )
    body = responses_request({**RICH_CHAT_BODY, "messages": msgs})
    assert open_responses_errors(body) == []


@pytest.mark.parametrize(
    ("item", "param"),
    [
        ({"type": ["message"]}, "input[0].type"),
        ({"type": "message", "role": ["user"], "content": []}, "input[0].role"),
        (
            {"type": "message", "role": "user", "content": [{"type": {}}]},
            "input[0].content[0].type",
        ),
        (
            {"type": "message", "role": "user", "content": {"type": "input_text"}},
            "input[0].content",
        ),
        ("message", "input[0]"),
    ],
)
def test_chat_unnormalized_items_with_bad_shapes(item: Any, param: str) -> None:
    assert refusal(check_request, {"model": "m", "input": [item]}, "responses").param == param


@pytest.mark.parametrize(
    ("msg", "param"),
    [
        ({"role": ["user"], "content": "x"}, "messages[0].role"),
        ({"role": "user", "content": [{"type": ["text"]}]}, "messages[0].content[0].type"),
    ],
)
def test_responses_unhashable_values(msg: Any, param: str) -> None:
    assert responses_error(None, [msg]) == param


def test_a_server_run_tool_search_without_call_ids_is_paired_in_order() -> None:
    """A tool_search_call and its output may both lack call_id (the server ran the
    search); the chat upstream gets a call and the tool message that answers it
    (found by schema fuzzing: it was a 500)."""
    items = [
        {"type": "tool_search_call", "id": "ts_1", "arguments": {"q": "x"}},
        {"type": "tool_search_output", "id": "tso_1", "tools": []},
        {"role": "user", "content": "go on"},
    ]
    call, answer, _ = messages(items)
    assert call["tool_calls"][0]["id"] == answer["tool_call_id"] == "call_ts_1"
    assert call["tool_calls"][0]["function"] == {"name": "tool_search", "arguments": '{"q": "x"}'}
    assert answer["content"] == '{"tools": []}'


def test_a_chat_custom_tool_with_a_null_format() -> None:
    """``format: null`` on a chat custom tool is no format (found by schema fuzzing: it
    was a 500)."""
    tool = {"type": "custom", "custom": {"name": "patch", "format": None}}
    assert to_responses({"tools": [tool]})["tools"] == [
        {"type": "custom", "name": "patch", "format": None}
    ]
