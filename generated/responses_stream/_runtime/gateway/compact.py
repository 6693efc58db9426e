"""``POST /responses/compact``: a conversation made short for a later continuation.

The upstream model writes a summary of the conversation; the answer keeps the user's
messages as they were and ends with a ``compaction`` item whose
``encrypted_content`` carries the summary (see ``compaction_token``).  Sent back as
input, that item becomes a system message holding the summary.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .chat_request import translate
from .compaction_token import seal_summary
from .context import load_context
from .errors import GatewayError
from .http import error_response, read_json
from .references import input_items
from .request_check import check_request, translated
from .responses_routes import final_answer
from .responses_upstream import responses_body
from .routing import Routed
from .state import Gateway
from .turn import Turn, new_response_id

PROMPT = (
    "Write a summary of the conversation so far for your own later use: the facts, names, "
    "numbers, decisions and open tasks it holds, and what was being worked on last. Write "
    "only the summary."
)


async def compact(gw: Gateway, request: Request, dialect: str) -> Response:
    try:
        body = await read_json(request, gw.config.max_body_bytes)
        check_request(body, "compact")
        route = gw.router.route(body["model"], "responses")
        caller = await gw.caller(request.headers.get("authorization"))
        items = await input_items(gw.store, body.get("input"), caller=caller)
        previous = body.get("previous_response_id")
        if previous is not None:
            limit = gw.config.max_chain
            context = await load_context(gw.store, previous, caller=caller, max_chain=limit)
            items = [*context, *items]
        turn = _summary_turn(route, body, items, dialect)
        await turn.start(route.client, caller.upstream_authorization)
    except GatewayError as exc:
        return error_response(exc)
    async for _ in turn.frames():
        pass
    response = turn.response
    if response is None or response.get("status") != "completed":
        return final_answer(turn)
    summary = "".join(
        part.get("text", "")
        for item in response.get("output") or ()
        if item.get("type") == "message"
        for part in item.get("content") or ()
        if part.get("type") == "output_text"
    )
    kept = [_kept(item) for item in items if _is_user_message(item)]
    compaction = {
        "type": "compaction",
        "id": "cmp_" + turn.response_id.removeprefix("resp_"),
        "encrypted_content": seal_summary(summary),
    }
    return JSONResponse(
        {
            "id": turn.response_id,
            "object": "response.compaction",
            "created_at": int(time.time()),
            "output": [*kept, compaction],
            "usage": response.get("usage"),
        }
    )


def _summary_turn(
    route: Routed, body: dict[str, Any], items: list[dict[str, Any]], dialect: str
) -> Turn:
    ask = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": PROMPT}]}
    request = translated(body, "compact")
    api = "chat"
    if route.settings.responses == "repair":
        api, upstream_body = "responses", responses_body(request, [*items, ask], route.model)
    else:
        upstream_body = translate(
            request,
            [*items, ask],
            reasoning_field=route.settings.reasoning_field,
            hosted_tools=route.settings.hosted_tools,
        ).body
        upstream_body["model"] = route.model
    upstream_body.pop("tools", None)
    return Turn(
        body=request,
        dialect=dialect,
        response_id=new_response_id(),
        context=[],
        input_items=[],
        upstream_body=upstream_body,
        echo={"model": body["model"], "store": False},
        store=False,
        api=api,
    )


def _is_user_message(item: dict[str, Any]) -> bool:
    return item.get("type") == "message" and item.get("role") == "user"


def _kept(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "type": "message",
        "status": "completed",
        "role": "user",
        "content": [_set(part) for part in item.get("content") or []],
    }


def _set(part: Any) -> Any:
    """A content part as an output holds it: without the null keys a request may send,
    an image with its detail (``auto`` when the request left it out)."""
    if not isinstance(part, dict):
        return part
    kept = {k: v for k, v in part.items() if v is not None}
    return {**kept, "detail": kept.get("detail", "auto")} if kept["type"] == "input_image" else kept
