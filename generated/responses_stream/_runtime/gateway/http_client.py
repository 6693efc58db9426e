"""The gateway's HTTP client for one upstream, on aiohttp's client.

What the gateway asks of it, and what aiohttp is set up to give:

- kept connections to the upstream, each idle one for ``keepalive`` seconds, at most
  :attr:`Transport.max_connections` at once (no cap by default);
- the proxy, TLS trust and client certificate of its :class:`Transport` (the standard
  proxy variables when it names no proxy);
- answers compressed with gzip, deflate or brotli decoded; redirects followed; no
  cookie kept (a cookie one client's answer set would go with the next's request);
- timeouts on every wait: ``connect`` bounds getting a connection (a new one, or a
  free one under the cap: :class:`ConnectTimeout`), ``read`` every wait for the
  server, its answer's head as each later piece (``TimeoutError``), so a slow trickle
  is not cut off;
- a request sent on a kept connection that the server closed without a byte of
  answer (it closed it as the request went out) sent again once, on a new connection:
  aiohttp does this for the idempotent methods, :meth:`Client.request` for a POST;
- anything else that goes wrong is a :class:`ClientError` saying what.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from multidict import CIMultiDictProxy
from yarl import URL

from ..core.errors import BadValue, ResponsesStreamError
from .transport import Transport, redact

# aiohttp sends a GET (and the other idempotent methods) again itself
_RETRIED_BY_AIOHTTP = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})


class ClientError(ResponsesStreamError):
    """An exchange with the server failed (it refused, reset, cut or garbled it)."""


class ConnectTimeout(ResponsesStreamError, TimeoutError):
    """No connection to the server within the connect timeout."""


async def _reused(session: Any, context: SimpleNamespace, params: Any) -> None:
    context.trace_request_ctx.reused = True


def _tracing() -> aiohttp.TraceConfig:
    """Tells each request whether it went out on a kept connection."""
    config = aiohttp.TraceConfig()
    config.on_connection_reuseconn.append(_reused)
    config.freeze()
    return config


class Client:
    """Requests to the origin of ``base_url`` (its path prefixes every request's), made
    as its ``transport`` says, through ``proxy`` when given.  Its connections belong to
    the event loop it first sends on."""

    def __init__(
        self,
        base_url: str,
        *,
        connect: float,
        read: float,
        keepalive: float = 4.0,
        transport: Transport | None = None,
        proxy: str | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadValue(f"not an http(s) URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.authority = parts.netloc.rpartition("@")[2]
        self.transport = transport or Transport()
        self.proxy = proxy
        self._tls = self.transport.tls() if parts.scheme == "https" else None
        self.connect_timeout, self.read_timeout, self.keepalive = connect, read, keepalive
        self._session: aiohttp.ClientSession | None = None
        self.closed = False

    def _open(self) -> aiohttp.ClientSession:
        if self.closed:
            raise ClientError("the client is closed")
        connector = aiohttp.TCPConnector(
            limit=self.transport.max_connections or 0,
            limit_per_host=0,
            keepalive_timeout=self.keepalive,
            ssl=self._tls if self._tls is not None else True,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(
                total=None,
                connect=self.connect_timeout,
                sock_connect=self.connect_timeout,
                sock_read=self.read_timeout,
            ),
            trust_env=False,  # the proxy was chosen by the caller (Transport.proxy_for)
            trace_configs=[_tracing()],
        )
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes = b"",
    ) -> Response:
        """Send the request; return once the answer's status and headers came."""
        for text in (path, *headers, *headers.values()):
            if "\r" in text or "\n" in text:
                raise ClientError("a request header holds a line break")
        session = self._session or self._open()
        for attempt in (0, 1):
            sent = SimpleNamespace(reused=False)
            try:
                raw = await session.request(
                    method,
                    URL(self.base_url + path),
                    headers=headers,
                    data=body or None,
                    proxy=self.proxy,
                    trace_request_ctx=sent,
                )
            except aiohttp.ServerDisconnectedError:
                if sent.reused and attempt == 0 and method not in _RETRIED_BY_AIOHTTP:
                    continue
                raise ClientError("the upstream closed the connection without answering") from None
            except (TimeoutError, aiohttp.ClientError) as exc:
                raise self._error(exc) from None
            return Response(raw)
        raise AssertionError("unreachable")

    def _error(self, exc: BaseException) -> BaseException:
        """What a failed request raises: a connect timeout, a read timeout, or a
        :class:`ClientError` naming the part that failed."""
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            return ConnectTimeout(
                f"no connection to {self.authority} within {self.connect_timeout:g}s"
            )
        if isinstance(exc, TimeoutError):
            return exc
        if isinstance(exc, aiohttp.ClientProxyConnectionError):
            return ClientError(f"cannot connect to the proxy {redact(self.proxy or '')}: {exc}")
        if isinstance(exc, aiohttp.ClientHttpProxyError):
            return ClientError(f"the proxy refused the connection: {exc.status} {exc.message}")
        if isinstance(exc, aiohttp.ClientConnectorError):
            return ClientError(f"cannot connect to {self.authority}: {exc}")
        if isinstance(exc, aiohttp.TooManyRedirects):
            return ClientError(f"the upstream redirected too many times: {exc.message}")
        if isinstance(exc, aiohttp.ClientResponseError):
            return ClientError(f"the upstream sent a malformed HTTP answer: {exc.message}")
        return ClientError(f"the exchange with {self.authority} failed: {describe(exc)}")

    async def close(self) -> None:
        """Close the connections; the client takes no more requests."""
        self.closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def abandon(self) -> None:
        """Let go of the connections of an event loop no longer running (they cannot be
        closed from another); the client takes no more requests."""
        self.closed = True
        session, self._session = self._session, None
        if session is not None:
            session.detach()


class Response:
    """One answer: ``status`` and ``headers`` (looked up in any case), then its body
    through :meth:`pieces`.  :meth:`close` gives the connection back when the body was
    read to its end, else closes it."""

    __slots__ = ("_raw", "headers", "status")

    def __init__(self, raw: aiohttp.ClientResponse) -> None:
        self._raw = raw
        self.status = raw.status
        self.headers: CIMultiDictProxy[str] = raw.headers

    @property
    def complete(self) -> bool:
        """The body came to its end."""
        return self._raw.content.is_eof()

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body as it comes; ``TimeoutError`` after ``read`` seconds of silence,
        :class:`ClientError` when it breaks off."""
        content = self._raw.content
        while True:
            try:
                data = await content.readany()
            except TimeoutError:
                raise
            except aiohttp.ClientPayloadError as exc:
                rest = _buffered(content)
                if rest:  # what came before the break is passed on first
                    yield rest
                raise ClientError(f"the upstream closed the connection mid-answer: {exc}") from None
            except aiohttp.ClientError as exc:
                raise ClientError(f"the answer broke off: {describe(exc)}") from None
            if not data:
                return
            yield data

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
        async for _ in self.pieces():
            pass

    def abort(self) -> None:
        """Cut the connection under a read in progress: the read fails."""
        self._raw.close()

    def close(self) -> None:
        if self.complete:
            self._raw.release()
        else:
            self._raw.close()


def _buffered(content: aiohttp.StreamReader) -> bytes:
    """What the body had brought, unread, when it broke off.  aiohttp's reader raises
    the error before handing out what came first (aio-libs/aiohttp#3026) and offers no
    public way to read it; its ``_read_nowait`` does (a test holds it to that)."""
    read = getattr(content, "_read_nowait", None)
    try:
        data = read(-1) if read is not None else b""
    except Exception:
        return b""
    return data if isinstance(data, bytes) else b""


def describe(exc: BaseException) -> str:
    """An exception as ``Type: text`` (no traceback)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
