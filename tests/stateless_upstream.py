"""A stateless Responses server that streams as llama-server's own ``/v1/responses`` does.

It refuses (400) every field that needs server state (``previous_response_id``,
``conversation``, ``background``, ``store: true``), so a gateway in front of it must send
the whole context each time.  Its streams have the faults of the recordings in
``tests/repair``: no ``sequence_number``, no ``output_index``, a ``response.created``
without ``created_at``, every ``output_item.done`` held to the end.

What it answers, from the request's ``input``:

- ``Seen N items. You said: <the last user text>`` (N the number of input items);
- a last user text holding ``[call]``, when functions were offered and no tool result
  ends the input: the call as the Hermes markup ``<tool_call>{...}</tool_call>`` in the
  text, as a server that does not parse the model's calls streams it (the first
  function, ``{"city": "Paris"}``);
- a last user text holding ``[fail]``: a delta, then the bare error object llama-server
  sends when its parser gives up.

Ids are counted per server, so two servers given the same requests answer the same bytes.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from http_support import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

STATEFUL = ("previous_response_id", "conversation", "background")
FAIL = {
    "error": {
        "code": 500,
        "message": "The model produced output that does not match the expected format",
        "type": "server_error",
    }
}


def _frame(event: Mapping[str, Any]) -> bytes:
    return f"event: {event.get('type', 'error')}\ndata: {json.dumps(event)}\n\n".encode()


def last_user_text(items: list[Any]) -> str:
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
    return ""


class StatelessUpstream:
    """The server's state (the requests it got) and its Starlette :attr:`app`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.app = Starlette(routes=[Route("/v1/responses", self._responses, methods=["POST"])])

    def _id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_{next(self._ids):04d}"

    async def _responses(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
        refused = [k for k in STATEFUL if body.get(k) is not None]
        if body.get("store") is not False:
            refused.append("store")
        if refused:
            error = {"message": f"{refused[0]} is not supported", "param": refused[0]}
            return JSONResponse({"error": {**error, "type": "invalid_request_error"}}, 400)
        return StreamingResponse(self._stream(body), media_type="text/event-stream")

    def _stream(self, body: dict[str, Any]) -> Iterator[bytes]:
        items = body["input"] if isinstance(body["input"], list) else [body["input"]]
        said = last_user_text(items) if isinstance(body["input"], list) else body["input"]
        rid, mid = self._id("resp"), self._id("msg")
        head = {"id": rid, "object": "response", "status": "in_progress"}
        yield _frame({"type": "response.created", "response": head})
        yield _frame({"type": "response.in_progress", "response": head})
        message = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress"}
        yield _frame({"type": "response.output_item.added", "item": {**message, "content": []}})
        functions = [t["name"] for t in body.get("tools") or [] if t.get("type") == "function"]
        answered = bool(items) and isinstance(items[-1], dict) and "output" in items[-1]
        if "[call]" in said and functions and not answered:
            call = {"name": functions[0], "arguments": {"city": "Paris"}}
            text = f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
        else:
            text = f"Seen {len(items)} items. You said: {said}"
        pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
        for n, piece in enumerate(pieces):
            yield _frame({"type": "response.output_text.delta", "item_id": mid, "delta": piece})
            if "[fail]" in said and n == 1:
                yield f"data: {json.dumps(FAIL)}\n\n".encode()
                return
        part = {"type": "output_text", "annotations": [], "text": text}
        done = {**message, "status": "completed", "content": [part]}
        yield _frame({"type": "response.output_text.done", "item_id": mid, "text": text})
        yield _frame({"type": "response.output_item.done", "item": done})
        usage = {"input_tokens": 10, "output_tokens": len(pieces), "total_tokens": 10 + len(pieces)}
        final = {**head, "status": "completed", "created_at": 1, "model": "a/path/model.gguf"}
        yield _frame(
            {"type": "response.completed", "response": {**final, "output": [done], "usage": usage}}
        )

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Serve on 127.0.0.1; yields the base URL (without ``/v1``)."""
        with serve(self.app) as url:
            yield url
