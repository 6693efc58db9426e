"""A real HTTP server for the stream processor tests, and helpers to read what it sends.

``POST /v1/responses`` (openai dialect) and ``POST /{dialect}/v1/responses``
answer with ``text/event-stream``.  The posted ``model`` names the scenario:
chat scenarios go through ``sse_from_chat`` with the posted body as the
request; names starting with ``harmony-`` drive ``HarmonyToResponses``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import responses_stream as rs
from responses_stream import CountingIds, HarmonyToResponses, StreamProcessor, sse_from_chat

CREATED_AT = 1_700_000_000
TERMINAL = ("response.completed", "response.incomplete", "response.failed")

ChatChunks = Sequence[Mapping[str, Any] | str]
# ("segment", channel, recipient, delta) | ("end_message", content_type) | ("end", usage)
HarmonyOp = tuple[Any, ...]


def harmony_sse(ops: Sequence[HarmonyOp], dialect: str, request: dict[str, Any]) -> Iterator[bytes]:
    """A Harmony session as SSE frames in ``dialect``."""
    d = rs.DIALECTS[dialect]
    enc = d.encoder()
    proc = StreamProcessor(d, request=request, ids=CountingIds(), created_at=CREATED_AT)
    conv = HarmonyToResponses(proc, request)
    proc.start()
    for event in proc.drain():
        yield enc.encode(event)
    for kind, *args in ops:
        getattr(conv, kind)(*args)
        for event in proc.drain():
            yield enc.encode(event)
    tail = enc.close()
    if tail:
        yield tail


def make_app(
    chat: Mapping[str, ChatChunks], harmony: Mapping[str, Sequence[HarmonyOp]]
) -> Starlette:
    async def responses(request: Request) -> Response:
        dialect = request.path_params.get("dialect", "openai")
        if dialect not in rs.DIALECTS:
            return JSONResponse({"error": {"message": f"no dialect {dialect!r}"}}, 404)
        body = await request.json()
        name = body.get("model")
        frames: Iterator[bytes]
        if isinstance(name, str) and name.startswith("harmony-") and name in harmony:
            frames = harmony_sse(harmony[name], dialect, body)
        elif name in chat:
            frames = sse_from_chat(
                chat[name], dialect=dialect, request=body, ids=CountingIds(), created_at=CREATED_AT
            )
        else:
            return JSONResponse({"error": {"message": f"unknown scenario {name!r}"}}, 404)
        return StreamingResponse(
            frames, media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    return Starlette(
        routes=[
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/{dialect}/v1/responses", responses, methods=["POST"]),
        ]
    )


@contextmanager
def serve(
    app: Starlette, timeout: float = 10.0, lifespan: str = "on", **options: Any
) -> Iterator[str]:
    """Run ``app`` with uvicorn on an ephemeral 127.0.0.1 port in a thread; yields the base
    URL.  ``lifespan``: uvicorn's setting (``"on"`` runs the app's startup and shutdown);
    ``options``: more of uvicorn's settings (with ``ssl_certfile``, the URL is https)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan=lifespan,
        timeout_graceful_shutdown=2,
        **options,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="uvicorn-test", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the test server did not start")
            if time.monotonic() > deadline:
                raise TimeoutError("the test server did not start in time")
            time.sleep(0.01)
        scheme = "https" if options.get("ssl_certfile") else "http"
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()
        assert not thread.is_alive(), "the test server did not shut down"


# -- reading the stream ----------------------------------------------------------
def parse_sse(body: str) -> tuple[list[dict[str, Any]], bool]:
    """The payloads of an SSE body (checking each ``event:`` line), and whether it ended
    with ``data: [DONE]``."""
    assert body.endswith("\n\n"), "the stream must end with a complete frame"
    payloads: list[dict[str, Any]] = []
    done = False
    for frame in body[:-2].split("\n\n"):
        assert not done, "frames after data: [DONE]"
        lines = frame.split("\n")
        if lines == ["data: [DONE]"]:
            done = True
            continue
        assert len(lines) == 2, frame
        event, data = lines
        assert event.startswith("event: ") and data.startswith("data: "), frame
        payload = json.loads(data[6:])
        assert event[7:] == payload["type"], frame
        payloads.append(payload)
    return payloads, done


def check_stream(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Envelope and indexing invariants of one complete stream; returns the final response."""
    types = [e["type"] for e in events]
    assert types[:2] == ["response.created", "response.in_progress"], types[:2]
    assert [i for i, t in enumerate(types) if t in TERMINAL] == [len(events) - 1], types
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    if "error" in types:
        assert types.index("error") == len(events) - 2 and types[-1] == "response.failed"
    added: dict[int, dict[str, Any]] = {}
    done: dict[int, dict[str, Any]] = {}
    parts: dict[int, int] = {}  # output_index -> number of content parts opened
    summaries: dict[int, int] = {}  # output_index -> number of summary parts opened
    for e in events[2:-1]:
        t = e["type"]
        if t == "error":
            continue
        idx = e["output_index"]
        if t == "response.output_item.added":
            assert idx == len(added), f"output_index {idx} is not dense"
            assert set(added) == set(done), "an item was added while another was open"
            assert e["item"]["status"] == "in_progress"
            added[idx] = e["item"]
            continue
        assert idx in added, f"{t} for output_index {idx} before its item was added"
        assert idx not in done, f"{t} for output_index {idx} after its item was done"
        if t == "response.output_item.done":
            assert e["item"]["id"] == added[idx]["id"]
            assert e["item"]["type"] == added[idx]["type"]
            assert e["item"]["status"] != "in_progress"
            done[idx] = e["item"]
            continue
        assert e.get("item_id", added[idx]["id"]) == added[idx]["id"]
        if t == "response.content_part.added":
            assert e["content_index"] == parts.get(idx, 0), "content_index is not dense"
            parts[idx] = e["content_index"] + 1
        elif "content_index" in e:
            assert e["content_index"] == parts.get(idx, 0) - 1, f"{t}: not the open part"
        if t == "response.reasoning_summary_part.added":
            assert e["summary_index"] == summaries.get(idx, 0), "summary_index is not dense"
            summaries[idx] = e["summary_index"] + 1
        elif "summary_index" in e:
            assert e["summary_index"] == summaries.get(idx, 0) - 1
    assert set(done) == set(added), "an item was never done"
    final: dict[str, Any] = events[-1]["response"]
    assert final["output"] == [done[i] for i in range(len(done))]
    for e in events[:2]:
        assert e["response"]["id"] == final["id"]
    return final
