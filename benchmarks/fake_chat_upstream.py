"""A fast fake Chat Completions upstream for the gateway load test, a raw ASGI app.

``python -m benchmarks.fake_chat_upstream --port N [--chunks 200] [--interval 0.005]``
serves it with uvicorn in a process of its own:

- ``POST /v1/chat/completions`` answers every request with one SSE stream: a first
  chunk with the role and a reasoning delta, ``--chunks`` delta chunks in all (the first
  quarter ``reasoning_content``, the rest ``content``, a few words each), a chunk with
  ``finish_reason``, a usage chunk and ``data: [DONE]``; ``--interval`` seconds pass
  before each chunk, as a model emitting tokens.  A request's ``max_completion_tokens``
  (or ``max_tokens``) sets its number of delta chunks instead of ``--chunks``.  Every chunk is a standard
  ``chat.completion.chunk`` with one extra top-level field, ``"t"``: the time it was
  sent (``time.time_ns()``), which chat clients and the gateway ignore;
- the send times of each stream's delta chunks are kept under the text of the request's
  last user message; ``GET /sent`` returns them all (a JSON object, text to list of
  ns) and forgets them, so a client that reads the stream through the gateway, which
  drops ``"t"``, can still match its k-th delta event to the k-th delta chunk sent;
- ``GET /health`` answers 200.

With ``--starlette`` the same answers come from a Starlette app that streams with a
``StreamingResponse`` over an async generator and encodes each chunk as it sends it
(``json.dumps``), the way FastAPI and Starlette servers (vLLM's, SGLang's and most
Python ones) stream, with the cheapest encoder of the standard library: a server of
that stack, for figures that set the gateway's cost beside such an upstream's own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
]
JSON_HEADERS = [(b"content-type", b"application/json")]
MODEL = "m"
CREATED = 1_700_000_000
WORDS = (
    "the quick brown fox jumps over the lazy dog while a model streams its answer "
    "token by token to every client that asked for one and waits for the next"
).split()


def _words(k: int) -> str:
    """A few words (one to four), different from delta to delta."""
    n = 1 + k % 4
    return " " + " ".join(WORDS[(k + i) % len(WORDS)] for i in range(n))


def _chunk_prefix(chunk: dict[str, Any]) -> bytes:
    """``data: {chunk...,"t":`` : the frame up to its send time."""
    body = json.dumps(chunk, separators=(",", ":"))
    return b"data: " + body[:-1].encode() + b',"t":'


class Script:
    """The frames of one stream, pre-encoded up to each send time."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        reasoning = max(1, chunks // 4)
        base: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": MODEL,
            "system_fingerprint": None,
        }
        self.deltas: list[bytes] = []
        self.chunks: list[dict[str, Any]] = []  # the same, to encode as sent
        for k in range(chunks):
            field = "reasoning_content" if k < reasoning else "content"
            delta: dict[str, Any] = {field: _words(k)}
            if k == 0:
                delta = {"role": "assistant", **delta}
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
            self.chunks.append({**base, "choices": [choice]})
            self.deltas.append(_chunk_prefix(self.chunks[-1]))
        finish = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
        usage = {
            "prompt_tokens": 8,
            "completion_tokens": chunks * 2,
            "total_tokens": 8 + chunks * 2,
            "completion_tokens_details": {"reasoning_tokens": reasoning * 2},
        }
        self.ends = [{**base, "choices": [finish]}, {**base, "choices": [], "usage": usage}]
        self.finish, self.usage = (_chunk_prefix(chunk) for chunk in self.ends)


class Scripts:
    """The script of each stream length, made once: ``--chunks`` unless the request
    sets its ``max_completion_tokens`` (or ``max_tokens``)."""

    def __init__(self, chunks: int) -> None:
        self.default = chunks
        self.made: dict[int, Script] = {}

    def of(self, body: Any) -> Script:
        chunks = self.default
        for name in ("max_completion_tokens", "max_tokens"):
            value = body.get(name) if isinstance(body, dict) else None
            if type(value) is int and value > 0:
                chunks = value
                break
        if chunks not in self.made:
            self.made[chunks] = Script(chunks)
        return self.made[chunks]


def _key(body: Any) -> str:
    """The text of the request's last user message ("" when there is none)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def create_app(chunks: int, interval: float) -> Any:
    scripts = Scripts(chunks)
    sent: dict[str, list[int]] = {}

    async def read_body(receive: Any) -> bytes:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                return body

    async def answer(send: Any, status: int, body: bytes) -> None:
        await send({"type": "http.response.start", "status": status, "headers": JSON_HEADERS})
        await send({"type": "http.response.body", "body": body})

    async def stream(send: Any, key: str, script: Script) -> None:
        times = sent.setdefault(key, [])
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        for prefix in script.deltas:
            await asyncio.sleep(interval)
            t = time.time_ns()
            times.append(t)
            frame = prefix + str(t).encode() + b"}\n\n"
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        for prefix in (script.finish, script.usage):
            await asyncio.sleep(interval)
            frame = prefix + str(time.time_ns()).encode() + b"}\n\n"
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        if method == "POST" and path == "/v1/chat/completions":
            raw = await read_body(receive)
            try:
                body = json.loads(raw)
            except ValueError:
                await answer(send, 400, b'{"error":{"message":"bad JSON"}}')
                return
            await stream(send, _key(body), scripts.of(body))
        elif method == "GET" and path == "/sent":
            out = json.dumps(sent).encode()
            sent.clear()
            await answer(send, 200, out)
        elif method == "GET" and path == "/health":
            await answer(send, 200, b'{"status":"ok"}')
        else:
            await answer(send, 404, b'{"error":{"message":"no such route"}}')

    return app


def create_starlette_app(chunks: int, interval: float) -> Any:
    """The same answers from a Starlette app (see the module's doc)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    scripts = Scripts(chunks)
    sent: dict[str, list[int]] = {}

    def frame(chunk: dict[str, Any], t: int) -> bytes:
        return b"data: " + json.dumps({**chunk, "t": t}, separators=(",", ":")).encode() + b"\n\n"

    async def frames(key: str, script: Script) -> Any:
        times = sent.setdefault(key, [])
        for chunk in script.chunks:
            await asyncio.sleep(interval)
            t = time.time_ns()
            times.append(t)
            yield frame(chunk, t)
        for chunk in script.ends:
            await asyncio.sleep(interval)
            yield frame(chunk, time.time_ns())
        yield b"data: [DONE]\n\n"

    async def completions(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"error": {"message": "bad JSON"}}, 400)
        stream = frames(_key(body), scripts.of(body))
        return StreamingResponse(stream, media_type="text/event-stream")

    async def take_sent(request: Request) -> Response:
        out = dict(sent)
        sent.clear()
        return JSONResponse(out)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/sent", take_sent),
            Route("/health", health),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m benchmarks.fake_chat_upstream")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--chunks", type=int, default=200, help="delta chunks a stream")
    parser.add_argument("--interval", type=float, default=0.005, help="seconds between chunks")
    parser.add_argument(
        "--starlette", action="store_true", help="a Starlette app with a StreamingResponse"
    )
    args = parser.parse_args(argv)
    make = create_starlette_app if args.starlette else create_app
    uvicorn.run(
        make(args.chunks, args.interval),
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        backlog=4096,
    )


if __name__ == "__main__":
    main()
