"""``/conversations``: conversations kept by the gateway, as OpenAI's API keeps them.

A conversation is its id (``conv_...``), when it was made, its metadata and its items in
the order they were added; a response created in it (``conversation`` on
``POST /responses``) reads its items as context and adds its own input and output items
when it ends.  Keys and tenancy are those of stored responses: another key's
conversation is not found, on every route.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .context import find_conversation
from .errors import GatewayError, missing_parameter, unknown_parameter
from .http import error_response, read_json
from .items import with_status
from .pages import list_object, page
from .references import input_items
from .request_check import check_request
from .state import Gateway
from .store import Store, StoredConversation
from .tenancy import Caller

MAX_ADDED = 20  # items one create or add may carry, as OpenAI's API allows


def new_conversation_id() -> str:
    return "conv_" + secrets.token_hex(24)


async def kept_items(
    store: Store, items: list[dict[str, Any]], caller: Caller
) -> list[dict[str, Any]]:
    """Input items as a conversation keeps them: as a turn takes its input (see
    :func:`.references.input_items`), each with the status an item of its type has."""
    return with_status(await input_items(store, items, caller=caller))


def _checked(body: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """``body``'s ``items`` and ``metadata`` checked as on ``POST /responses`` (the same
    item models, and the keys it refuses), its other keys refused."""
    for name in body:
        if name not in allowed:
            raise unknown_parameter(name)
    items = body.get("items")
    if items is not None and isinstance(items, list) and len(items) > MAX_ADDED:
        raise GatewayError(
            400,
            f"Invalid 'items': array too long. Expected an array with maximum length "
            f"{MAX_ADDED}, but got an array with length {len(items)} instead.",
            code="array_above_max_length",
            param="items",
        )
    probe: dict[str, Any] = {"model": "-"}
    if items is not None:
        probe["input"] = items
    if body.get("metadata") is not None:
        probe["metadata"] = body["metadata"]
    try:
        check_request(probe, "responses")
    except GatewayError as exc:
        raise _as_items(exc) from None


def _as_items(exc: GatewayError) -> GatewayError:
    """``exc`` about the probe's ``input``, said of ``items``."""
    param = exc.param
    if param is not None and param.startswith("input"):
        param = "items" + param.removeprefix("input")
    message = exc.message.replace("'input", "'items").replace(" input", " items")
    return GatewayError(exc.status, message, code=exc.code, param=param)


async def _caller(gw: Gateway, request: Request) -> Caller:
    return await gw.caller(request.headers.get("authorization"))


async def create(gw: Gateway, request: Request) -> Response:
    """``POST /conversations``: a new conversation, with its first items and metadata."""
    try:
        body = await read_json(request, gw.config.max_body_bytes)
        _checked(body, ("items", "metadata"))
        caller = await _caller(gw, request)
        metadata = body.get("metadata") or {}
        conversation = StoredConversation(
            new_conversation_id(), int(time.time()), metadata, tenant=caller.tenant
        )
        await gw.store.conversation_put(conversation)
        items = await kept_items(gw.store, body.get("items") or [], caller)
        if items:
            await gw.store.conversation_append(conversation.id, items)
    except GatewayError as exc:
        return error_response(exc)
    return JSONResponse(conversation.resource())


async def one(gw: Gateway, request: Request) -> Response:
    """``GET``, ``POST`` (its metadata replaced) and ``DELETE /conversations/{id}``."""
    conversation_id = request.path_params["conversation_id"]
    try:
        caller = await _caller(gw, request)
        conversation = await find_conversation(gw.store, conversation_id, caller)
        if request.method == "DELETE":
            await gw.store.conversation_delete(conversation_id)
            answer = {"id": conversation_id, "object": "conversation.deleted", "deleted": True}
            return JSONResponse(answer)
        if request.method == "POST":
            body = await read_json(request, gw.config.max_body_bytes)
            if "metadata" not in body:
                raise missing_parameter("metadata")
            _checked(body, ("metadata",))
            conversation = StoredConversation(
                conversation.id,
                conversation.created_at,
                body["metadata"] or {},
                tenant=conversation.tenant,
            )
            await gw.store.conversation_put(conversation)
    except GatewayError as exc:
        return error_response(exc)
    return JSONResponse(conversation.resource())


async def items(gw: Gateway, request: Request) -> Response:
    """``GET /conversations/{id}/items`` (a page: ``limit``, ``order``, ``after``) and
    ``POST`` (items added, answered as a list of them)."""
    conversation_id = request.path_params["conversation_id"]
    try:
        caller = await _caller(gw, request)
        await find_conversation(gw.store, conversation_id, caller)
        if request.method == "POST":
            body = await read_json(request, gw.config.max_body_bytes)
            if not isinstance(body.get("items"), list):
                raise missing_parameter("items")
            _checked(body, ("items",))
            added = await kept_items(gw.store, body["items"], caller)
            await gw.store.conversation_append(conversation_id, added)
            return JSONResponse(list_object(added, len(added)))
        kept = await gw.store.conversation_items(conversation_id)
        return JSONResponse(
            page(
                kept,
                request.query_params,
                lambda after: f"No item with id '{after}' in this conversation.",
            )
        )
    except GatewayError as exc:
        return error_response(exc)


async def item(gw: Gateway, request: Request) -> Response:
    """``GET /conversations/{id}/items/{item_id}`` (the item) and ``DELETE`` (the
    conversation answered)."""
    conversation_id = request.path_params["conversation_id"]
    item_id = request.path_params["item_id"]
    try:
        caller = await _caller(gw, request)
        conversation = await find_conversation(gw.store, conversation_id, caller)
        if request.method == "DELETE":
            if not await gw.store.conversation_item_delete(conversation_id, item_id):
                raise _item_not_found(item_id)
            return JSONResponse(conversation.resource())
        for kept in await gw.store.conversation_items(conversation_id):
            if kept.get("id") == item_id:
                return JSONResponse(kept)
        raise _item_not_found(item_id)
    except GatewayError as exc:
        return error_response(exc)


def _item_not_found(item_id: str) -> GatewayError:
    return GatewayError(
        404, f"Item with id '{item_id}' not found.", code="not_found", param="item_id"
    )
