"""The SQLite store: one file on this host, durable once ``put`` returns.

One connection (WAL journal, ``synchronous=FULL``) in autocommit mode, so each statement is
its own committed transaction; every call runs in a worker thread under a lock, so the event
loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ...core.errors import BadValue
from .base import (
    LogEntry,
    RunClaim,
    RunState,
    StoredConversation,
    StoredResponse,
    StoreUnavailable,
    decode_record,
    encode_json,
    encode_record,
    new_secret,
)
from .conversation import (
    decode_conversation,
    decode_item,
    encode_conversation,
)

T = TypeVar("T")

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses "
    "(id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, record BLOB NOT NULL)",
    # (tenant, item id) -> the response holding it (item_reference); rows go with it
    "CREATE TABLE IF NOT EXISTS item_index (tenant TEXT NOT NULL, item_id TEXT NOT NULL, "
    "response_id TEXT NOT NULL, PRIMARY KEY (tenant, item_id))",
    "CREATE INDEX IF NOT EXISTS item_index_by_response ON item_index (response_id)",
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL)",
    # background runs: who runs each and until when, a cancel asked, the end; and its events
    "CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "lease_until REAL NOT NULL, cancel INTEGER NOT NULL DEFAULT 0, "
    "ended INTEGER NOT NULL DEFAULT 0, expires REAL NOT NULL, dialect TEXT NOT NULL, "
    "tenant TEXT)",  # NULL once released: it no longer counts against its tenant's limit
    "CREATE TABLE IF NOT EXISTS run_log (id TEXT NOT NULL, seq INTEGER NOT NULL, "
    "frame BLOB NOT NULL, PRIMARY KEY (id, seq))",
    # conversations, and their items in the order they were added (seq)
    "CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, record BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS conversation_items (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "conversation_id TEXT NOT NULL, item_id TEXT, item BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS conversation_items_in_order "
    "ON conversation_items (conversation_id, seq)",
)
RUN = "SELECT owner, lease_until, cancel, ended, dialect FROM runs WHERE id = ? AND expires >= ?"
PUT = (
    "INSERT INTO responses (id, created_at, record) VALUES (?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET created_at = excluded.created_at, record = excluded.record"
)
PUT_ITEM = "INSERT OR REPLACE INTO item_index (tenant, item_id, response_id) VALUES (?, ?, ?)"
FIND_ITEM = (
    "SELECT r.id, r.record FROM item_index i JOIN responses r ON r.id = i.response_id "
    "WHERE i.tenant = ? AND i.item_id = ?"
)
SECRET_NAME = "tenant_secret"


def _connect(path: Path) -> sqlite3.Connection:
    """An open, prepared connection to ``path``; ValueError (one line) when it cannot be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise BadValue(
            f"cannot create the directory of the SQLite store {path}: {reason}"
        ) from None
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA busy_timeout = 5000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        for statement in SCHEMA:
            db.execute(statement)
    except sqlite3.Error as exc:
        if db is not None:
            db.close()
        raise BadValue(f"cannot open the SQLite store {path}: {exc}") from None
    return db


def _created_at(response: dict[str, Any]) -> int:
    value = response.get("created_at")
    return value if isinstance(value, int) else int(time.time())


def _run_state(row: Any) -> RunState | None:
    if row is None:
        return None
    owner, lease_until, cancel, ended, dialect = row
    return RunState(str(owner), float(lease_until), bool(cancel), bool(ended), str(dialect))


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One transaction around the block (the connection is in autocommit mode)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class SQLiteStore:
    """Records in one SQLite table, ``(id, created_at, record)``."""

    def __init__(self, path: Path) -> None:
        self.path = path.absolute()
        self.url = f"sqlite:///{self.path}"
        self._db = _connect(self.path)
        self._lock = threading.Lock()

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` in a worker thread; a SQLite failure (a file that cannot be
        written, a lock held too long) is a StoreUnavailable."""

        def locked() -> T:
            with self._lock:
                try:
                    return work(self._db)
                except sqlite3.Error as exc:
                    raise StoreUnavailable(f"the SQLite store {self.path} failed: {exc}") from None

        return await asyncio.to_thread(locked)

    async def put(self, record: StoredResponse) -> None:
        row = (record.id, _created_at(record.response), encode_record(record))
        items = [(record.tenant or "", item_id, record.id) for item_id in record.item_ids()]

        def write(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.execute(PUT, row)
                db.executemany(PUT_ITEM, items)

        await self._run(write)

    async def get(self, response_id: str) -> StoredResponse | None:
        query = "SELECT record FROM responses WHERE id = ?"
        row = await self._run(lambda db: db.execute(query, (response_id,)).fetchone())
        return None if row is None else decode_record(bytes(row[0]), response_id)

    async def find_item(self, item_id: str, tenant: str | None = None) -> StoredResponse | None:
        key = (tenant or "", item_id)
        row = await self._run(lambda db: db.execute(FIND_ITEM, key).fetchone())
        return None if row is None else decode_record(bytes(row[1]), str(row[0]))

    async def tenant_secret(self) -> bytes:
        def made(db: sqlite3.Connection) -> bytes:
            insert = "INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)"
            db.execute(insert, (SECRET_NAME, new_secret()))
            row = db.execute("SELECT value FROM meta WHERE name = ?", (SECRET_NAME,)).fetchone()
            return bytes(row[0])

        return await self._run(made)

    async def delete(self, response_id: str) -> bool:
        def remove(db: sqlite3.Connection) -> int:
            with _transaction(db):
                db.execute("DELETE FROM item_index WHERE response_id = ?", (response_id,))
                count: int = db.execute(
                    "DELETE FROM responses WHERE id = ?", (response_id,)
                ).rowcount
                return count

        return await self._run(remove) > 0

    async def run_start(self, response_id: str, claim: RunClaim) -> bool:
        now = time.time()

        def start(db: sqlite3.Connection) -> bool:
            with _transaction(db):  # BEGIN IMMEDIATE: one writer counts and starts at a time
                gone = "SELECT id FROM runs WHERE expires < ?"
                old = [(row[0],) for row in db.execute(gone, (now,)).fetchall()]
                db.executemany("DELETE FROM run_log WHERE id = ?", old)
                db.execute("DELETE FROM runs WHERE expires < ?", (now,))
                if claim.limit is not None:
                    going = db.execute(
                        "SELECT COUNT(*) FROM runs "
                        "WHERE tenant = ? AND ended = 0 AND lease_until >= ?",
                        (claim.tenant or "", now),
                    ).fetchone()[0]
                    if going >= claim.limit:
                        return False
                db.execute("DELETE FROM run_log WHERE id = ?", (response_id,))
                db.execute(
                    "INSERT OR REPLACE INTO runs "
                    "(id, owner, lease_until, expires, dialect, tenant) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        response_id,
                        claim.owner,
                        claim.lease_until,
                        now + claim.ttl,
                        claim.dialect,
                        claim.tenant or "",
                    ),
                )
                return True

        return await self._run(start)

    async def run_state(self, response_id: str) -> RunState | None:
        row = await self._run(lambda db: db.execute(RUN, (response_id, time.time())).fetchone())
        return _run_state(row)

    async def run_renew(self, response_id: str, owner: str, lease_until: float) -> RunState | None:
        def renew(db: sqlite3.Connection) -> Any:
            with _transaction(db):
                db.execute(
                    "UPDATE runs SET lease_until = ? WHERE id = ? AND owner = ? AND ended = 0",
                    (lease_until, response_id, owner),
                )
                return db.execute(RUN, (response_id, time.time())).fetchone()

        return _run_state(await self._run(renew))

    async def run_release(self, response_id: str) -> None:
        query = "UPDATE runs SET tenant = NULL WHERE id = ?"
        await self._run(lambda db: db.execute(query, (response_id,)))

    async def run_cancel(self, response_id: str) -> RunState | None:
        def cancel(db: sqlite3.Connection) -> Any:
            with _transaction(db):
                db.execute("UPDATE runs SET cancel = 1 WHERE id = ? AND ended = 0", (response_id,))
                return db.execute(RUN, (response_id, time.time())).fetchone()

        return _run_state(await self._run(cancel))

    async def run_end(self, response_id: str, expired_before: float | None = None) -> bool:
        # one statement, so two replicas that race to end a run cannot both win
        query = "UPDATE runs SET ended = 1 WHERE id = ? AND ended = 0"
        args: tuple[Any, ...] = (response_id,)
        if expired_before is not None:
            query += " AND lease_until < ?"
            args += (expired_before,)
        count = await self._run(lambda db: db.execute(query, args).rowcount)
        return bool(count)

    async def log_append(self, response_id: str, entries: list[LogEntry]) -> None:
        rows = [(response_id, seq, frame) for seq, frame in entries]
        insert = "INSERT OR REPLACE INTO run_log (id, seq, frame) VALUES (?, ?, ?)"
        await self._run(lambda db: db.executemany(insert, rows))

    async def log_read(self, response_id: str, after: int = -1) -> list[LogEntry]:
        query = (
            "SELECT seq, frame FROM run_log WHERE id = ? AND seq > ? AND EXISTS "
            "(SELECT 1 FROM runs WHERE runs.id = run_log.id AND expires >= ?) ORDER BY seq"
        )
        args = (response_id, after, time.time())
        rows = await self._run(lambda db: db.execute(query, args).fetchall())
        return [(int(seq), bytes(frame)) for seq, frame in rows]

    async def conversation_put(self, conversation: StoredConversation) -> None:
        row = (conversation.id, encode_conversation(conversation))
        query = "INSERT OR REPLACE INTO conversations (id, record) VALUES (?, ?)"
        await self._run(lambda db: db.execute(query, row))

    async def conversation_get(self, conversation_id: str) -> StoredConversation | None:
        query = "SELECT record FROM conversations WHERE id = ?"
        row = await self._run(lambda db: db.execute(query, (conversation_id,)).fetchone())
        return None if row is None else decode_conversation(bytes(row[0]), conversation_id)

    async def conversation_delete(self, conversation_id: str) -> bool:
        def remove(db: sqlite3.Connection) -> int:
            with _transaction(db):
                query = "DELETE FROM conversation_items WHERE conversation_id = ?"
                db.execute(query, (conversation_id,))
                query = "DELETE FROM conversations WHERE id = ?"
                count: int = db.execute(query, (conversation_id,)).rowcount
                return count

        return await self._run(remove) > 0

    async def conversation_append(self, conversation_id: str, items: list[dict[str, Any]]) -> None:
        rows = [(conversation_id, item.get("id"), encode_json(item)) for item in items]
        insert = "INSERT INTO conversation_items (conversation_id, item_id, item) VALUES (?, ?, ?)"

        def append(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.executemany(insert, rows)

        await self._run(append)

    async def conversation_items(self, conversation_id: str) -> list[dict[str, Any]]:
        query = "SELECT item FROM conversation_items WHERE conversation_id = ? ORDER BY seq"
        rows = await self._run(lambda db: db.execute(query, (conversation_id,)).fetchall())
        return [decode_item(bytes(row[0]), conversation_id) for row in rows]

    async def conversation_item_delete(self, conversation_id: str, item_id: str) -> bool:
        query = (
            "DELETE FROM conversation_items WHERE seq = (SELECT seq FROM conversation_items "
            "WHERE conversation_id = ? AND item_id = ? ORDER BY seq LIMIT 1)"
        )
        args = (conversation_id, item_id)
        return await self._run(lambda db: db.execute(query, args).rowcount) > 0

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._lock:
            self._db.close()
