"""How the gateway reaches one upstream: its proxy, its TLS trust and identity, its
connection cap (the ``--config`` keys of an upstream, see ``config_file``).

- ``proxy``: the forward proxy's URL (``http://`` or ``https://``, credentials in it
  allowed); an ``https`` upstream is reached through it with ``CONNECT``.  Without it,
  the standard variables decide, as curl and most HTTP clients read them:
  ``HTTPS_PROXY`` for an ``https`` upstream, ``HTTP_PROXY`` for an ``http`` one (lower
  case too), unless ``NO_PROXY`` names the upstream's host.
- ``ca_file``: the PEM bundle of the authorities an ``https`` upstream is checked
  against, instead of the system's.
- ``client_cert`` and ``client_key``: the certificate (PEM, with its key unless
  ``client_key`` names it) presented to an upstream that asks for one (mutual TLS).
- ``verify: false``: no check of the upstream's certificate at all (said at start-up
  and on ``/health``, see :meth:`Transport.warnings`).
- ``max_connections``: at most this many connections to the upstream at once (streams
  beyond wait for one, up to the connect timeout); without it, no cap.
"""

from __future__ import annotations

import functools
import ssl
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ..core.errors import BadValue


class TransportError(BadValue):
    """A setting that cannot be used; ``key`` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@functools.cache
def system_tls() -> ssl.SSLContext:
    """The system's trusted authorities, loaded once."""
    return ssl.create_default_context()


@dataclass(frozen=True)
class Transport:
    """One upstream's proxy, TLS and connection cap (see the module doc).  Files are
    read when :meth:`tls` is first called; a setting that cannot be used is a
    :class:`TransportError` naming its key."""

    proxy: str | None = None
    ca_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    verify: bool = True
    max_connections: int | None = None

    def __post_init__(self) -> None:
        if self.proxy is not None:
            parts = urlsplit(self.proxy)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise TransportError(
                    "proxy", f"the proxy must be an http(s) URL, not {redact(self.proxy)!r}"
                )
        if self.client_key is not None and self.client_cert is None:
            raise TransportError("client_key", "client_key needs client_cert")
        if not self.verify and self.ca_file is not None:
            raise TransportError("ca_file", "ca_file has no use with verify: false")
        cap = self.max_connections
        if cap is not None and (type(cap) is not int or cap < 1):
            raise TransportError(
                "max_connections", "max_connections must be a whole number of at least 1"
            )

    @functools.cached_property
    def _context(self) -> ssl.SSLContext:
        if self.ca_file is None and self.client_cert is None and self.verify:
            return system_tls()
        try:
            context = ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise TransportError(
                "ca_file", f"cannot read the ca_file {self.ca_file}: {exc}"
            ) from None
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_cert is not None:
            try:
                context.load_cert_chain(self.client_cert, self.client_key)
            except (OSError, ssl.SSLError) as exc:
                files = " and ".join(f for f in (self.client_cert, self.client_key) if f)
                raise TransportError(
                    "client_cert", f"cannot use the client certificate {files}: {exc}"
                ) from None
        return context

    def tls(self) -> ssl.SSLContext:
        """The TLS context an ``https`` upstream is reached with."""
        return self._context

    def proxy_for(self, url: str) -> str | None:
        """The proxy a request to ``url`` goes through: the configured one, else the
        one the environment names for it (None: straight to the upstream)."""
        if self.proxy is not None:
            return self.proxy
        return environment_proxy(url)

    def warnings(self, name: str) -> list[str]:
        """What an operator must be told about upstream ``name``'s settings."""
        if self.verify:
            return []
        return [f"upstream {name}: its TLS certificate is not verified (verify: false)"]


def environment_proxy(url: str) -> str | None:
    """The proxy the standard variables name for ``url`` (``HTTPS_PROXY`` or
    ``HTTP_PROXY`` by its scheme, upper or lower case), None when there is none or
    ``NO_PROXY`` names its host."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme)
    if not proxy or parts.hostname is None:
        return None
    # the standard library's own NO_PROXY matching (typeshed leaves it out)
    if urllib.request.proxy_bypass_environment(parts.netloc, proxies):  # type: ignore[attr-defined]
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def redact(url: str) -> str:
    """``url`` without the password it may carry (for logs and errors)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))
