"""``POST /v1/chat/completions`` served from the upstream's ``/responses``."""

from __future__ import annotations

from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..consumers.to_chat import ReasoningMode, ResponsesToChat, achat_sse_from_responses
from .chat_completion import fold_chunks
from .errors import GatewayError
from .http import error_response, event_stream, read_json
from .request_check import check_request
from .responses_request import responses_request
from .state import Gateway
from .upstream import UpstreamInterrupted


async def chat_completions(gw: Gateway, request: Request) -> Response:
    """A chat completion, streamed when ``stream`` is true."""
    try:
        body = await read_json(request, gw.config.max_body_bytes)
        await gw.admission.turn()  # the body came: the setup's work waits for its turn
        check_request(body, "chat")
        streaming = body.get("stream")
        include_usage = (body.get("stream_options") or {}).get("include_usage") is True
        route = gw.router.route(body["model"], "chat")
        upstream_body = responses_request(body)
        upstream_body["model"] = route.model
        stream = route.client.stream(
            "/responses",
            upstream_body,
            gw.forwarded(request.headers.get("authorization")),
            terminal=True,
        )
        await stream.open(first_event=not streaming)
    except GatewayError as exc:
        return error_response(exc)
    reasoning = cast(ReasoningMode, route.settings.reasoning_field)
    model = upstream_body.get("model")
    if streaming:
        frames = achat_sse_from_responses(
            stream, include_usage=include_usage, reasoning=reasoning, model=model
        )
        return event_stream(frames, stream.aclose, heartbeat=gw.config.heartbeat)
    conv = ResponsesToChat(reasoning=reasoning, include_usage=True, model=model)
    chunks: list[dict[str, Any]] = []
    try:
        async for payload in stream:
            chunks.extend(conv.feed(payload))
            if conv.done:
                break
        chunks.extend(conv.close())
    except UpstreamInterrupted as exc:
        status = 504 if exc.code == "upstream_timeout" else 502
        return error_response(GatewayError(status, str(exc), code=exc.code))
    finally:
        await stream.aclose()
    try:
        return JSONResponse(fold_chunks(chunks))
    except GatewayError as exc:
        return error_response(exc)
