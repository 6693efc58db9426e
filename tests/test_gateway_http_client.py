"""The gateway's HTTP client (aiohttp's, set up by ``http_client``) against real
sockets: servers on 127.0.0.1 written byte by byte, so each answer is exactly what a
test means it to be."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from responses_stream._runtime.gateway.http_client import Client, ClientError
from responses_stream._runtime.gateway.transport import Transport
from responses_stream._runtime.gateway.upstream import Upstream

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Seen"], Awaitable[None]]


@dataclass
class Seen:
    connections: int = 0
    heads: list[bytes] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)


async def read_request(reader: asyncio.StreamReader, seen: Seen) -> bool:
    """One request off the connection (head and content-length body); False at its end."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return False
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    seen.heads.append(head)
    seen.bodies.append(await reader.readexactly(length))
    return True


def run(handler: Handler, test: Callable[[Client, Seen], Awaitable[Any]], **options: Any) -> Any:
    """``test`` with a client of a server that answers each connection with ``handler``."""

    async def main() -> Any:
        seen = Seen()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.connections += 1
            try:
                await handler(reader, writer, seen)
            finally:
                writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        settings = {"connect": 5.0, "read": 5.0, **options}
        client = Client(f"http://127.0.0.1:{port}/v1", **settings)
        try:
            return await test(client, seen)
        finally:
            await client.close()
            server.close()

    return asyncio.run(main())


def answer(body: bytes, *, headers: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        + headers
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )


async def keep_answering(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
    while await read_request(r, seen):
        w.write(answer(b'{"n": %d}' % len(seen.heads)))
        await w.drain()


async def get(client: Client, path: str = "/models") -> tuple[int, bytes]:
    return await send(client, "GET", path)


async def send(client: Client, method: str, path: str = "/models") -> tuple[int, bytes]:
    response = await client.request(method, path, {}, b"{}" if method == "POST" else b"")
    try:
        return response.status, await response.read(1 << 20)
    finally:
        response.close()


def test_a_request_carries_host_length_its_headers_and_the_encodings_it_decodes() -> None:
    async def test(client: Client, seen: Seen) -> None:
        response = await client.request(
            "POST", "/chat/completions", {"authorization": "Bearer k"}, b'{"a": 1}'
        )
        assert (response.status, await response.read(100)) == (200, b'{"n": 1}')
        response.close()
        head = seen.heads[0].decode()
        assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
        lines = set(head.lower().split("\r\n"))
        port = client.port
        assert {f"host: 127.0.0.1:{port}", "authorization: bearer k"} <= lines
        assert {"accept-encoding: gzip, deflate, br", "content-length: 8"} <= lines
        assert seen.bodies == [b'{"a": 1}']

    run(keep_answering, test)


def test_a_connection_read_to_its_end_carries_the_next_request() -> None:
    async def test(client: Client, seen: Seen) -> None:
        for n in range(1, 4):
            assert await get(client) == (200, b'{"n": %d}' % n)
        assert seen.connections == 1

    run(keep_answering, test)


def test_an_answer_closed_before_its_end_takes_its_connection_with_it() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        while await read_request(r, seen):
            whole = answer(b'{"n": %d}' % len(seen.heads))
            w.write(whole[:-3])
            await w.drain()
            await asyncio.sleep(0.1)
            w.write(whole[-3:])
            await w.drain()

    async def test(client: Client, seen: Seen) -> None:
        response = await client.request("GET", "/models", {})
        response.close()  # before the end of its body
        assert await get(client) == (200, b'{"n": 2}')
        assert seen.connections == 2

    run(handler, test)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_kept_connection_the_server_closed_as_the_request_went_out_is_retried(
    method: str,
) -> None:
    """The server reads the second request on the kept connection and closes it without
    a byte of answer (llama.cpp's server does this to a kept connection): the request
    goes again on a new connection, once (aiohttp retries a GET itself, the client a
    POST)."""

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        if not await read_request(r, seen):
            return
        w.write(answer(b"first" if seen.connections == 1 else b"again"))
        await w.drain()
        await read_request(r, seen)  # read, then closed unanswered

    async def test(client: Client, seen: Seen) -> None:
        assert await send(client, method) == (200, b"first")
        assert await send(client, method) == (200, b"again")
        assert seen.connections == 2
        assert len(seen.heads) == 3  # the second request twice
        if method == "POST":
            assert seen.bodies[1:] == [b"{}", b"{}"]

    run(handler, test)


def test_a_new_connection_closed_without_an_answer_fails_without_a_retry() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        await read_request(r, seen)

    async def test(client: Client, seen: Seen) -> None:
        with pytest.raises(ClientError, match="closed the connection without answering"):
            await client.request("POST", "/chat/completions", {}, b"{}")
        assert seen.connections == 1

    run(handler, test)


@pytest.mark.parametrize("form", ["length", "chunked", "until-close"])
def test_each_body_form_reads_whole(form: str) -> None:
    body = b"data: " + b"x" * 700_000 + b"\n\n"  # more than the client buffers unread

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        await read_request(r, seen)
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        if form == "length":
            w.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        elif form == "chunked":
            w.write(head + b"transfer-encoding: chunked\r\n\r\n")
            for start in range(0, len(body), 65536):
                piece = body[start : start + 65536]
                w.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                await w.drain()
            w.write(b"0\r\n\r\n")
        else:
            w.write(head + b"connection: close\r\n\r\n" + body)
        await w.drain()
        if form != "until-close":
            await read_request(r, seen)

    async def test(client: Client, seen: Seen) -> None:
        response = await client.request("POST", "/chat/completions", {}, b"{}")
        await asyncio.sleep(0.2)  # the server writes all while nothing is read
        got = b"".join([piece async for piece in response.pieces()])
        assert got == body
        assert response.complete
        response.close()

    run(handler, test)


def test_silence_past_the_read_timeout_is_a_timeout() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        await read_request(r, seen)
        w.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await w.drain()
        await asyncio.sleep(2)

    async def test(client: Client, seen: Seen) -> None:
        response = await client.request("POST", "/chat/completions", {}, b"{}")
        pieces = response.pieces()
        assert await anext(pieces) == b"hello"
        with pytest.raises(TimeoutError):
            await anext(pieces)
        response.close()

    run(handler, test, read=0.2)


def test_no_head_within_the_read_timeout_is_a_timeout() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        await read_request(r, seen)
        await asyncio.sleep(2)

    async def test(client: Client, seen: Seen) -> None:
        with pytest.raises(TimeoutError):
            await client.request("POST", "/chat/completions", {}, b"{}")

    run(handler, test, read=0.2)


def test_a_body_cut_mid_answer_is_an_error() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        await read_request(r, seen)
        w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part")
        await w.drain()

    async def test(client: Client, seen: Seen) -> None:
        response = await client.request("GET", "/models", {})
        with pytest.raises(ClientError, match="closed the connection mid-answer"):
            await response.read(1000)

    run(handler, test)


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_what_came_before_a_cut_is_read_before_the_error(framing: str) -> None:
    """The server sends part of the body and closes; both reach the client before it
    reads: the part comes out whole, then the error."""

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        await read_request(r, seen)
        if framing == "length":
            w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\ndata: part\n\n")
        else:
            head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            w.write(head + b"c\r\ndata: part\n\n\r\n" + b"20\r\nda")
        await w.drain()

    async def test(client: Client, seen: Seen) -> None:
        response = await client.request("POST", "/chat/completions", {}, b"{}")
        await asyncio.sleep(0.2)  # the part and the close both came
        got = b""
        with pytest.raises(ClientError, match="closed the connection mid-answer"):
            async for piece in response.pieces():
                got += piece
        assert got.startswith(b"data: part\n\n")
        response.close()

    run(handler, test)


def test_a_malformed_answer_is_an_error() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter, seen: Seen) -> None:
        await read_request(r, seen)
        w.write(b"HTTP/1.1 2xx NOPE\r\n\r\n")
        await w.drain()
        await asyncio.sleep(1)

    async def test(client: Client, seen: Seen) -> None:
        with pytest.raises(ClientError, match="malformed HTTP answer"):
            await client.request("GET", "/models", {})

    run(handler, test)


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async def test(client: Client, seen: Seen) -> None:
        with pytest.raises(ClientError, match="line break"):
            await client.request("GET", "/models", {"authorization": "Bearer k\r\nx-evil: 1"})
        assert seen.connections == 0

    run(keep_answering, test)


def test_a_refused_connection_is_an_error_naming_the_server() -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        client = Client(f"http://127.0.0.1:{port}", connect=5, read=5)
        with pytest.raises(ClientError, match=f"cannot connect to 127.0.0.1:{port}"):
            await client.request("GET", "/models", {})

    asyncio.run(main())


@pytest.mark.parametrize("url", ["ftp://example.com/v1", "http:///v1", "example.com"])
def test_a_base_url_it_cannot_use_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="not an http"):
        Client(url, connect=1, read=1)


def _self_signed(folder: Path) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a certificate with")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def test_https_verifies_the_server(tmp_path: Path) -> None:
    """Over TLS the exchange is the same; a server the client's authorities do not
    vouch for is refused (by default, the system's: a self-signed certificate is not)."""
    cert, key = _self_signed(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)

    async def main() -> None:
        seen = Seen()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.connections += 1
            try:
                await keep_answering(reader, writer, seen)
            except (ssl.SSLError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=served)
        port = server.sockets[0].getsockname()[1]
        trusting = Transport(ca_file=str(cert))
        client = Client(f"https://127.0.0.1:{port}/v1", connect=5, read=5, transport=trusting)
        try:
            assert await get(client) == (200, b'{"n": 1}')
            assert await get(client) == (200, b'{"n": 2}')
            assert seen.connections == 1
            stranger = Client(f"https://127.0.0.1:{port}/v1", connect=5, read=5)
            with pytest.raises(ClientError, match="CERTIFICATE_VERIFY_FAILED"):
                await get(stranger)
            await stranger.close()
        finally:
            await client.close()
            server.close()

    asyncio.run(main())


def test_an_upstream_closed_opens_a_new_client_at_its_next_request() -> None:
    """A gateway whose lifespan ended (its upstream closed, whether it had been used or
    not) and is served again still reaches its upstream."""

    async def test(client: Client, seen: Seen) -> None:
        upstream = Upstream(f"http://127.0.0.1:{client.port}/v1")
        await upstream.aclose()  # closed before its first request
        assert upstream.closed
        assert await upstream.get("/models", None) == (200, {"n": 1})
        assert not upstream.closed
        await upstream.aclose()
        assert await upstream.get("/models", None) == (200, {"n": 2})
        await upstream.aclose()

    run(keep_answering, test)
