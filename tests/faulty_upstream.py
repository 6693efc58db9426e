"""A scriptable fake upstream for the gateway's fault tests, served by uvicorn on 127.0.0.1.

Each test registers a :class:`Script` under a name and posts that name as the
``model``; the upstream then answers as scripted on whichever path was posted:
an HTTP error with a JSON body and ``Retry-After``, a stream cut short (with
chunked framing or with a ``content-length`` it never fills), a stall before
the headers or in the middle of the body, bytes trickled in small pieces, or
garbage.  It counts the requests per script and records when a connection it
was streaming on was closed by the gateway.

Streams are built here too: ``chat_stream`` writes a chat completions SSE body
for given text pieces, ``responses_stream`` the Responses stream the project
makes of it (a valid one, checked by the tests that use it).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from responses_stream import CountingIds, sse_from_chat

CREATED_AT = 1_700_000_000
_SURROGATE = re.compile("[\ud800-\udfff]")
_PRIVATE_ESCAPE = re.compile(r"\\u(e[0-7][0-9a-f]{2})")


@dataclass
class Script:
    """What the upstream does with one request.

    ``pieces`` are sent one by one, ``delay`` seconds apart; then the body ends
    (``end="complete"``), the connection is closed without ending it
    (``end="cut"``), or nothing more is sent until the gateway goes away
    (``end="stall"``).  ``framing`` is ``"chunked"`` or ``"length"`` (a
    ``content-length`` of ``length`` bytes, by default the sum of the pieces).
    ``stall_headers`` waits for the gateway to go away before sending anything.
    ``then`` lists the scripts of the requests that follow (the last one repeats).
    """

    pieces: Sequence[bytes] = ()
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    delay: float = 0.0
    end: str = "complete"
    framing: str = "chunked"
    length: int | None = None
    stall_headers: bool = False
    then: Sequence[Script] = ()


@dataclass
class Record:
    """What happened to the requests of one script."""

    hits: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    sent: int = 0  # pieces sent on the last connection
    closed: threading.Event = field(default_factory=threading.Event)
    sent_at_close: int | None = None


class FaultyUpstream:
    """The ASGI app of the fake upstream."""

    def __init__(self) -> None:
        self.scripts: dict[str, Script] = {}
        self.records: dict[str, Record] = {}
        self.requests = 0  # every request that came, scripted or not
        self._lock = threading.Lock()

    def script(self, name: str, script: Script) -> Record:
        """Register ``script`` under ``name`` (the model to post); its record."""
        with self._lock:
            self.scripts[name] = script
            record = self.records[name] = Record()
        return record

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        more = True
        while more:
            message = await receive()
            raw += message.get("body", b"")
            more = message.get("more_body", False)
        with self._lock:
            self.requests += 1
        body = json.loads(raw)
        name = body.get("model")
        if name not in self.records:
            error = b'{"error": {"message": "no such script", "type": "not_found"}}'
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 404, "headers": headers})
            await send({"type": "http.response.body", "body": error})
            return
        record = self.records[name]
        script = self.scripts[name]
        with self._lock:
            index = record.hits
            record.hits += 1
            record.bodies.append(body)
            record.paths.append(scope["path"])
        steps = [script, *script.then]
        step = steps[min(index, len(steps) - 1)]
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.create_task(watch())
        try:
            await self._run(step, record, send, gone)
        finally:
            watcher.cancel()

    async def _run(self, step: Script, record: Record, send: Any, gone: asyncio.Event) -> None:
        record.sent = 0
        if step.stall_headers:
            await gone.wait()
            self._closed(record)
            return
        headers = [(b"content-type", step.content_type.encode())]
        headers += [(k.lower().encode(), v.encode()) for k, v in step.headers.items()]
        if step.framing == "length":
            length = step.length if step.length is not None else sum(map(len, step.pieces))
            headers.append((b"content-length", str(length).encode()))
        await send({"type": "http.response.start", "status": step.status, "headers": headers})
        for piece in step.pieces:
            if gone.is_set():
                self._closed(record)
                return
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            record.sent += 1
            if step.delay:
                try:
                    await asyncio.wait_for(gone.wait(), step.delay)
                except TimeoutError:
                    pass
        if step.end == "complete":
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        elif step.end == "stall":
            await gone.wait()
            self._closed(record)
        # "cut": return with the body unfinished; uvicorn closes the connection

    def _closed(self, record: Record) -> None:
        record.sent_at_close = record.sent
        record.closed.set()


# -- other endpoints that misbehave at the socket level -------------------------------
@contextmanager
def closed_port() -> Iterator[str]:
    """A base URL on which nothing listens: connections are refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    yield f"http://127.0.0.1:{port}"


@contextmanager
def black_hole() -> Iterator[str]:
    """A base URL whose connections never complete: a listener with a full backlog."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port))  # fills the backlog of one
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        filler.close()
        listener.close()


@contextmanager
def not_http() -> Iterator[str]:
    """A base URL whose server reads the request and answers with bytes that are not HTTP."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    conn.recv(65536)
                    conn.sendall(b"\x00\xff this is not HTTP \xfe\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


# -- streams ----------------------------------------------------------------------------
def chat_chunks(texts: Sequence[str], finish: str | None = "stop") -> list[dict[str, Any]]:
    """Chat completion chunks: a role chunk, one chunk per text, a finish chunk and usage."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": CREATED_AT}
    base["model"] = "m"
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    for text in texts:
        chunks.append({**base, "choices": [{"index": 0, "delta": {"content": text}}]})
    if finish is not None:
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        chunks.append({**base, "choices": [], "usage": usage})
    return chunks


def chat_events(
    texts: Sequence[str], finish: str | None = "stop", *, ascii_only: bool = False
) -> list[bytes]:
    """The SSE events (one ``bytes`` each) of a chat stream, ending with ``[DONE]``.

    ``ascii_only`` writes every non-ASCII character as a JSON escape (astral ones as
    surrogate pairs); otherwise they are raw UTF-8.
    """
    frames = [
        b"data: " + json.dumps(c, ensure_ascii=ascii_only).encode() + b"\n\n"
        for c in chat_chunks(texts, finish)
    ]
    return frames + ([b"data: [DONE]\n\n"] if finish is not None else [])


def responses_events(texts: Sequence[str], *, ascii_only: bool = False) -> list[bytes]:
    """The SSE events of the Responses stream made of that chat stream (openai dialect).

    ``ascii_only``: each event's JSON is rewritten with every non-ASCII character escaped
    (lone surrogates in ``texts`` stay lone escapes, for the gateway to repair).
    """
    if ascii_only:  # lone surrogates stand in as private-use characters, put back below
        texts = [_SURROGATE.sub(lambda m: chr(ord(m[0]) - 0xD800 + 0xE000), t) for t in texts]
    frames = list(
        sse_from_chat(
            chat_chunks(texts),
            dialect="openai",
            model="m",
            ids=CountingIds(),
            created_at=CREATED_AT,
        )
    )
    if not ascii_only:
        return frames
    out = []
    for frame in frames:
        head, data = frame.decode().rstrip("\n").split("\ndata: ", 1)
        escaped = _PRIVATE_ESCAPE.sub(
            lambda m: f"\\u{int(m[1], 16) - 0xE000 + 0xD800:04x}", json.dumps(json.loads(data))
        )
        out.append(f"{head}\ndata: {escaped}\n\n".encode())
    return out


def split_at(data: bytes, offsets: Sequence[int]) -> list[bytes]:
    """``data`` cut at each of the (sorted) ``offsets``."""
    bounds = [0, *(o for o in offsets if 0 < o < len(data)), len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def split_every(data: bytes, size: int) -> list[bytes]:
    """``data`` in pieces of ``size`` bytes (cutting through UTF-8 sequences)."""
    return [data[i : i + size] for i in range(0, len(data), size)]
