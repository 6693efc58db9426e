"""The gateway's HTTP/1.1 client for its upstream: kept connections, streamed bodies.

A request is one write (its head and body together); its answer is parsed by
httptools (llhttp, in C) straight from the transport's callbacks, and the body comes
out as the pieces the socket gave.  Measured against aiohttp's client on one short
stream, request to end of body: about 80 µs of the client's CPU against 290.

- :class:`Client` keeps the idle connections to one origin (``http`` or ``https``) for
  ``keepalive`` seconds, newest first; a connection that was kept and dies before its
  answer's first byte is retried once on a new one (the server closed it as the
  request went out: it was never read).
- Timeouts: ``connect`` bounds opening a connection (:class:`ConnectTimeout`);
  ``read`` bounds every wait for the server, its answer's head as each later piece
  (``TimeoutError``): a slow trickle is not cut off.
- Anything else that goes wrong on the way is a :class:`ClientError` saying what.
- ``accept-encoding: identity`` is sent: the body is read as the server sends it.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from typing import cast
from urllib.parse import urlsplit

import httptools

from ..core.errors import BadValue, ResponsesStreamError

# body bytes a response buffers before the socket is no longer read
HIGH_WATER = 256 * 1024


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The system's trusted authorities, loaded once."""
    return ssl.create_default_context()


class ClientError(ResponsesStreamError):
    """An exchange with the server failed (it refused, reset, cut or garbled it)."""


class ConnectTimeout(ResponsesStreamError, TimeoutError):
    """No connection to the server within the connect timeout."""


class Client:
    """Requests to the origin of ``base_url`` (its path prefixes every request's);
    ``https`` verifies the server against ``tls`` (default: the system's authorities)."""

    def __init__(
        self,
        base_url: str,
        *,
        connect: float,
        read: float,
        keepalive: float = 4.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadValue(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        default = 443 if parts.scheme == "https" else 80
        self.port = parts.port or default
        self.prefix = parts.path.rstrip("/")
        name = f"[{self.host}]" if ":" in self.host else self.host
        self.authority = name if self.port == default else f"{name}:{self.port}"
        self.tls = parts.scheme == "https"
        self._tls_context = tls  # default: the system's trusted authorities
        self.connect_timeout, self.read_timeout, self.keepalive = connect, read, keepalive
        self._idle: list[_Connection] = []
        self.closed = False

    async def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes = b"",
    ) -> Response:
        """Send the request; return once the answer's status and headers came."""
        head = self._head(method, path, headers, len(body))
        for attempt in (0, 1):
            connection, reused = self._idle_connection(), True
            if connection is None:
                connection, reused = await self._connect(), False
            response = connection.send(head + body if body else head, self.read_timeout)
            try:
                await response.started()
            except _NeverAnswered as exc:
                if reused and attempt == 0:
                    continue
                raise ClientError(str(exc)) from None
            except BaseException:
                response.close()
                raise
            return response
        raise AssertionError("unreachable")

    def _head(self, method: str, path: str, headers: Mapping[str, str], length: int) -> bytes:
        for text in (path, *headers, *headers.values()):
            if "\r" in text or "\n" in text:
                raise ClientError("a request header holds a line break")
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"host: {self.authority}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines += ["accept-encoding: identity", f"content-length: {length}", "", ""]
        try:
            return "\r\n".join(lines).encode("latin-1")
        except UnicodeEncodeError:
            raise ClientError("a request header holds a character HTTP cannot carry") from None

    def _idle_connection(self) -> _Connection | None:
        idle, now = self._idle, time.monotonic()
        while idle:
            connection = idle.pop()
            if connection.usable and now - connection.idle_since < self.keepalive:
                return connection
            connection.abort()
        return None

    async def _connect(self) -> _Connection:
        if self.closed:
            raise ClientError("the client is closed")
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, connection = await loop.create_connection(
                    lambda: _Connection(self),
                    self.host,
                    self.port,
                    ssl=(self._tls_context or _tls_context()) if self.tls else None,
                    server_hostname=self.host if self.tls else None,
                )
        except TimeoutError:
            raise ConnectTimeout(
                f"no connection to {self.authority} within {self.connect_timeout:g}s"
            ) from None
        except OSError as exc:
            raise ClientError(f"cannot connect to {self.authority}: {exc}") from None
        return connection

    def release(self, connection: _Connection) -> None:
        """Keep ``connection`` for the next request, or close it when the client is."""
        if self.closed:
            connection.abort()
            return
        connection.idle_since = time.monotonic()
        self._idle.append(connection)

    def forget(self, connection: _Connection) -> None:
        if connection in self._idle:
            self._idle.remove(connection)

    def close(self) -> None:
        self.closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.abort()


class _NeverAnswered(ResponsesStreamError):
    """The connection ended before a byte of the answer came."""


class Response:
    """One answer: ``status`` and ``headers`` (lower-case names; a repeated header's
    values joined by ``, ``), then its body through :meth:`pieces`.  :meth:`close`
    gives the connection back when the body was read to its end, else closes it."""

    def __init__(self, connection: _Connection, read_timeout: float) -> None:
        self._connection: _Connection | None = connection
        self._read_timeout = read_timeout
        self.status = 0
        self.headers: dict[str, str] = {}
        self._head = False  # the status and headers came
        self._answered = False  # a byte of the answer came
        self._pieces: list[bytes] = []
        self._buffered = 0
        self._paused = False
        self.complete = False  # the body came to its end
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None

    # -- from the connection -------------------------------------------------------
    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _headers_done(self, status: int) -> None:
        self.status, self._head = status, True
        self._wake()

    def _body(self, data: bytes) -> None:
        self._pieces.append(data)
        self._buffered += len(data)
        connection = self._connection
        if self._buffered > HIGH_WATER and not self._paused and connection is not None:
            self._paused = True
            connection.pause()
        self._wake()

    def _end(self) -> None:
        self.complete = True
        self._wake()

    def _fail(self, error: BaseException) -> None:
        if not self.complete and self._error is None:
            self._error = error
        self._wake()

    # -- for the reader --------------------------------------------------------------
    async def _wait(self) -> None:
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(self._read_timeout, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    async def started(self) -> None:
        """Wait for the status and headers."""
        while not self._head:
            if self._error is not None:
                raise self._error
            await self._wait()

    def _take(self) -> list[bytes]:
        pieces, self._pieces, self._buffered = self._pieces, [], 0
        if self._paused and self._connection is not None:
            self._paused = False
            self._connection.resume()
        return pieces

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body as it comes; ``TimeoutError`` after ``read`` seconds of silence,
        :class:`ClientError` when it breaks off."""
        while True:
            if self._pieces:
                pieces = self._take()
                yield pieces[0] if len(pieces) == 1 else b"".join(pieces)
                continue
            if self.complete:
                return
            if self._error is not None:
                raise self._error
            await self._wait()

    async def read(self, limit: int) -> bytes:
        """Up to ``limit`` bytes of the body."""
        out = bytearray()
        async for piece in self.pieces():
            out += piece
            if len(out) >= limit:
                break
        return bytes(out[:limit])

    async def wait_end(self) -> None:
        """Wait for the end of the body, whatever is left unread."""
        while not self.complete:
            if self._error is not None:
                raise self._error
            self._take()
            await self._wait()

    def abort(self) -> None:
        """Cut the connection under a read in progress: the read fails."""
        connection = self._connection
        if connection is not None:
            connection.abort()

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self.complete and connection.reusable:
            connection.done()
        else:
            connection.abort()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class _Connection(asyncio.Protocol):
    """One connection: a response at a time, parsed as its bytes come (one parser for
    the connection's answers: llhttp starts afresh after each message)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.transport: asyncio.Transport | None = None
        self.response: Response | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.lost = False
        self.reusable = False
        self.idle_since = 0.0
        self._names: list[bytes] = []
        self._values: list[bytes] = []
        self._length = False  # the answer's length is known (a length or chunked)

    @property
    def usable(self) -> bool:
        return not self.lost and self.transport is not None and not self.transport.is_closing()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def send(self, data: bytes, read_timeout: float) -> Response:
        assert self.transport is not None
        self.response = Response(self, read_timeout)
        self.reusable, self._length = False, False
        self._names, self._values = [], []
        self.transport.write(data)
        return self.response

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:  # bytes nobody asked for: the connection is spoiled
            self.abort()
            return
        response._answered = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            response._fail(ClientError("the upstream switched protocols"))
            self.abort()
        except httptools.HttpParserError as exc:
            response._fail(ClientError(f"the upstream sent a malformed HTTP answer: {exc}"))
            self.abort()

    def eof_received(self) -> bool:
        self._ended()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.client.forget(self)
        self._ended(exc)

    def _ended(self, exc: BaseException | None = None) -> None:
        response = self.response
        if response is None or response.complete:
            return
        if not response._answered:
            response._fail(_NeverAnswered("the upstream closed the connection without answering"))
        elif response._head and not self._length:  # a body that ends with the connection
            self.reusable = False
            response._end()
        else:
            detail = f": {exc}" if exc else ""
            response._fail(ClientError(f"the upstream closed the connection mid-answer{detail}"))

    def pause(self) -> None:
        if self.transport is not None and not self.lost:
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.transport is not None and not self.lost:
            self.transport.resume_reading()

    def done(self) -> None:
        """The answer was read to its end: the connection is free."""
        self.response = None
        if self.usable:
            self.client.release(self)
        else:
            self.abort()

    def abort(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.abort()

    # -- httptools callbacks ---------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self._names.append(name)
        self._values.append(value)

    def on_headers_complete(self) -> None:
        response = self.response
        assert response is not None
        headers: dict[str, str] = {}
        for raw, value in zip(self._names, self._values, strict=True):
            name = raw.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[name] = f"{headers[name]}, {text}" if name in headers else text
            if name == "content-length" or (name == "transfer-encoding" and "chunked" in text):
                self._length = True
        status = self.parser.get_status_code()
        if status in (204, 304) or 100 <= status < 200:
            self._length = True
        response.headers = headers
        response._headers_done(status)

    def on_body(self, body: bytes) -> None:
        if self.response is not None:
            self.response._body(body)

    def on_message_complete(self) -> None:
        response = self.response
        if response is not None:
            self.reusable = self.parser.should_keep_alive()
            response._end()
