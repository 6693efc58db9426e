"""Chat input as it comes off the wire, in every form the chat APIs take.

A real HTTP server on 127.0.0.1 serves recorded chat streams as SSE (the genuine
recordings under ``tests/recordings/chat/`` framed as a provider frames them, and
the raw SSE files under ``tests/recorded/``), cut into pieces that fall inside
lines and UTF-8 characters.  Real ``httpx`` clients read them, and each form they
give goes to the matching API:

- ``iter_lines()`` / ``aiter_lines()``: SSE lines, without their line ends;
- ``iter_bytes()`` / ``aiter_bytes()``: SSE bytes, as they arrive and in blocks of
  1, 7 and 4096 bytes;
- ``chat_data_lines(...)``: ``data:`` payload strings.

Each stream must be the one the parsed chunks give (ids and timestamps fixed), and
that stream must pass the validator and the openai SDK's strict models.  Items of
no accepted form end the stream with ``error`` and ``response.failed``, saying what
came and what is accepted.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import parse_sse, serve
from invariants import check_stream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import responses_stream as rs
from responses_stream import (
    CountingIds,
    aevents_from_chat,
    asse_from_chat,
    chat_data_lines,
    events_from_chat,
    sse_from_chat,
)

HERE = Path(__file__).parent
RECORDINGS = HERE / "recordings" / "chat"
RECORDED = HERE / "recorded"
CREATED_AT = 1_700_000_000
PIECE = 97  # the server writes the body in pieces of this many bytes: lines and characters split

# genuine recordings: text with non-ASCII characters, one cut short, tool calls (one, two)
JSONL = [
    "snowflake/pai-snowflake-claude-thinking.jsonl",
    "openrouter/pai-openrouter-web-search-annotations.jsonl",
    "openai/openai-python-tool-call-2018feb6.jsonl",
    "openai/pai-temporal-complex-agent-parallel-tools.jsonl",
]
# raw SSE as servers sent it (LF and CRLF line ends), with reasoning and tool calls
RAW = ["llamacpp_text.sse", "deepseek_reasoner_crlf.sse", "vllm_reasoning_tools.sse"]
STREAMS = [f"recordings/{name}" for name in JSONL] + [f"recorded/{name}" for name in RAW]
ACCEPTED = (
    "chat input items must be parsed chunks (dicts), data: payload strings (JSON or [DONE]), "
    "SSE lines (str) or SSE bytes"
)


def sse_body(stream: str) -> bytes:
    """The SSE body the server sends for ``stream``."""
    kind, name = stream.split("/", 1)
    if kind == "recorded":
        return (RECORDED / name).read_bytes()
    lines = (RECORDINGS / name).read_text(encoding="utf-8").splitlines()
    frames = [f"data: {line}\n\n" for line in lines if line.strip()]
    # a comment first, as some providers send while the model starts
    return (": processing\n\n" + "".join(frames) + "data: [DONE]\n\n").encode("utf-8")


def parsed_chunks(body: bytes) -> list[dict[str, Any]]:
    """The chunks of an SSE body, read here without the package's parser."""
    text = body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    chunks = []
    for block in text.split("\n\n"):
        data = [ln[5:].removeprefix(" ") for ln in block.split("\n") if ln.startswith("data:")]
        if data and data != ["[DONE]"]:
            chunks.append(json.loads("\n".join(data)))
    return chunks


# -- the server ----------------------------------------------------------------------
def make_app() -> Starlette:
    async def chat(request: Request) -> Response:
        body = sse_body(request.path_params["stream"])

        async def pieces() -> AsyncIterator[bytes]:
            for at in range(0, len(body), PIECE):
                yield body[at : at + PIECE]
                await asyncio.sleep(0)

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return Starlette(routes=[Route("/chat/{stream:path}", chat, methods=["GET"])])


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve(make_app()) as url:
        yield url


# -- running the APIs ----------------------------------------------------------------
def _kw(dialect: str) -> dict[str, Any]:
    return {"dialect": dialect, "ids": CountingIds(), "created_at": CREATED_AT}


def fixed(out: bytes) -> bytes:
    """A stream with ``completed_at`` (the clock's time at the end) made fixed; ids and
    ``created_at`` are fixed by the arguments of every run."""
    return re.sub(rb'"completed_at":\d+', b'"completed_at":1700000001', out)


def from_events(events: Iterable[Any], dialect: str) -> bytes:
    """Typed events as the dialect's SSE, closing frame included."""
    enc = rs.DIALECTS[dialect].encoder()
    return b"".join(enc.encode(event) for event in events) + enc.close()


def run_sync(api: str, items: Iterable[Any], dialect: str = "openai") -> bytes:
    if api == "events":
        return fixed(from_events(events_from_chat(items, **_kw(dialect)), dialect))
    return fixed(b"".join(sse_from_chat(items, **_kw(dialect))))


async def run_async(api: str, items: AsyncIterable[Any], dialect: str = "openai") -> bytes:
    if api == "events":
        events = [e async for e in aevents_from_chat(items, **_kw(dialect))]
        return fixed(from_events(events, dialect))
    return fixed(b"".join([frame async for frame in asse_from_chat(items, **_kw(dialect))]))


def expected(stream: str, dialect: str = "openai") -> bytes:
    """The stream the parsed chunks give, checked."""
    out = run_sync("sse", parsed_chunks(sse_body(stream)), dialect)
    check(out, dialect)
    return out


def check(out: bytes, dialect: str = "openai") -> list[dict[str, Any]]:
    """The payloads of a complete stream that passes the validator and the strict SDK."""
    payloads, done = parse_sse(out.decode("utf-8"))
    assert done == bool(rs.DIALECTS[dialect].encoder().close())  # the closing frame, if any
    errors = [v for v in rs.validate_payloads(payloads, dialect) if v.severity == "error"]
    assert errors == [], errors
    check_stream(payloads, dialect)  # the validator again, and each event through the SDK
    return payloads


@pytest.fixture(scope="module")
def references() -> dict[tuple[str, str], bytes]:
    return {}


def reference(refs: dict[tuple[str, str], bytes], stream: str, dialect: str) -> bytes:
    if (stream, dialect) not in refs:
        refs[stream, dialect] = expected(stream, dialect)
    return refs[stream, dialect]


# -- the forms over real HTTP ----------------------------------------------------------
SyncForm = Callable[[httpx.Response], Iterable[Any]]
SYNC_FORMS: dict[str, SyncForm] = {
    "iter_lines": lambda r: r.iter_lines(),
    "iter_lines+LF": lambda r: (line + "\n" for line in r.iter_lines()),
    "iter_lines+CRLF": lambda r: (line + "\r\n" for line in r.iter_lines()),
    "iter_bytes": lambda r: r.iter_bytes(),
    "iter_bytes(1)": lambda r: r.iter_bytes(1),
    "iter_bytes(7)": lambda r: r.iter_bytes(7),
    "iter_bytes(4096)": lambda r: r.iter_bytes(4096),
    "data payloads": lambda r: chat_data_lines(r.iter_bytes()),
    "parsed chunks": lambda r: (
        json.loads(d) for d in chat_data_lines(r.iter_bytes()) if d[:1] == "{"
    ),
}


@pytest.mark.parametrize("form", SYNC_FORMS)
@pytest.mark.parametrize("api", ["events", "sse"])
@pytest.mark.parametrize("stream", STREAMS)
def test_sync_forms_give_the_stream_of_parsed_chunks(
    stream: str, api: str, form: str, base_url: str, references: dict[tuple[str, str], bytes]
) -> None:
    want = reference(references, stream, "openai")
    with httpx.Client(base_url=base_url, timeout=30) as client:
        with client.stream("GET", f"/chat/{stream}") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            got = run_sync(api, SYNC_FORMS[form](response))
    assert got == want
    check(got)


AsyncForm = Callable[[httpx.Response], AsyncIterable[Any]]


async def _payload_strings(response: httpx.Response) -> AsyncIterator[str]:
    parser = rs.SSEParser()
    async for block in response.aiter_bytes():
        for message in parser.feed(block):
            yield message.data
    for message in parser.close():
        yield message.data


ASYNC_FORMS: dict[str, AsyncForm] = {
    "aiter_lines": lambda r: r.aiter_lines(),
    "aiter_bytes": lambda r: r.aiter_bytes(),
    "aiter_bytes(1)": lambda r: r.aiter_bytes(1),
    "aiter_bytes(7)": lambda r: r.aiter_bytes(7),
    "aiter_bytes(4096)": lambda r: r.aiter_bytes(4096),
    "data payloads": _payload_strings,
}


@pytest.mark.parametrize("form", ASYNC_FORMS)
@pytest.mark.parametrize("api", ["events", "sse"])
@pytest.mark.parametrize("stream", STREAMS)
def test_async_forms_give_the_stream_of_parsed_chunks(
    stream: str, api: str, form: str, base_url: str, references: dict[tuple[str, str], bytes]
) -> None:
    want = reference(references, stream, "openai")

    async def main() -> bytes:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            async with client.stream("GET", f"/chat/{stream}") as response:
                return await run_async(api, ASYNC_FORMS[form](response))

    got = asyncio.run(main())
    assert got == want
    check(got)


@pytest.mark.parametrize("stream", [STREAMS[0], STREAMS[-1]])
def test_openresponses_takes_the_same_forms(
    stream: str, base_url: str, references: dict[tuple[str, str], bytes]
) -> None:
    want = reference(references, stream, "openresponses")
    with httpx.Client(base_url=base_url, timeout=30) as client:
        for form in ("iter_lines", "iter_bytes(7)"):
            with client.stream("GET", f"/chat/{stream}") as response:
                got = run_sync("sse", SYNC_FORMS[form](response), "openresponses")
            assert got == want, form

    async def lines() -> bytes:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            async with client.stream("GET", f"/chat/{stream}") as response:
                return await run_async("events", response.aiter_lines(), "openresponses")

    assert asyncio.run(lines()) == want


# -- splits anywhere, without a network ------------------------------------------------
@pytest.mark.parametrize(
    "stream", ["recordings/" + JSONL[0], "recorded/deepseek_reasoner_crlf.sse"]
)
def test_bytes_split_at_every_point_give_the_same_stream(
    stream: str, references: dict[tuple[str, str], bytes]
) -> None:
    body = sse_body(stream)
    want = reference(references, stream, "openai")
    assert any(b >= 0x80 for b in body) or b"\r\n" in body  # something to split inside
    for at in range(0, len(body) + 1, max(1, len(body) // 200)):
        assert run_sync("sse", [body[:at], body[at:]]) == want, at
    assert run_sync("sse", [body]) == want
    assert run_sync("events", [bytes([b]) for b in body]) == want


def test_a_bom_and_a_last_event_without_its_blank_line() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "héllo"}, "finish_reason": "stop"}]}
    want = run_sync("sse", [chunk])
    line = "data: " + json.dumps(chunk, ensure_ascii=False)
    assert run_sync("sse", ["\ufeff" + line]) == want  # no blank line: the end dispatches it
    assert run_sync("sse", [("\ufeff" + line).encode()]) == want
    assert run_sync("sse", ["event: message", "id: 1", "retry: 5", line, ""]) == want


def test_the_sse_caps_apply_to_sse_input() -> None:
    big = b"data: " + b"x" * (16 * 1024 * 1024) + b"\n\n"
    first = b'data: {"choices":[{"index":0,"delta":{"content":"kept"}}]}\n\n'
    payloads = check(run_sync("sse", [first, big]))
    assert payloads[-2]["code"] == "sse_limit_exceeded"
    assert payloads[-1]["response"]["output"][0]["content"][0]["text"] == "kept"


def test_payloads_from_chat_data_lines_stay_payloads() -> None:
    # a payload that reads like an SSE line (empty, "data: ...") is still a payload
    for raw in (b"data:\n\n", b"data: data: x\n\n", b"data: : x\n\n"):
        payloads = check(run_sync("sse", chat_data_lines([raw])))
        assert payloads[-2]["type"] == "error", raw
        assert "not JSON" in payloads[-2]["message"], raw


# -- items of no accepted form -----------------------------------------------------------
TEXT = {"choices": [{"index": 0, "delta": {"content": "kept"}}]}
STOP = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
JUNK: list[tuple[Any, str]] = [
    (5, "got int"),
    (2.5, "got float"),
    (None, "got None"),
    ([TEXT], "got list"),
    (("data: x",), "got tuple"),
    (object(), "got object"),
    ("hello", "got a str that is neither JSON nor an SSE line ('hello')"),
    ("   ", "got a str that is neither JSON nor an SSE line ('   ')"),
    ("42", "got a str that is neither JSON nor an SSE line ('42')"),
]


async def _aiter(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def _run_any(api: str, items: list[Any]) -> bytes:
    """``api`` is events | sse | aevents | asse."""
    if api.startswith("a"):
        return asyncio.run(run_async(api[1:], _aiter(items)))
    return run_sync(api, items)


def _failure(out: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The error event of a stream that failed cleanly, and all its payloads."""
    payloads = check(out)
    assert [p["type"] for p in payloads[-2:]] == ["error", "response.failed"]
    assert payloads[-1]["response"]["status"] == "failed"
    return payloads[-2], payloads


@pytest.mark.parametrize("api", ["events", "sse", "aevents", "asse"])
@pytest.mark.parametrize(("junk", "says"), JUNK, ids=[says for _, says in JUNK])
def test_a_junk_item_ends_the_stream_saying_what_came(junk: Any, says: str, api: str) -> None:
    error, payloads = _failure(_run_any(api, [TEXT, junk, TEXT, STOP]))
    assert error["code"] == "invalid_upstream_chunk"
    assert says in error["message"] and ACCEPTED in error["message"], error["message"]
    assert payloads[-1]["response"]["output"][0]["content"][0]["text"] == "kept"


@pytest.mark.parametrize("api", ["events", "sse", "aevents", "asse"])
def test_a_junk_item_in_sse_input_ends_it_too(api: str) -> None:
    line = "data: " + json.dumps(TEXT)
    error, _ = _failure(_run_any(api, [line, "", 7, line, ""]))
    assert "got int" in error["message"]


@pytest.mark.parametrize("api", ["events", "sse", "aevents", "asse"])
@pytest.mark.parametrize(
    ("after", "says"),
    [
        (TEXT, "got a parsed chunk after SSE input"),
        (json.dumps(TEXT), "got a data: payload string after SSE input"),
        ("[DONE]", "got a data: payload string after SSE input"),
    ],
)
def test_mixing_sse_and_chunks_fails_and_says_so(api: str, after: Any, says: str) -> None:
    line = "data: " + json.dumps(TEXT)
    for before in ([line, ""], [line], [(line + "\n\n").encode()]):
        error, payloads = _failure(_run_any(api, [*before, after, STOP]))
        assert error["code"] == "invalid_upstream_chunk"
        assert says in error["message"], error["message"]
        texts = [p["delta"] for p in payloads if p["type"] == "response.output_text.delta"]
        assert "".join(texts) in ("", "kept")


@pytest.mark.parametrize("api", ["events", "sse", "aevents", "asse"])
def test_sse_after_chunks_is_read(api: str) -> None:
    # parsed chunks, then SSE: nothing is pending on the chunk side, so it is read in order
    line = "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": " more"}}]})
    payloads = check(
        _run_any(api, [TEXT, line, "", b"data: " + json.dumps(STOP).encode() + b"\n\n"])
    )
    assert payloads[-1]["type"] == "response.completed"
    assert payloads[-1]["response"]["output"][0]["content"][0]["text"] == "kept more"


def test_lines_of_bytes_as_a_file_gives_them() -> None:
    body = sse_body(STREAMS[0])
    assert run_sync("events", body.splitlines(keepends=True)) == run_sync("sse", [body])
