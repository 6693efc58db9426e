"""The response store: what ``store``, ``previous_response_id``, ``item_reference`` and
the ``/v1/responses/{id}`` routes read and write.

:func:`open_store` picks a backend from a URL (and is the only place that imports one):

* ``sqlite:///relative/file.db``, ``sqlite:////absolute/file.db`` or a bare path ending in
  ``.db``, ``.sqlite`` or ``.sqlite3``: one SQLite file (:mod:`.sqlite`), for one host;
* ``redis://[user:password@]host[:port][/db]``, ``rediss://...`` (TLS) or
  ``unix:///path/to/redis.sock[?db=N]``: Redis (:mod:`.redis`, the ``gateway`` extra),
  shared by every replica; ``?prefix=NAME`` sets the key prefix (default
  ``responses-stream:``) and ``?ttl=SECONDS`` an expiry;
* ``memory:``: a dict in this process, lost when it ends (tests, ``store: false`` only use).

The records and the interface are in :mod:`.base` (a conversation's in :mod:`.conversation`),
the in-memory backend in :mod:`.memory`; their names are exported here too.
"""

from __future__ import annotations

from pathlib import Path

from ...core.errors import BadValue
from .base import (
    RECORD_FORMAT,
    Store,
    StoredConversation,
    StoredResponse,
    StoreError,
    StoreUnavailable,
    decode_record,
    encode_record,
    hide_password,
)
from .memory import MemoryStore

__all__ = [
    "RECORD_FORMAT",
    "MemoryStore",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "StoredConversation",
    "StoredResponse",
    "decode_record",
    "encode_record",
    "hide_password",
    "open_store",
    "sqlite_path",
]

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
ACCEPTED = (
    "sqlite:///relative/file.db, sqlite:////absolute/file.db, a path ending in "
    ".db/.sqlite/.sqlite3, redis://[:password@]host[:port][/db], rediss://..., "
    "unix:///path/to/redis.sock[?db=N] (Redis URLs take ?prefix=NAME and ?ttl=SECONDS) "
    "or memory:"
)


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///`` URL (three slashes, then a relative or absolute path)."""
    if not url.lower().startswith("sqlite:///"):
        raise BadValue(f"a SQLite store URL is sqlite:///relative.db or sqlite:////abs.db: {url!r}")
    rest = url[len("sqlite:///") :]
    if not rest or rest.endswith("/"):
        raise BadValue(f"the SQLite store URL {url!r} names no file")
    if "?" in rest or "#" in rest:
        raise BadValue(f"the SQLite store URL {url!r} takes no query or fragment")
    if rest == ":memory:":
        raise BadValue("an in-memory SQLite store would be lost: use memory: instead")
    return Path(rest)


def open_store(url: str) -> Store:
    """The store ``url`` names; ValueError (one line, naming the accepted forms) otherwise."""
    text = url.strip() if isinstance(url, str) else ""
    lower = text.lower()
    if text == "memory:":
        return MemoryStore()
    if lower.startswith("sqlite:"):
        from .sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(text))
    if lower.startswith(("redis://", "rediss://", "unix://")):
        from .redis import RedisStore

        return RedisStore(text)
    if text and "://" not in text and lower.endswith(SQLITE_SUFFIXES):
        from .sqlite import SQLiteStore

        return SQLiteStore(Path(text).expanduser())
    raise BadValue(f"unknown store {hide_password(text)!r}: use {ACCEPTED}")
