"""What the gateway's HTTP client keeps from one upstream request to the next: the
connection, never a cookie.

The upstream answers every request with a recorded chat stream (llama.cpp's server),
its closing ``data: [DONE]`` 10 ms after its last chunk, and sets a cookie; it notes
the gateway's port and the ``Cookie`` header of each request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from http_support import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from responses_stream.gateway import create_app

RECORDING = Path(__file__).parent / "recorded" / "llamacpp_text.sse"
BODY = {"model": "m", "input": "hi", "stream": True, "store": False}


@dataclass
class Seen:
    ports: list[int] = field(default_factory=list)  # the gateway's side of each connection
    cookies: list[str | None] = field(default_factory=list)


def _upstream(seen: Seen) -> Starlette:
    raw = RECORDING.read_bytes()
    end = raw.rindex(b"data: [DONE]")

    async def chat(request: Request) -> Response:
        assert request.client is not None
        seen.ports.append(request.client.port)
        seen.cookies.append(request.headers.get("cookie"))
        await request.body()

        async def pieces() -> AsyncIterator[bytes]:
            yield raw[:end]
            await asyncio.sleep(0.01)
            yield raw[end:]

        answer = StreamingResponse(pieces(), media_type="text/event-stream")
        answer.set_cookie("upstream_session", "given-to-the-first-caller")
        return answer

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Seen]]:
    seen = Seen()
    with (
        serve(_upstream(seen)) as upstream,
        serve(create_app(upstream + "/v1", store="memory:")) as url,
    ):
        yield url, seen


def _stream(url: str, authorization: str) -> bytes:
    headers = {"authorization": authorization}
    with httpx.stream(
        "POST", url + "/v1/responses", json=BODY, headers=headers, timeout=30
    ) as answer:
        assert answer.status_code == 200
        return b"".join(answer.iter_bytes())


def test_one_connection_carries_the_streams_one_after_another(served: tuple[str, Seen]) -> None:
    """A stream's reader stops at the last chunk it needs (the usage); the ``[DONE]``
    and the end of the body are still read, so the connection goes back to the pool."""
    url, seen = served
    seen.ports.clear()
    for _ in range(5):
        assert b"response.completed" in _stream(url, "Bearer alice")
    assert len(seen.ports) == 5
    assert len(set(seen.ports)) == 1, seen.ports


def test_an_upstream_cookie_goes_to_no_later_request(served: tuple[str, Seen]) -> None:
    url, seen = served
    seen.cookies.clear()
    _stream(url, "Bearer alice")
    _stream(url, "Bearer bob")
    assert seen.cookies == [None, None]
