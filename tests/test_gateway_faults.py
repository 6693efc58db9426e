"""The gateway when the upstream, the client or the request misbehaves.

Everything runs over real sockets on 127.0.0.1: the gateway (``/v1/responses`` over a
chat upstream, ``/v1/chat/completions`` over a Responses upstream) and a scriptable fake
upstream (``proxy_support.FaultyUpstream``) under uvicorn, plus a closed port, a
listener that never accepts and a server that does not speak HTTP.  The client is the
official openai SDK with strict response validation (and httpx where the raw bytes
matter); Responses streams are also checked with the project's own validator.  The
async APIs the gateway is built on are tested on failing sources at the end.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import openai
import pytest
from faulty_upstream import (
    FaultyUpstream,
    Script,
    black_hole,
    chat_events,
    closed_port,
    not_http,
    responses_events,
    split_at,
    split_every,
)
from http_support import check_stream, parse_sse, serve
from openai import OpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import responses_stream as rs
from responses_stream.gateway import create_app

# Text that must survive byte-level splitting: multi-byte UTF-8, astral characters
# (surrogate pairs in JSON escapes), U+2028, NUL and a long line.
TEXTS = ["héllo ", "wörld 🌍🎉 ", "中文テキスト", " \u2028 line\x00nul ", "z" * 5000, " end"]
TIMEOUT = 1.0  # the gateway's connect and read timeouts in the tests that need them

CHAT, RESPONSES = "/v1/chat/completions", "/v1/responses"


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, FaultyUpstream]]:
    fake = FaultyUpstream()
    with serve(fake) as url:  # type: ignore[arg-type]
        yield url, fake


@contextmanager
def gateway(base: str, **timeouts: float) -> Iterator[str]:
    with serve(create_app(base + "/v1", store="memory:", **timeouts)) as url:
        yield url


@pytest.fixture(scope="module")
def proxied(upstream: tuple[str, FaultyUpstream]) -> Iterator[tuple[str, FaultyUpstream]]:
    """The gateway with short timeouts in front of the fake upstream."""
    base, fake = upstream
    with gateway(base, connect_timeout=TIMEOUT, read_timeout=TIMEOUT) as url:
        yield url, fake


def sdk(url: str, retries: int = 0) -> OpenAI:
    return OpenAI(
        base_url=url + "/v1",
        api_key="test",
        max_retries=retries,
        timeout=30,
        _strict_response_validation=True,
    )


def _name(request: pytest.FixtureRequest) -> str:
    return request.node.name


def upstream_body(path: str, texts: Sequence[str] = TEXTS) -> bytes:
    """A valid upstream stream for ``path`` of the gateway (the other API upstream)."""
    return b"".join(upstream_events(path, texts))


def upstream_events(
    path: str, texts: Sequence[str] = TEXTS, ascii_only: bool = False
) -> list[bytes]:
    if path == CHAT:
        return responses_events(texts, ascii_only=ascii_only)
    return chat_events(texts, ascii_only=ascii_only)


def upstream_path(path: str) -> str:
    return "/v1/responses" if path == CHAT else "/v1/chat/completions"


# -- what the client sees -------------------------------------------------------------
def chat_client_run(client: OpenAI, model: str) -> tuple[str, BaseException | None, Any]:
    """A chat stream read with the SDK's stream helper: the text, the error, the final."""
    text = ""
    with client.chat.completions.stream(
        model=model, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        try:
            for event in stream:
                if event.type == "content.delta":
                    text += event.delta
        except openai.APIError as exc:
            return text, exc, None
        return text, None, stream.get_final_completion()


def responses_client_run(client: OpenAI, model: str) -> tuple[list[Any], str]:
    """A Responses stream read with the SDK: its events and the final output text."""
    with client.responses.stream(model=model, input="hi") as stream:
        events = list(stream)
    final = events[-1].response
    text = "".join(
        c.text
        for item in final.output
        if item.type == "message"
        for c in item.content
        if c.type == "output_text"
    )
    return events, text


def raw_post(url: str, path: str, model: str, stream: bool = True, **kw: Any) -> httpx.Response:
    body: dict[str, Any] = {"model": model, "stream": stream}
    if path == CHAT:
        body["messages"] = [{"role": "user", "content": "hi"}]
    else:
        body["input"] = "hi"
    with httpx.Client(timeout=30) as client:
        return client.post(url + path, json=body, **kw)


def raw_responses(url: str, model: str) -> list[dict[str, Any]]:
    """The payloads of a Responses stream the gateway sent, checked as well-formed and valid."""
    response = raw_post(url, RESPONSES, model)
    assert response.status_code == 200, response.text
    payloads, done = parse_sse(response.text)
    assert not done
    check_stream(payloads)
    violations = [v for v in rs.validate_payloads(payloads, "openai") if v.severity == "error"]
    assert violations == [], [str(v) for v in violations]
    return payloads


def raw_chat(url: str, model: str) -> list[dict[str, Any]]:
    """The chunks of a chat stream the gateway sent; it must end with ``data: [DONE]``."""
    response = raw_post(url, CHAT, model)
    assert response.status_code == 200, response.text
    assert response.text.endswith("data: [DONE]\n\n")
    frames = response.text[:-2].split("\n\n")
    assert frames[-1] == "data: [DONE]"
    return [json.loads(f.removeprefix("data: ")) for f in frames[:-1]]


def complete_prefix_text(path: str, sent: bytes) -> str:
    """The text of the complete upstream events in ``sent`` (what must reach the client)."""
    text = ""
    for frame in sent.split(b"\n\n")[:-1]:
        data = b"".join(
            line[5:].removeprefix(b" ") for line in frame.split(b"\n") if line.startswith(b"data:")
        )
        if not data or data == b"[DONE]":
            continue
        payload = json.loads(data)
        if path == CHAT:  # a Responses upstream
            if payload.get("type") == "response.output_text.delta":
                text += payload["delta"]
        else:
            for choice in payload.get("choices") or []:
                text += (choice.get("delta") or {}).get("content") or ""
    return text


def error_body(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.body
    assert isinstance(body, dict), body
    assert set(body) == {"message", "type", "param", "code"}, body
    return body


def error_json(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return dict(body["error"])


def run_client(url: str, path: str, model: str, retries: int = 0) -> Any:
    """One streamed request with the SDK, read to the end (raising what it raises)."""
    client = sdk(url, retries)
    if path == CHAT:
        return chat_client_run(client, model)
    return responses_client_run(client, model)


# -- before the first byte: HTTP errors -------------------------------------------------
STATUS_ERRORS = [
    (400, openai.BadRequestError),
    (401, openai.AuthenticationError),
    (403, openai.PermissionDeniedError),
    (404, openai.NotFoundError),
    (422, openai.UnprocessableEntityError),
    (429, openai.RateLimitError),
    (500, openai.InternalServerError),
    (503, openai.InternalServerError),
]


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
@pytest.mark.parametrize(("status", "error"), STATUS_ERRORS)
def test_an_upstream_http_error_keeps_its_status_and_shape(
    proxied: tuple[str, FaultyUpstream],
    request: pytest.FixtureRequest,
    path: str,
    status: int,
    error: type[openai.APIStatusError],
) -> None:
    url, fake = proxied
    upstream_error = {
        "message": f"upstream says {status}",
        "type": "some_type",
        "param": "messages",
        "code": f"code_{status}",
    }
    record = fake.script(
        _name(request),
        Script(
            pieces=[json.dumps({"error": upstream_error}).encode()],
            status=status,
            content_type="application/json",
        ),
    )
    with pytest.raises(error) as caught:
        run_client(url, path, _name(request))
    assert caught.value.status_code == status
    assert error_body(caught.value) == upstream_error
    assert record.hits == 1
    assert record.paths == [upstream_path(path)]


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_a_429_with_retry_after_is_retried_by_the_sdk(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str
) -> None:
    url, fake = proxied
    limited = Script(
        pieces=[b'{"error": {"message": "slow down", "type": "requests", "code": null}}'],
        status=429,
        headers={"retry-after": "0.01"},
        content_type="application/json",
    )
    ok = Script(pieces=[upstream_body(path)])
    record = fake.script(_name(request), Script(**{**limited.__dict__, "then": [limited, ok]}))
    result = run_client(url, path, _name(request), retries=2)
    assert record.hits == 3
    if path == CHAT:
        text, exc, final = result
        assert exc is None and final.choices[0].finish_reason == "stop"
    else:
        events, text = result
        assert events[-1].type == "response.completed"
    assert text == "".join(TEXTS)


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_retry_after_reaches_the_client(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str
) -> None:
    """A Retry-After over the SDK's two-minute cap makes it give up: proof it got there."""
    url, fake = proxied
    headers = {"retry-after": "600", "retry-after-ms": "600000"}
    record = fake.script(
        _name(request),
        Script(
            pieces=[b'{"error": {"message": "quota", "type": "requests", "code": "rate"}}'],
            status=429,
            headers=headers,
            content_type="application/json",
        ),
    )
    with pytest.raises(openai.RateLimitError) as caught:
        run_client(url, path, _name(request), retries=3)
    assert record.hits == 1, "the SDK retried: the Retry-After header did not reach it"
    assert caught.value.response.headers["retry-after"] == "600"
    assert caught.value.response.headers["retry-after-ms"] == "600000"
    assert error_body(caught.value)["code"] == "rate"


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"<html>Bad Gateway</html>", "upstream HTTP 503: <html>Bad Gateway</html>"),
        (b"", "upstream HTTP 503"),
        (b'{"detail": "model overloaded"}', "model overloaded"),
        (b'{"error": "plain text error"}', "plain text error"),
        (b'{"error": {"message": "odd", "code": NaN, "param": [1]}}', "odd"),
    ],
)
def test_an_error_body_in_another_shape_is_reshaped(
    proxied: tuple[str, FaultyUpstream],
    request: pytest.FixtureRequest,
    path: str,
    body: bytes,
    expected: str,
) -> None:
    url, fake = proxied
    fake.script(_name(request), Script(pieces=[body], status=503, content_type="text/html"))
    with pytest.raises(openai.InternalServerError) as caught:
        run_client(url, path, _name(request))
    assert caught.value.status_code == 503
    error = error_body(caught.value)
    assert error["message"] == expected and error["type"] == "server_error"


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_a_refused_connection_is_502(path: str) -> None:
    with closed_port() as dead, gateway(dead) as url:
        with pytest.raises(openai.InternalServerError) as caught:
            run_client(url, path, "m")
        assert caught.value.status_code == 502
        assert error_body(caught.value)["code"] == "upstream_unreachable"
        response = raw_post(url, path, "m")
        assert response.status_code == 502
        assert "cannot reach the upstream" in error_json(response)["message"]


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_a_connect_timeout_is_504(path: str) -> None:
    with black_hole() as hole, gateway(hole, connect_timeout=TIMEOUT) as url:
        with pytest.raises(openai.InternalServerError) as caught:
            run_client(url, path, "m")
        assert caught.value.status_code == 504
        body = error_body(caught.value)
        assert body["code"] == "upstream_connect_timeout"
        assert f"{TIMEOUT:g}s" in body["message"]


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_an_answer_that_is_not_http_is_502(path: str) -> None:
    with not_http() as bad, gateway(bad) as url:
        with pytest.raises(openai.InternalServerError) as caught:
            run_client(url, path, "m")
        assert caught.value.status_code == 502


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_a_stall_before_the_headers_is_504_and_closes_the_upstream(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str
) -> None:
    url, fake = proxied
    record = fake.script(_name(request), Script(stall_headers=True))
    with pytest.raises(openai.InternalServerError) as caught:
        run_client(url, path, _name(request))
    assert caught.value.status_code == 504
    assert error_body(caught.value)["code"] == "upstream_timeout"
    assert record.closed.wait(10), "the gateway kept the stalled upstream connection open"


def assert_fails_in_stream(url: str, path: str, model: str, code: str) -> None:
    """A stream that began (``response.created`` goes out once the upstream accepted the
    request) and then failed with ``code``, nothing said; the same request not streamed
    is still a 502 with that code."""
    if path == CHAT:
        text, exc, _ = run_client(url, path, model)
        assert isinstance(exc, openai.APIError), exc
        assert not isinstance(exc, openai.LengthFinishReasonError)
        assert (exc.code, text) == (code, "")
    else:
        got, text = run_client(url, path, model)
        assert got[0].type == "response.created"
        assert [e.type for e in got[-2:]] == ["error", "response.failed"]
        assert (got[-2].code, text) == (code, "")
    whole = raw_post(url, path, model, stream=False)
    assert whole.status_code == 502
    assert whole.json()["error"]["code"] == code


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_a_close_before_the_first_event(
    proxied: tuple[str, FaultyUpstream],
    request: pytest.FixtureRequest,
    path: str,
    framing: str,
) -> None:
    url, fake = proxied
    body = upstream_body(path)
    first = body.index(b"\n\n")
    fake.script(
        _name(request),
        Script(pieces=[body[: first // 2]], end="cut", framing=framing, length=len(body)),
    )
    assert_fails_in_stream(url, path, _name(request), "upstream_disconnected")


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_a_json_answer_is_502(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str
) -> None:
    """An answer that is not an event stream is known at its headers: an HTTP error."""
    url, fake = proxied
    body = b'{"id": "x", "object": "chat.completion"}'
    fake.script(_name(request), Script(pieces=[body], content_type="application/json"))
    with pytest.raises(openai.InternalServerError) as caught:
        run_client(url, path, _name(request))
    assert caught.value.status_code == 502
    assert error_body(caught.value)["code"] == "upstream_not_a_stream"


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
@pytest.mark.parametrize("body", [b"", b": keep-alive\n\nretry: 5\n\n"])
def test_an_event_stream_without_events(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str, body: bytes
) -> None:
    url, fake = proxied
    fake.script(_name(request), Script(pieces=[body]))
    assert_fails_in_stream(url, path, _name(request), "upstream_empty")


def test_response_created_goes_out_when_the_upstream_accepts(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest
) -> None:
    """The upstream answers its headers at once and its first event 0.6 s later (a long
    prefill, within the gateway's read timeout): the client has ``response.created`` and
    ``response.in_progress`` within half that, and the stream is whole."""
    url, fake = proxied
    events = upstream_events(RESPONSES)
    prefill = 0.6 * TIMEOUT
    fake.script(_name(request), Script(pieces=[b": prefill\n\n", b"".join(events)], delay=prefill))
    body = {"model": _name(request), "input": "hi", "stream": True}
    arrived: dict[bytes, float] = {}
    raw = b""
    start = time.monotonic()
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", url + RESPONSES, json=body) as r,
    ):
        for piece in r.iter_raw():
            raw += piece
            for name in (b"response.created", b"response.in_progress", b"output_text.delta"):
                if name in raw:
                    arrived.setdefault(name, time.monotonic() - start)
    payloads = [json.loads(frame.split(b"data: ", 1)[1]) for frame in raw.split(b"\n\n") if frame]
    assert arrived[b"response.created"] < prefill / 2
    assert arrived[b"response.in_progress"] < prefill / 2
    assert arrived[b"output_text.delta"] >= prefill
    assert [str(v) for v in rs.validate_payloads(payloads, strict=True)] == []
    text = "".join(e["delta"] for e in payloads if e["type"] == "response.output_text.delta")
    assert payloads[-1]["type"] == "response.completed" and text == "".join(TEXTS)


# -- bad requests ---------------------------------------------------------------------
# (body, the param the 400 names or None for the body itself, a part of its message)
BAD_BODIES = [
    (b"{not json", None, "not valid JSON"),
    (b"\xff\xfe", None, "not valid JSON"),
    (b"[" * 100_000, None, "not valid JSON"),
    (b'{"stream": true, "temperature": NaN}', None, "NaN is not a JSON number"),
    (b'{"stream": true, "tool_choice": -Infinity}', None, "-Infinity is not a JSON number"),
    (b"[1, 2]", None, "must be a JSON object, not an array"),
    (b'"text"', None, "must be a JSON object, not a string"),
    (b"null", None, "must be a JSON object, not null"),
    (b"3", None, "must be a JSON object, not a number"),
    (b'{"stream": true}', "model", "Missing required parameter: 'model'"),
    (b'{"model": 7, "stream": true}', "model", "Invalid type for 'model'"),
]
_M = b'"model": "m", "stream": true, '
_HI = b'"messages": [{"role": "user", "content": "hi"}]'
BAD_CHAT = [
    (b'{"model": "m", "stream": true}', "messages", "Missing required parameter: 'messages'"),
    (b"{" + _M + b'"messages": "hi"}', "messages", "'messages'"),
    (b"{" + _M + b'"messages": [1]}', "messages[0]", "'messages[0]'"),
    (b"{" + _M + _HI + b', "stream_options": 3}', "stream_options", "expected `object"),
    (b"{" + _M + _HI + b', "tools": [{"function": 1}]}', "tools[0]", "'tools[0]"),
    (b"{" + _M + b'"messages": [{"role": "assistant", "tool_calls": [1]}]}', "messages[0]", ""),
    (b"{" + _M + _HI + b', "tool_choice": {"function": "f"}}', "tool_choice", "'tool_choice"),
]
BAD_RESPONSES = [
    (b"{" + _M + b'"input": [1]}', "input[0]", "'input[0]'"),
    (b"{" + _M + b'"input": "hi", "tools": {"type": "function"}}', "tools", "'tools'"),
    (b"{" + _M + b'"input": "hi", "tools": [{"type": "function"}]}', "tools[0]", "'tools[0]"),
    (b"{" + _M + b'"input": "hi", "reasoning": "high"}', "reasoning", "'reasoning'"),
    (
        b"{" + _M + b'"input": "hi", "tools": [{"type": "namespace", "name": "n", '
        b'"tools": [{}, 2]}]}',
        "tools[0].tools",
        "'tools[0].tools",
    ),
]


@pytest.mark.parametrize(
    ("path", "body", "param", "expected"),
    [(CHAT, *case) for case in BAD_BODIES + BAD_CHAT]
    + [(RESPONSES, *case) for case in BAD_BODIES + BAD_RESPONSES],
)
def test_a_bad_request_body_is_400_naming_the_field(
    proxied: tuple[str, FaultyUpstream], path: str, body: bytes, param: str | None, expected: str
) -> None:
    url, fake = proxied
    before = fake.requests
    with httpx.Client(timeout=30) as client:
        response = client.post(url + path, content=body)
    assert response.status_code == 400, response.text
    error = error_json(response)
    assert expected in error["message"], error
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param or (param is not None and error["param"].startswith(param))
    assert fake.requests == before  # never sent upstream


def test_the_openresponses_route_serves_that_dialect(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest
) -> None:
    url, fake = proxied
    record = fake.script(_name(request), Script(pieces=[upstream_body(RESPONSES)]))
    response = httpx.post(
        url + "/openresponses/v1/responses",
        json={"model": _name(request), "stream": True, "input": "hi"},
        timeout=30,
    )
    assert response.status_code == 200 and record.hits == 1
    assert response.text.endswith("data: [DONE]\n\n")
    payloads, done = parse_sse(response.text)
    assert done
    found = rs.validate_payloads(payloads, "openresponses")
    assert [v for v in found if v.severity == "error"] == []


# -- after the first byte ------------------------------------------------------------------
def _cut_points(path: str) -> list[int]:
    """Byte offsets inside the stream: mid event, mid multi-byte character, after an event."""
    body = upstream_body(path)
    mid_text = body.index("🌍".encode()) + 2
    second = body.index(b"\n\n") + 2
    return [second + 5, mid_text, body.index(b"\n\n", mid_text) + 2, len(body) - 3]


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
@pytest.mark.parametrize("framing", ["chunked", "length"])
@pytest.mark.parametrize("cut", range(4))
def test_a_mid_stream_close_ends_with_an_error(
    proxied: tuple[str, FaultyUpstream],
    request: pytest.FixtureRequest,
    path: str,
    framing: str,
    cut: int,
) -> None:
    url, fake = proxied
    body = upstream_body(path)
    at = _cut_points(path)[cut]
    script = Script(pieces=[body[:at]], end="cut", framing=framing, length=len(body))
    fake.script(_name(request), script)
    expected = complete_prefix_text(path, body[:at])
    if path == CHAT:
        text, exc, _ = run_client(url, path, _name(request))
        assert isinstance(exc, openai.APIError), exc
        assert not isinstance(exc, openai.LengthFinishReasonError)
        assert "broke off" in exc.message
        assert text == expected
        chunks = raw_chat(url, _name(request))
        assert "error" in chunks[-1] and chunks[-1]["error"]["code"] == "upstream_disconnected"
        assert all(c.get("choices", [{}])[0].get("finish_reason") is None for c in chunks[:-1])
    else:
        events, text = run_client(url, path, _name(request))
        assert [e.type for e in events[-2:]] == ["error", "response.failed"]
        assert events[-2].code == "upstream_disconnected"
        assert text == expected
        payloads = raw_responses(url, _name(request))
        assert payloads[-2]["type"] == "error"


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_a_stall_mid_stream_times_out_with_an_error(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str
) -> None:
    url, fake = proxied
    events = upstream_events(path)
    half = len(events) // 2
    record = fake.script(_name(request), Script(pieces=events[:half], end="stall"))
    expected = complete_prefix_text(path, b"".join(events[:half]))
    if path == CHAT:
        text, exc, _ = run_client(url, path, _name(request))
        assert isinstance(exc, openai.APIError)
        assert not isinstance(exc, openai.LengthFinishReasonError)
        assert exc.code == "upstream_timeout"
        assert f"sent nothing for {TIMEOUT:g}s" in exc.message
    else:
        got, text = run_client(url, path, _name(request))
        assert [e.type for e in got[-2:]] == ["error", "response.failed"]
        assert got[-2].code == "upstream_timeout"
    assert text == expected
    assert record.closed.wait(10), "the stalled upstream connection was left open"


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_a_trickling_upstream_is_not_cut_off(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str
) -> None:
    """Pieces of a few bytes, each well within the read timeout, for longer than it."""
    url, fake = proxied
    body = upstream_body(path)
    # about 40 pieces, cutting through each multi-byte character of the first texts
    cuts = set(range(0, len(body), len(body) // 40 + 1))
    cuts |= set([i for i in range(len(body)) if not _utf8_boundary(body, i)][:20])
    pieces = split_at(body, sorted(cuts))
    delay = 0.04
    assert delay * len(pieces) > 2 * TIMEOUT
    assert sum(not _utf8_boundary(body, i) for i in cuts) > 10
    fake.script(_name(request), Script(pieces=pieces, delay=delay))
    if path == CHAT:
        text, exc, final = run_client(url, path, _name(request))
        assert exc is None and final.choices[0].message.content == "".join(TEXTS)
    else:
        events, text = run_client(url, path, _name(request))
        assert events[-1].type == "response.completed"
    assert text == "".join(TEXTS)


def _utf8_boundary(data: bytes, at: int) -> bool:
    return at >= len(data) or (data[at] & 0xC0) != 0x80


def test_a_one_byte_at_a_time_upstream_keeps_every_character(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest
) -> None:
    """Raw UTF-8 and JSON escapes (a surrogate pair), split at every byte."""
    url, fake = proxied
    texts = ["é", "🌍", "\u2028", "\x00", "中", "🎉", "\u2029x"]
    for path in (RESPONSES, CHAT):
        for ascii_only in (False, True):
            events = upstream_events(path, texts, ascii_only=ascii_only)
            if ascii_only:
                assert b"\\ud83c\\udf89" in b"".join(events)  # 🎉 as a surrogate pair
            name = f"{_name(request)}-{path}-{ascii_only}"
            fake.script(name, Script(pieces=split_every(b"".join(events), 1)))
            if path == RESPONSES:
                got, text = run_client(url, path, name)
                assert got[-1].type == "response.completed"
            else:
                text, exc, _ = run_client(url, path, name)
                assert exc is None
            assert text == "".join(texts), (path, ascii_only)


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_a_lone_surrogate_becomes_a_replacement_character(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str
) -> None:
    url, fake = proxied
    texts = ["a\ud800b", "\udfffc"]
    events = upstream_events(path, texts, ascii_only=True)
    fake.script(_name(request), Script(pieces=events))
    if path == RESPONSES:
        got, text = run_client(url, path, _name(request))
        assert got[-1].type == "response.completed"
    else:
        text, exc, _ = run_client(url, path, _name(request))
        assert exc is None
    assert text == "a\ufffdb\ufffdc"


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
@pytest.mark.parametrize(
    "garbage",
    [
        b"data: {not json\n\n",
        b"data: \xff\xfe\x00\n\n",
        b"data: [1, 2]\n\n",
        b"\x00" * 64 + b"\n\n",
    ],
)
def test_garbage_mid_stream_ends_with_an_error(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str, garbage: bytes
) -> None:
    url, fake = proxied
    events = upstream_events(path)
    head = events[:4]
    fake.script(_name(request), Script(pieces=[*head, garbage, *events[4:]]))
    expected = complete_prefix_text(path, b"".join(head))
    if path == CHAT:
        text, exc, final = run_client(url, path, _name(request))
        # a line that is not an SSE field, or JSON that is not an event object, is
        # skipped by the Responses -> chat adapter: the stream goes on
        if garbage.startswith(b"\x00") or garbage == b"data: [1, 2]\n\n":
            assert exc is None and text == "".join(TEXTS)
            return
        assert isinstance(exc, openai.APIError) and text == expected
    else:
        got, text = run_client(url, path, _name(request))
        if garbage.startswith(b"\x00"):
            assert got[-1].type == "response.completed" and text == "".join(TEXTS)
            return
        assert [e.type for e in got[-2:]] == ["error", "response.failed"]
        assert text == expected
        raw_responses(url, _name(request))


def test_a_responses_stream_without_its_terminal_event_is_an_error_not_length(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest
) -> None:
    """A Responses upstream that ends its body cleanly before response.completed."""
    url, fake = proxied
    events = upstream_events(CHAT)
    fake.script(_name(request), Script(pieces=events[:-3]))
    text, exc, _ = run_client(url, CHAT, _name(request))
    assert isinstance(exc, openai.APIError)
    assert not isinstance(exc, openai.LengthFinishReasonError)
    assert "before its terminal event" in exc.message
    assert text == complete_prefix_text(CHAT, b"".join(events[:-3]))


def test_an_upstream_error_event_reaches_the_chat_client_as_an_error(
    proxied: tuple[str, FaultyUpstream], request: pytest.FixtureRequest
) -> None:
    """An ``error`` + ``response.failed`` from a Responses upstream, mid-stream."""
    url, fake = proxied
    proc = rs.StreamProcessor("openai", model="m", ids=rs.CountingIds(), created_at=1)
    proc.start()
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("partial")
    proc.fail("the model crashed", code="server_error")
    enc = rs.DIALECTS["openai"].encoder()
    fake.script(_name(request), Script(pieces=[enc.encode(e) for e in proc.drain()]))
    text, exc, _ = run_client(url, CHAT, _name(request))
    assert isinstance(exc, openai.APIError)
    assert not isinstance(exc, openai.LengthFinishReasonError)
    assert exc.message == "the model crashed" and text == "partial"


# -- the client goes away ---------------------------------------------------------------------
@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_a_client_disconnect_closes_the_upstream_within_one_event(
    upstream: tuple[str, FaultyUpstream], request: pytest.FixtureRequest, path: str
) -> None:
    base, fake = upstream
    texts = [f"t{i} " for i in range(100)]
    events = upstream_events(path, texts)
    record = fake.script(_name(request), Script(pieces=events, delay=0.1))
    wanted = 3
    # upstream events needed for the client to see `wanted` text deltas
    needed = _events_for_deltas(path, events, wanted)
    with gateway(base) as url, httpx.Client(timeout=30) as client:
        body: dict[str, Any] = {"model": _name(request), "stream": True}
        if path == CHAT:
            body["messages"] = [{"role": "user", "content": "hi"}]
        else:
            body["input"] = "hi"
        with client.stream("POST", url + path, json=body) as response:
            assert response.status_code == 200
            seen = 0
            for line in response.iter_lines():
                if path == CHAT and '"content":"t' in line.replace(" ", ""):
                    seen += 1
                elif path == RESPONSES and line == "event: response.output_text.delta":
                    seen += 1
                if seen >= wanted:
                    break
        assert record.closed.wait(10), "the upstream stream was not closed"
    assert record.sent_at_close is not None
    assert record.sent_at_close <= needed + 1, (record.sent_at_close, needed)
    assert record.sent_at_close < len(events)


def _events_for_deltas(path: str, events: list[bytes], wanted: int) -> int:
    seen = 0
    for i, event in enumerate(events):
        if path == CHAT:
            seen += b"response.output_text.delta" in event
        else:
            seen += b'"content": "t' in event
        if seen == wanted:
            return i + 1
    raise AssertionError("not enough text events")


# -- the async APIs, on a source that raises ----------------------------------------------------
class Interrupted(Exception):
    code = "my_code"


def _chat_source(
    texts: Sequence[str], error: BaseException | None, closed: list[bool]
) -> AsyncIterator[str]:
    async def gen() -> AsyncIterator[str]:
        try:
            for event in chat_events(texts, finish=None):
                yield event.decode()[6:-2]
                await asyncio.sleep(0)
            if error is not None:
                raise error
        finally:
            closed.append(True)

    return gen()


def _responses_source(
    texts: Sequence[str], error: BaseException | None, closed: list[bool]
) -> AsyncIterator[str]:
    events = responses_events(texts)
    cut = next(i for i, e in enumerate(events) if b"output_text.done" in e)

    async def gen() -> AsyncIterator[str]:
        try:
            for event in events[:cut]:
                yield event.decode().split("\ndata: ", 1)[1][:-2]
            if error is not None:
                raise error
        finally:
            closed.append(True)

    return gen()


ERRORS = [
    (httpx.ReadTimeout("timed out"), "source_timeout", "ReadTimeout: timed out"),
    (TimeoutError(), "source_timeout", "TimeoutError"),
    (httpx.RemoteProtocolError("peer closed"), "source_failed", "RemoteProtocolError"),
    (Interrupted("upstream went away"), "my_code", "upstream went away"),
    (ValueError("bad"), "source_failed", "ValueError: bad"),
]


async def _collect(frames: AsyncIterator[Any]) -> list[Any]:
    return [frame async for frame in frames]


@pytest.mark.parametrize(("error", "code", "message"), ERRORS)
def test_asse_from_chat_ends_a_failing_source_with_an_error(
    error: BaseException, code: str, message: str
) -> None:
    closed: list[bool] = []
    frames = asyncio.run(_collect(rs.asse_from_chat(_chat_source(TEXTS, error, closed))))
    payloads, done = parse_sse(b"".join(frames).decode())
    assert not done  # the openai dialect has no closing frame
    final = check_stream(payloads)
    assert [p["type"] for p in payloads[-2:]] == ["error", "response.failed"]
    assert payloads[-2]["code"] == code and message in payloads[-2]["message"]
    assert [v for v in rs.validate_payloads(payloads) if v.severity == "error"] == []
    text = "".join(c["text"] for item in final["output"] for c in item.get("content", []))
    assert text == "".join(TEXTS)
    assert closed == [True]


@pytest.mark.parametrize(("error", "code", "message"), ERRORS)
def test_aevents_from_chat_ends_a_failing_source_with_an_error(
    error: BaseException, code: str, message: str
) -> None:
    closed: list[bool] = []
    events = asyncio.run(_collect(rs.aevents_from_chat(_chat_source(TEXTS, error, closed))))
    assert [type(e).__struct_config__.tag for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2].code == code and message in events[-2].message
    assert closed == [True]


@pytest.mark.parametrize(("error", "code", "message"), ERRORS)
def test_achat_sse_from_responses_ends_a_failing_source_with_an_error_chunk(
    error: BaseException, code: str, message: str
) -> None:
    closed: list[bool] = []
    source = _responses_source(TEXTS, error, closed)
    frames = asyncio.run(_collect(rs.achat_sse_from_responses(source)))
    assert frames[-1] == b"data: [DONE]\n\n"
    chunks = [json.loads(f[6:]) for f in frames[:-1]]
    assert set(chunks[-1]) == {"error"}
    assert chunks[-1]["error"]["code"] == code and message in chunks[-1]["error"]["message"]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1])
    assert text == "".join(TEXTS)
    assert closed == [True]


def test_achat_sse_from_responses_handles_a_failing_sync_source() -> None:
    def gen() -> Iterator[str]:
        events = responses_events(["a", "b"])
        for event in events[:5]:
            yield event.decode().split("\ndata: ", 1)[1][:-2]
        raise OSError("disk gone")

    frames = asyncio.run(_collect(rs.achat_sse_from_responses(gen())))
    assert frames[-1] == b"data: [DONE]\n\n"
    assert json.loads(frames[-2][6:])["error"]["message"].endswith("OSError: disk gone")


def test_the_async_apis_close_an_abandoned_source() -> None:
    async def run() -> tuple[list[bool], list[bool]]:
        closed_chat: list[bool] = []
        frames = rs.asse_from_chat(_chat_source(TEXTS, None, closed_chat))
        for _ in range(4):
            await anext(frames)
        await frames.aclose()
        closed_responses: list[bool] = []
        chunks = rs.achat_sse_from_responses(_responses_source(TEXTS, None, closed_responses))
        await anext(chunks)
        await chunks.aclose()
        return closed_chat, closed_responses

    assert asyncio.run(run()) == ([True], [True])


def test_a_clean_end_of_the_source_is_unchanged() -> None:
    """No exception: a chat stream that just stops is incomplete, not failed."""
    closed: list[bool] = []
    frames = asyncio.run(_collect(rs.asse_from_chat(_chat_source(["a"], None, closed))))
    payloads, _ = parse_sse(b"".join(frames).decode())
    assert payloads[-1]["type"] == "response.incomplete"
    assert closed == [True]


# -- the async APIs served over HTTP, read by the SDK ----------------------------------------------
def _failing_app() -> Starlette:
    async def responses(request: Request) -> Response:
        source = _chat_source(TEXTS, httpx.ReadError("connection reset"), [])
        return StreamingResponse(rs.asse_from_chat(source), media_type="text/event-stream")

    async def chat(request: Request) -> Response:
        source = _responses_source(TEXTS, httpx.ReadError("connection reset"), [])
        frames = rs.achat_sse_from_responses(source)
        return StreamingResponse(frames, media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


def test_the_sdk_sees_the_async_apis_failures_as_errors() -> None:
    with serve(_failing_app()) as url:
        client = sdk(url)
        text, exc, _ = chat_client_run(client, "m")
        assert isinstance(exc, openai.APIError)
        assert not isinstance(exc, openai.LengthFinishReasonError)
        assert "ReadError: connection reset" in exc.message
        assert text == "".join(TEXTS)
        events, text = responses_client_run(client, "m")
        assert [e.type for e in events[-2:]] == ["error", "response.failed"]
        assert text == "".join(TEXTS)
