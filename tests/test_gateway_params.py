"""Every request field the API defines has a decision in the gateway.

The fields come from the installed openai SDK's request types, read at test time:
``ResponseCreateParams`` for ``POST /responses`` (both dialects) and
``CompletionCreateParams`` for ``POST /v1/chat/completions``.  Each must be in its
translation's table (translated, acted on, accepted with no effect, or refused with a
400 naming it); only a field the API does not know is ``unknown_parameter``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from gateway_support import gateway
from gateway_upstream import ModelUpstream
from openai.types.chat import completion_create_params as chat_params
from openai.types.responses import response_create_params as responses_params
from sdk_params import param_names

from responses_stream._requests import ROUTES

RESPONSES_FIELDS = param_names(
    responses_params.ResponseCreateParamsStreaming,
    responses_params.ResponseCreateParamsNonStreaming,
)
CHAT_FIELDS = param_names(
    chat_params.CompletionCreateParamsStreaming, chat_params.CompletionCreateParamsNonStreaming
)
# Values of the wrong kind for most fields: each field must be read, never unknown.
ODD_VALUES: tuple[Any, ...] = ({}, "x", 7)


def test_the_sdk_defines_the_fields_real_clients_send() -> None:
    assert {"prompt_cache_key", "safety_identifier", "service_tier", "text"} <= RESPONSES_FIELDS
    assert {"stream_options", "max_completion_tokens", "tools"} <= CHAT_FIELDS


def test_every_responses_field_has_a_decision() -> None:
    assert sorted(RESPONSES_FIELDS - set(ROUTES["responses"]["fields"])) == []


def test_every_chat_completions_field_has_a_decision() -> None:
    assert sorted(CHAT_FIELDS - set(ROUTES["chat"]["fields"])) == []


def test_fields_outside_the_sdk_are_those_the_table_says_who_sends() -> None:
    """A field the SDK lacks is one real clients send (``client_metadata``) or one of
    a chat server's common extensions, declared in the table with who sends it."""
    extra = set(ROUTES["responses"]["fields"]) - RESPONSES_FIELDS
    assert extra <= {"client_metadata", "stop", "presence_penalty", "frequency_penalty"}
    assert ROUTES["responses"]["fields"]["client_metadata"]["fate"] == "no_effect"


@pytest.fixture(scope="module")
def gw() -> Iterator[str]:
    fake = ModelUpstream()
    with fake.serve() as url, gateway(url + "/v1") as base:
        yield base


def _not_unknown(answer: httpx.Response, name: str) -> None:
    if answer.status_code == 200:
        return
    error = answer.json()["error"]
    assert error["code"] != "unknown_parameter", (name, error)
    assert answer.status_code in (400, 404), (name, answer.status_code, error)
    assert error["param"] is not None and error["param"].startswith(name), (name, error)


@pytest.mark.parametrize("prefix", ["/v1", "/openresponses/v1"])
def test_no_responses_field_is_unknown_over_http(gw: str, prefix: str) -> None:
    with httpx.Client(base_url=gw + prefix, timeout=30) as client:
        for name in sorted(RESPONSES_FIELDS - {"model", "input"}):
            for value in ODD_VALUES:
                body = {"model": "m", "input": "hi", name: value}
                _not_unknown(client.post("/responses", json=body), name)
        unknown = client.post("/responses", json={"model": "m", "input": "hi", "colour": 1})
        assert unknown.json()["error"]["code"] == "unknown_parameter"


def test_no_chat_completions_field_is_unknown_over_http(gw: str) -> None:
    hi = [{"role": "user", "content": "hi"}]
    with httpx.Client(base_url=gw + "/v1", timeout=30) as client:
        for name in sorted(CHAT_FIELDS - {"model", "messages"}):
            for value in ODD_VALUES:
                body = {"model": "m", "messages": hi, name: value}
                _not_unknown(client.post("/chat/completions", json=body), name)
        unknown = client.post("/chat/completions", json={"model": "m", "messages": hi, "x": 1})
        assert unknown.json()["error"]["code"] == "unknown_parameter"
