"""The gateway's stream is, byte for byte, the conversion of what the upstream sent.

However the gateway reads its upstream (the HTTP client, where its reads fall) and
writes to its client (several frames in one write), the bytes a client receives must
be those ``sse_from_chat`` makes of the same upstream stream, for the same request:
the transport adds, drops and reorders nothing.  Each recorded chat stream in
``tests/recorded`` (text, reasoning, tool calls, a ``length`` stop, an upstream error
mid-stream, a cut stream, malformed chunks) is served whole and in 7-byte pieces, to
both dialects' routes.  The
only differences allowed are what no two runs share: the item ids the gateway draws at
random and the clock (``completed_at``); the response's id and ``created_at`` are taken
from the gateway's stream and given to the conversion.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from responses_stream import sse_from_chat
from responses_stream.gateway import create_app

RECORDED = Path(__file__).parent / "recorded"
RECORDINGS = sorted(p.stem for p in RECORDED.glob("*.sse"))
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
# ids the gateway draws at random: a prefix and 24 hex digits (a response id has 48)
DRAWN_ID = re.compile(rb"\b[a-z]+_[0-9a-f]{24}\b")
CLOCK = re.compile(rb'"completed_at":\d+')


def _upstream() -> Starlette:
    """Each recording by its name as the model, sent as the last user message's text
    says: whole (``0``) or in pieces of that many bytes, each its own write."""

    async def chat(request: Request) -> Response:
        body = await request.json()
        raw = (RECORDED / f"{body['model']}.sse").read_bytes()
        how = body["messages"][-1]["content"]
        if how == "0":
            return Response(raw, media_type="text/event-stream")
        size = int(how)

        async def pieces() -> AsyncIterator[bytes]:
            for at in range(0, len(raw), size):
                yield raw[at : at + size]
                await asyncio.sleep(0)

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    with (
        serve(_upstream()) as upstream,
        serve(create_app(upstream + "/v1", store="memory:")) as url,
    ):
        yield url


def _normalized(stream: bytes) -> bytes:
    """``stream`` with each drawn id replaced by its order of first appearance, and the
    completion time by a mark."""
    names: dict[bytes, bytes] = {}

    def name(match: re.Match[bytes]) -> bytes:
        return names.setdefault(match.group(0), b"id_%d" % len(names))

    return CLOCK.sub(b'"completed_at":0', DRAWN_ID.sub(name, stream))


def _created(stream: bytes) -> dict[str, Any]:
    """The response of the stream's first event (``response.created``)."""
    first = stream.split(b"\n\n", 1)[0]
    data = next(line for line in first.split(b"\n") if line.startswith(b"data: "))
    event = json.loads(data[6:])
    assert event["type"] == "response.created", event["type"]
    return dict(event["response"])


@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
@pytest.mark.parametrize("piece", [0, 7], ids=["whole", "7-byte pieces"])
@pytest.mark.parametrize("recording", RECORDINGS)
def test_the_stream_is_the_conversion_of_the_upstream_stream(
    gateway: str, recording: str, piece: int, dialect: str
) -> None:
    body = {
        "model": recording,
        "input": str(piece),
        "instructions": "Be brief.",
        "tools": TOOLS,
        "stream": True,
        "store": False,
    }
    base = gateway + ("/v1" if dialect == "openai" else "/openresponses/v1")
    with httpx.stream("POST", base + "/responses", json=body, timeout=30) as answer:
        assert answer.status_code == 200
        got = b"".join(answer.iter_bytes())
    created = _created(got)
    # the request as a response echoes it: its fields but the input and the transport's
    echo = {"model": recording, "instructions": "Be brief.", "tools": TOOLS, "store": False}
    expected = b"".join(
        sse_from_chat(
            [(RECORDED / f"{recording}.sse").read_bytes()],
            dialect=dialect,
            request=echo,
            model=recording,
            response_id=created["id"],
            created_at=created["created_at"],
        )
    )
    assert _normalized(got) == _normalized(expected)
    assert got.count(b"\n\n") == expected.count(b"\n\n") > 2
