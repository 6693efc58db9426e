"""``POST /responses`` (streaming and not), retrieve, delete and ``input_items``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .chat_completion import TIMEOUT_CODES
from .errors import GatewayError, bad_request
from .http import dropped_tools_headers, error_response, event_stream, read_json
from .pages import page
from .passthrough import count_into, pass_through
from .request_check import check_request
from .state import Gateway
from .turn import Turn, keep, plan_turn
from .upstream import error_status


async def create(gw: Gateway, request: Request, dialect: str) -> Response:
    """A response, streamed when ``stream`` is true, else its final Response as JSON."""
    try:
        body = await read_json(request, gw.config.max_body_bytes)
        await gw.admission.turn()  # the body came: the setup's work waits for its turn
        check_request(body, "responses")
        route = gw.router.route(body["model"], "responses")
        caller = await gw.caller(request.headers.get("authorization"))
        if route.settings.responses == "pass":
            count = count_into(request.app.state.metrics)
            return await pass_through(route, body, caller.upstream_authorization, count, dialect)
        turn = await plan_turn(gw.config, gw.store, body, dialect, caller=caller, route=route)
        streaming = bool(body.get("stream"))
        background = body.get("background") is True
        if background:
            if not turn.store:
                raise bad_request(
                    "a background response must be stored: set 'store' to true", "store"
                )
            turn.echo["background"] = True  # created queued, as OpenAI starts one
            await gw.runs.admit(turn)
        first_event = not (streaming or background)
        try:
            await turn.start(route.client, caller.upstream_authorization, first_event=first_event)
        except BaseException:
            if background:
                await gw.runs.withdraw(turn)
            raise
        if background:
            queued = await gw.runs.start(turn, turn.opening)
    except GatewayError as exc:
        return error_response(exc)
    headers = dropped_tools_headers(turn.dropped)
    if background:
        if streaming:  # the run goes on without this client: its stream follows the log
            frames = gw.runs.follow(turn.response_id, -1)
            return event_stream(frames, _nothing, headers, gw.config.heartbeat)
        return JSONResponse(queued, headers=headers)
    if streaming:
        frames = turn.frames(gw.store)
        return event_stream(frames, turn.aclose, headers, gw.config.heartbeat)
    error: dict[str, Any] | None = None
    async for frame in turn.frames():
        error = error or error_event(frame)
    try:
        await keep(gw.store, turn)
    except GatewayError as exc:  # nothing was sent: the client may ask again
        return error_response(exc)
    answer = final_answer(turn, error)
    answer.headers.update(headers)
    return answer


def final_answer(turn: Turn, event: Mapping[str, Any] | None = None) -> Response:
    """The final Response as JSON; a failed one is the error it failed with.

    ``event`` is the stream's ``error`` event (see :func:`error_event`): its code is
    the precise one (``response.error.code`` is a closed enum, ``server_error`` for any
    code outside it), the upstream's own when the upstream sent an error.  The status
    is that code when it is an HTTP error status (an upstream's ``500``), 504 for a
    timeout, else 502.
    """
    response = turn.response
    if response is None:
        return error_response(
            GatewayError(502, "the stream ended without a final response", code="upstream_failed")
        )
    if response.get("status") == "failed":
        error = response.get("error") or {}
        code = error.get("code") if isinstance(error.get("code"), str) else None
        precise = (event or {}).get("code")
        code = precise if isinstance(precise, str) and precise else code
        status = 504 if code in TIMEOUT_CODES else error_status(code)
        message = error.get("message") or "the response failed"
        return error_response(GatewayError(status, str(message), code=code))
    return JSONResponse(response)


def error_event(frames: bytes) -> dict[str, Any] | None:
    """The error of the ``error`` event among SSE ``frames`` (``code``, ``message`` and
    ``param``, in either dialect's shape), if one is there."""
    if b'"type":"error"' not in frames:
        return None
    for line in frames.split(b"\n"):
        if line.startswith(b"data: ") and b'"type":"error"' in line[:40]:
            try:
                event = json.loads(line[6:])
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "error":
                inner = event.get("error")
                return inner if isinstance(inner, dict) else event
    return None


def _not_found(response_id: str) -> GatewayError:
    return GatewayError(
        404, f"No response found with id {response_id!r}.", code="not_found", param="response_id"
    )


async def _record(gw: Gateway, request: Request) -> Any:
    """The caller's record of the path's response id; another tenant's is not found."""
    response_id = request.path_params["response_id"]
    caller = await gw.caller(request.headers.get("authorization"))
    record = await gw.store.get(response_id)
    if record is None or not caller.sees(record):
        raise _not_found(response_id)
    return record


async def retrieve(gw: Gateway, request: Request) -> Response:
    """A stored response as it stands; a background one streamed again with
    ``stream=true`` (after ``starting_after``, then live to its end)."""
    try:
        record = await _record(gw, request)
        query = request.query_params
        if query.get("stream") in ("true", "True", "1"):
            if record.response.get("background") is not True:
                raise bad_request(
                    "This response cannot be streamed because it was not created with "
                    "background=true.",
                    "stream",
                )
            after = _starting_after(query.get("starting_after"))
            frames = gw.runs.follow(record.id, after)
            return event_stream(frames, _nothing, {}, gw.config.heartbeat)
        response = await gw.runs.current(record)
    except GatewayError as exc:
        return error_response(exc)
    return JSONResponse(response)


# What cancelling a response that ended is answered, as OpenAI's API answers it
CANNOT_CANCEL = {
    "completed": "Cannot cancel a completed response.",
    "failed": "Cannot cancel a failed response.",
    "incomplete": "Cannot cancel an incomplete response.",
}


async def cancel(gw: Gateway, request: Request) -> Response:
    """Stop a background response that is queued or running (from any replica): it ends
    ``cancelled``, with no output; cancelling it again answers the same.  One that ended
    otherwise, or one that was not made in the background, is a 400."""
    try:
        record = await _record(gw, request)
        if record.response.get("background") is not True:
            raise bad_request("Cannot cancel a synchronous response.", "response_id")
        response = await gw.runs.current(record)
        if response.get("status") not in CANNOT_CANCEL and response.get("status") != "cancelled":
            await gw.runs.cancel(record.id)
            response = await gw.runs.current(await _record(gw, request))
        refusal = CANNOT_CANCEL.get(str(response.get("status")))
        if refusal is not None:  # it ended before the cancel reached it
            raise bad_request(refusal, "response_id")
    except GatewayError as exc:
        return error_response(exc)
    return JSONResponse(response)


async def _nothing() -> None:
    """No cleanup: a background run goes on when its client leaves."""


def _starting_after(value: str | None) -> int:
    if value is None:
        return -1
    if not value.lstrip("-").isdigit():
        raise bad_request("'starting_after' must be an integer", "starting_after")
    return int(value)


async def delete(gw: Gateway, request: Request) -> Response:
    response_id = request.path_params["response_id"]
    try:
        record = await _record(gw, request)
        if (await gw.runs.current(record)).get("status") in ("queued", "in_progress"):
            raise bad_request("Cannot delete an in-flight response.", "response_id")
        if not await gw.store.delete(response_id):
            raise _not_found(response_id)
    except GatewayError as exc:
        return error_response(exc)
    return JSONResponse({"id": response_id, "object": "response.deleted", "deleted": True})


async def input_items(gw: Gateway, request: Request) -> Response:
    """A page of a stored response's input items (``limit``, ``order``, ``after``)."""
    try:
        record = await _record(gw, request)
        answer = page(
            list(record.input_items),
            request.query_params,
            lambda after: f"no input item {after!r} in this response",
        )
    except GatewayError as exc:
        return error_response(exc)
    return JSONResponse(answer)
