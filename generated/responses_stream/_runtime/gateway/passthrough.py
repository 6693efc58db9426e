"""``responses: pass``: an upstream's own ``/responses`` answer, sent on as it came.

The request goes as the client sent it (the model as routed); the answer's status,
type and bytes come back unchanged.  A streamed answer is read by the validator as it
passes (under ``--strict`` rules), and each fault it finds is counted in ``/metrics``
(``responses_stream_upstream_stream_faults``, by upstream and rule id), once per rule
and stream: what an operator reads before turning ``repair`` on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from starlette.responses import Response, StreamingResponse

from ..consumers.validate import StreamValidator
from ..core.sse_parse import SSELimitError, SSEMessage, SSEParser
from .http import error_response
from .http_client import Response as UpstreamResponse
from .routing import Routed
from .upstream import TRANSPORT_ERRORS

log = logging.getLogger("responses_stream.gateway")

FaultCounter = Callable[[str, str], None]
"""Counts one fault: the upstream's name and the rule id."""
# The answer headers passed on (the rest are the connection's, not the answer's).
_PASSED_HEADERS = ("content-type", "cache-control", "x-request-id", "retry-after")


async def pass_through(
    route: Routed,
    body: Mapping[str, Any],
    authorization: str | None,
    count: FaultCounter,
    dialect: str,
) -> Response:
    """The upstream's answer to ``body`` (the model as ``route`` names it), unchanged."""
    client = route.client
    content = json.dumps({**body, "model": route.model}, ensure_ascii=False).encode()
    headers = {**client.headers(authorization), "content-type": "application/json"}
    try:
        answer = await client.http.request("POST", "/responses", headers, content)
    except TRANSPORT_ERRORS as exc:
        return error_response(client.failed_with(client._transport_error(exc)))
    passed = {k: answer.headers[k] for k in _PASSED_HEADERS if k in answer.headers}
    kind = answer.headers.get("content-type", "")
    if not kind.startswith("text/event-stream"):
        try:
            data = await answer.read(64 * 1024 * 1024)
        except TRANSPORT_ERRORS as exc:
            return error_response(client.failed_with(client._transport_error(exc)))
        finally:
            answer.close()
        return Response(data, status_code=answer.status, headers=passed)
    checked = _checked(answer, route.settings.name, count, dialect)
    return StreamingResponse(checked, status_code=answer.status, headers=passed)


async def _checked(
    answer: UpstreamResponse, upstream: str, count: FaultCounter, dialect: str
) -> AsyncIterator[bytes]:
    """The answer's bytes as they come, each read by the validator on the way."""
    parser, validator = SSEParser(), StreamValidator(dialect, strict=True)
    rules: set[str] = set()
    try:
        async for piece in answer.pieces():
            yield piece
            if "SSE_LIMIT" not in rules:
                _feed(validator, rules, parser.feed, piece)
        if "SSE_LIMIT" not in rules:
            _feed(validator, rules, lambda _: parser.close(), b"")
    except TRANSPORT_ERRORS as exc:  # the client has what came; the stream just ends
        log.warning("the upstream %s broke off a passed stream: %s", upstream, exc)
    finally:
        answer.close()
        if "SSE_LIMIT" not in rules:
            validator.finish()
        rules |= {v.rule for v in validator.violations if v.severity == "error"}
        for rule in sorted(rules):
            count(upstream, rule)


def _feed(
    validator: StreamValidator,
    rules: set[str],
    read: Callable[[bytes], list[SSEMessage]],
    piece: bytes,
) -> None:
    """The messages ``read`` makes of ``piece``, each to the validator; a stream over the
    parser's caps is not read further (``SSE_LIMIT``)."""
    try:
        messages = read(piece)
    except SSELimitError as exc:
        messages = exc.messages
        rules.add("SSE_LIMIT")
    for message in messages:
        validator.feed_raw(message.data, message.event)


def count_into(metrics: Any) -> FaultCounter:
    """The fault counter of the app's metrics."""

    def count(upstream: str, rule: str) -> None:
        metrics.upstream_fault(upstream, "pass", rule)

    return count
