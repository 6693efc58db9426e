"""Requests checked against the schemas (spec/requests/, over the vendored documents).

A request OpenAI's API refuses for a bound its schema states (a range, an enum, a key
or length limit, a required or unknown key, a type) is refused by the gateway with a
400 that names the field's path, read here through the strict openai SDK over real
HTTP; the bodies real clients sent are still accepted, on both dialects' routes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from gateway_support import gw, sdk, upstream  # noqa: F401  (fixtures)

from responses_stream._requests import MODELS, ROUTES
from responses_stream._runtime.gateway.errors import GatewayError
from responses_stream._runtime.gateway.request_check import check_request, schema_error

CLIENTS = Path(__file__).resolve().parent / "recordings" / "client-requests"
WEATHER = {
    "type": "function",
    "name": "weather",
    "parameters": {"type": "object", "properties": {}},
    "strict": False,
}
HI = "hi"

# (extra create arguments, the param named, the code)
REFUSED: list[tuple[dict[str, Any], str, str]] = [
    ({"temperature": 9}, "temperature", "decimal_above_max_value"),
    ({"top_p": -1}, "top_p", "decimal_below_min_value"),
    ({"reasoning": {"effort": "extreme"}}, "reasoning.effort", "invalid_value"),
    ({"service_tier": "platinum"}, "service_tier", "invalid_value"),
    ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata", "object_above_max_properties"),
    ({"metadata": {"k": "v" * 513}}, "metadata", "string_above_max_length"),
    ({"max_output_tokens": 5}, "max_output_tokens", "integer_below_min_value"),
    ({"top_logprobs": 21}, "top_logprobs", "integer_above_max_value"),
    ({"temperature": "warm"}, "temperature", "invalid_type"),
    ({"reasoning": {"effort": "low", "colour": 1}}, "reasoning.colour", "unknown_parameter"),
    ({"truncation": "sometimes"}, "truncation", "invalid_value"),
    ({"include": ["everything"]}, "include[0]", "invalid_value"),
    ({"tool_choice": "sometimes"}, "tool_choice", "invalid_value"),
    (
        {"tools": [WEATHER], "tool_choice": {"type": "function", "name": "lookup"}},
        "tool_choice",
        "invalid_value",
    ),
    (
        {
            "tools": [
                {
                    "type": "namespace",
                    "name": "n",
                    "description": "d",
                    "tools": [{**WEATHER, "name": "a b"}],
                }
            ]
        },
        "tools[0].tools[0].name",
        "invalid_value",
    ),
    (
        {
            "input": [
                {"role": "user", "content": HI},
                {"role": "assistant", "content": HI},
                {"role": "user", "content": [{"type": "input_text", "text": 5}]},
            ]
        },
        "input[2].content[0].text",
        "invalid_type",
    ),
    (
        {"input": [{"type": "message", "role": "user"}]},
        "input[0].content",
        "missing_required_parameter",
    ),
    ({"input": [{"type": "bogus"}]}, "input[0].type", "invalid_value"),
]


@pytest.mark.parametrize(("extra", "param", "code"), REFUSED)
def test_a_request_the_schemas_bound_is_refused_naming_the_field(
    gw: str,  # noqa: F811
    extra: dict[str, Any],
    param: str,
    code: str,
) -> None:
    client = sdk(gw)
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(**{"model": "fake-model", "input": HI, **extra})
    error = caught.value
    assert (error.status_code, error.param, error.code) == (400, param, code)


@pytest.mark.parametrize("name", sorted(p.stem for p in CLIENTS.glob("*.json")))
def test_every_client_body_fits_the_request_model(name: str) -> None:
    body = json.loads((CLIENTS / f"{name}.json").read_text(encoding="utf-8"))
    for transport in ("type", "generate"):  # WebSocket message fields, taken off before
        body.pop(transport, None)
    assert isinstance(check_request(body, "responses"), MODELS["responses"])


@pytest.mark.parametrize("prefix", ["/v1", "/openresponses/v1"])
def test_a_bounded_value_is_refused_on_both_dialects(gw: str, prefix: str) -> None:  # noqa: F811
    body = {"model": "fake-model", "input": HI, "temperature": 9}
    answer = httpx.post(gw + prefix + "/responses", json=body, timeout=30)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "temperature"


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/responses/compact"])
def test_an_empty_model_is_an_invalid_value_not_a_missing_one(gw: str, path: str) -> None:  # noqa: F811
    answer = httpx.post(gw + path, json={"model": "", "input": HI}, timeout=30)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "model" and error["code"] == "string_below_min_length"
    assert "missing" not in error["message"].lower()


@pytest.mark.parametrize("prefix", ["/v1", "/openresponses/v1"])
def test_a_message_without_a_type_is_taken_on_both_dialects(gw: str, prefix: str) -> None:  # noqa: F811
    body = {"model": "fake-model", "input": [{"role": "user", "content": HI}]}
    answer = httpx.post(gw + prefix + "/responses", json=body, timeout=30)
    assert answer.status_code == 200, answer.text


def test_a_refused_field_takes_the_values_its_row_allows() -> None:
    assert ROUTES["chat"]["fields"]["n"]["allow"] == [1]
    messages = [{"role": "user", "content": HI}]
    check_request({"model": "m", "messages": messages, "n": 1}, "chat")
    with pytest.raises(GatewayError) as caught:
        check_request({"model": "m", "messages": messages, "n": 2}, "chat")
    assert caught.value.param == "n"


def test_an_item_reference_may_leave_its_type_out() -> None:
    check_request({"model": "m", "input": [{"id": "msg_1"}]}, "responses")


@pytest.mark.parametrize(
    ("message", "param", "code"),
    [
        ("Expected `float` <= 2.0 - at `$.temperature`", "temperature", "decimal_above_max_value"),
        ("Object contains unknown field `colour`", "colour", "unknown_parameter"),
        (
            "Object missing required field `text` - at `$.input[0].content[1]`",
            "input[0].content[1].text",
            "missing_required_parameter",
        ),
        (
            "Expected `str` of length <= 512 - at `$.metadata[...]`",
            "metadata",
            "string_above_max_length",
        ),
        ("Invalid enum value 'x' - at `$.a.b`", "a.b", "invalid_value"),
    ],
)
def test_schema_errors_name_the_path_in_openai_words(message: str, param: str, code: str) -> None:
    error = schema_error(message)
    assert (error.status, error.param, error.code) == (400, param, code)


CHAT_HI = [{"role": "user", "content": HI}]
CHAT_REFUSED: list[tuple[dict[str, Any], str, str]] = [
    ({"temperature": 9}, "temperature", "decimal_above_max_value"),
    ({"reasoning_effort": "extreme"}, "reasoning_effort", "invalid_value"),
    ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata", "object_above_max_properties"),
    ({"n": 2}, "n", "unsupported_parameter"),
    ({"seed": 1}, "seed", "unsupported_parameter"),
    ({"messages": [{"role": "user"}]}, "messages[0].content", "missing_required_parameter"),
    ({"messages": [{"role": "wizard", "content": HI}]}, "messages[0].role", "invalid_value"),
    ({"messages": []}, "messages", "array_below_min_length"),
]


@pytest.mark.parametrize(("extra", "param", "code"), CHAT_REFUSED)
def test_a_chat_request_the_schemas_bound_is_refused_naming_the_field(
    gw: str,  # noqa: F811
    extra: dict[str, Any],
    param: str,
    code: str,
) -> None:
    client = sdk(gw)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(**{"model": "fake-model", "messages": CHAT_HI, **extra})
    error = caught.value
    assert (error.status_code, error.param, error.code) == (400, param, code)


def test_a_chat_refused_field_takes_the_values_its_row_allows() -> None:
    for fields in ({"n": 1}, {"modalities": ["text"]}, {"seed": None}):
        check_request({"model": "m", "messages": CHAT_HI, **fields}, "chat")


def test_a_chat_assistant_turn_may_carry_its_reasoning() -> None:
    turn = {"role": "assistant", "content": "4", "reasoning_content": "2 and 2"}
    check_request({"model": "m", "messages": [*CHAT_HI, turn, *CHAT_HI]}, "chat")


HTTP_BODIES = sorted(
    p.stem
    for p in CLIENTS.glob("*.json")
    if "item_reference" not in p.read_text(encoding="utf-8")  # those name a stored item
)


@pytest.mark.parametrize("prefix", ["/v1", "/openresponses/v1"])
@pytest.mark.parametrize("name", HTTP_BODIES)
def test_every_client_body_is_answered_on_both_dialects(
    gw: str,  # noqa: F811
    name: str,
    prefix: str,
) -> None:
    body = json.loads((CLIENTS / f"{name}.json").read_text(encoding="utf-8"))
    for transport in ("type", "generate"):  # WebSocket message fields, taken off before
        body.pop(transport, None)
    answer = httpx.post(gw + prefix + "/responses", json=body, timeout=30)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    "item",
    [
        {
            "type": "custom_tool_call",
            "id": "ctc_1",
            "call_id": "c1",
            "name": "apply_patch",
            "input": "*** Begin Patch",
            "status": "completed",
        },
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok", "status": "completed"},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "x", "status": "completed"},
    ],
)
def test_an_item_the_gateway_gave_is_taken_back(item: dict[str, Any]) -> None:
    """Clients send back the items they were given (Codex its custom tool calls), status
    and all, though the document does not declare it on these kinds."""
    check_request({"model": "m", "input": [{"role": "user", "content": HI}, item]}, "responses")
