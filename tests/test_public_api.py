"""The package's public import paths: every name ``responses_stream`` exported before the
runtime was laid out in subpackages still imports, and the gateway has a public path,
``responses_stream.gateway``, whose app mounts inside another ASGI application."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import openai
import pytest
from gateway_upstream import ModelUpstream
from http_support import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

# ``responses_stream.__all__`` as it was before the move (written down, not read back).
EXPORTED = [
    "AccumulateError",
    "ChatToResponses",
    "CountingIds",
    "DIALECTS",
    "Dialect",
    "HarmonyToResponses",
    "HarmonyTokens",
    "ITEM_TYPES",
    "InputFormError",
    "ItemHandle",
    "LimitExceeded",
    "Limits",
    "ProcessorError",
    "RandomIds",
    "ResponseAccumulator",
    "ResponsesToChat",
    "SSEDecodeError",
    "SSEEncoder",
    "SSELimitError",
    "SSEMessage",
    "SSEParser",
    "StreamProcessor",
    "StreamValidator",
    "TransitionError",
    "Violation",
    "__version__",
    "achat_sse_from_responses",
    "achat_sse_from_sse",
    "aevents_from_chat",
    "aparse_sse",
    "asse_from_chat",
    "asse_from_input",
    "chat_chunks_from_responses",
    "chat_data_lines",
    "chat_sse_from_responses",
    "chat_sse_from_sse",
    "events_from_chat",
    "events_from_harmony_tokens",
    "load_harmony_encoding",
    "openai",
    "openresponses",
    "parse_sse",
    "sse_from_chat",
    "sse_from_harmony_tokens",
    "sse_from_input",
    "validate_payloads",
]
DIALECT_EXPORTS = [
    "DIALECT",
    "EVENT_TYPES",
    "ITEM_EMITTERS",
    "ITEM_TYPES",
    "ItemEmitter",
    "ResponseEmitter",
    "models",
    "reading",
]


@pytest.mark.parametrize("name", EXPORTED)
def test_every_public_name_still_imports(name: str) -> None:
    package = importlib.import_module("responses_stream")
    assert name in package.__all__
    exec(f"from responses_stream import {name}", {})


@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
def test_every_dialect_name_still_imports(dialect: str) -> None:
    module = importlib.import_module(f"responses_stream.{dialect}")
    for name in DIALECT_EXPORTS:
        exec(f"from responses_stream.{dialect} import {name}", {})
    assert sorted(module.__all__) == DIALECT_EXPORTS
    importlib.import_module(f"responses_stream.{dialect}.emitters")


def test_the_gateway_has_a_public_path() -> None:
    from responses_stream import gateway

    assert sorted(gateway.__all__) == [
        "Gateway",
        "GatewayConfig",
        "GatewayError",
        "Store",
        "StoreError",
        "StoredResponse",
        "create_app",
        "open_store",
    ]
    with pytest.raises(ValueError, match="hosted tools policy"):
        gateway.create_app("http://127.0.0.1:1/v1", store="memory:", hosted_tools="maybe")
    with pytest.raises(ValueError, match="unknown store"):
        gateway.create_app("http://127.0.0.1:1/v1", store="nowhere")


async def home(request: Request) -> PlainTextResponse:
    return PlainTextResponse("the host's own route")


def test_the_gateway_mounted_in_another_app() -> None:
    """The lines of docs/gateway-clients.md: the gateway under ``/llm`` of a host app with routes of its
    own, its lifespan entered from the host's (so its upstream client closes at exit)."""
    from responses_stream.gateway import create_app

    fake = ModelUpstream()
    with fake.serve() as upstream:
        gateway = create_app(upstream + "/v1", store="memory:")

        @asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with gateway.router.lifespan_context(gateway):
                yield

        app = Starlette(routes=[Route("/", home), Mount("/llm", app=gateway)], lifespan=lifespan)
        with serve(app, lifespan="on") as host:
            drive(host)
        assert gateway.state.gateway.upstream.closed


def drive(host: str) -> None:
    client = openai.OpenAI(
        base_url=host + "/llm/v1",
        api_key="sk-client",
        max_retries=0,
        _strict_response_validation=True,
    )
    with client.responses.stream(model="fake-model", input="Mounted?") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert final.output_text == "Hello! You said: Mounted?"
    again = client.responses.retrieve(final.id)
    assert again.output_text == final.output_text
    assert httpx.get(host + "/", timeout=10).text == "the host's own route"
    assert httpx.get(host + "/llm/health", timeout=10).json()["status"] == "ok"
