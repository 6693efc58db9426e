"""The gateway's response store: SQLite, Redis (a real redis-server) and memory backends."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import pytest
import redis
from redis_server import RedisServer, free_port

from responses_stream._runtime.gateway.store import (
    MemoryStore,
    Store,
    StoredResponse,
    StoreError,
    decode_record,
    open_store,
)
from responses_stream._runtime.gateway.store.redis import DEFAULT_PREFIX, RedisStore
from responses_stream._runtime.gateway.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
BACKENDS = ["sqlite", "redis", "memory"]
DURABLE = ["sqlite", "redis"]
UNICODE = (
    "naïve café, Grüße, 日本語, עברית, emoji 😀👍🏽👨‍👩‍👧, astral 𝄞𐍈🀄𝕏, "
    'zero\u200bwidth, nul \x00, quote " back \\ slash, line\nbreak'
)
BIG = ("1 MB of text 😀𝄞 " * 62_500)[:1_000_000]
SECRET = "hunter2"

UrlMaker = Callable[..., str]


def run(work: Awaitable[T]) -> T:
    async def main() -> T:
        return await work

    return asyncio.run(main())


@asynccontextmanager
async def opened(url: str) -> AsyncIterator[Store]:
    store = open_store(url)
    try:
        yield store
    finally:
        await store.close()


def with_query(url: str, **options: Any) -> str:
    return url + ("&" if "?" in url else "?") + urlencode(options)


def make_response(
    response_id: str, text: str = "Hello!", previous: str | None = None
) -> dict[str, Any]:
    """A Response as the gateway sends it: reasoning, a function call, a message."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1764800000,
        "status": "completed",
        "model": "gpt-test",
        "previous_response_id": previous,
        "store": True,
        "output": [
            {
                "id": f"rs_{response_id}",
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "thinking 🤔"}],
            },
            {
                "id": f"fc_{response_id}",
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Zürich"}',
                "status": "completed",
            },
            {
                "id": f"msg_{response_id}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": text,
                        "annotations": [
                            {
                                "type": "url_citation",
                                "url": "https://example.com/ü",
                                "start_index": 0,
                                "end_index": 5,
                                "title": "Ex",
                            }
                        ],
                        "logprobs": [],
                    }
                ],
            },
        ],
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
        "usage": {
            "input_tokens": 12,
            "output_tokens": 34,
            "total_tokens": 46,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 7},
        },
        "metadata": {"topic": UNICODE[:20]},
        "temperature": 0.7,
        "top_p": 1.0,
        "error": None,
        "incomplete_details": None,
    }


def make_record(
    response_id: str, text: str = "Hello!", previous: str | None = None
) -> StoredResponse:
    items = [
        {
            "id": f"in_{response_id}_{n}",
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": f"question {n}: {UNICODE}"}],
        }
        for n in range(3)
    ]
    return StoredResponse(response=make_response(response_id, text, previous), input_items=items)


def new_id() -> str:
    return f"resp_{uuid.uuid4().hex}"


@pytest.fixture
def redis_urls(request: pytest.FixtureRequest) -> Iterator[UrlMaker]:
    """Makes store URLs on the test Redis, each with a prefix of its own; cleans them up."""
    base: str = request.getfixturevalue("redis_url")
    prefixes: list[str] = []

    def make(server: str | None = None, **options: Any) -> str:
        options.setdefault("prefix", f"test-{uuid.uuid4().hex}:")
        prefixes.append(str(options["prefix"]))
        return with_query(server or base, **options)

    yield make
    client = redis.Redis.from_url(base)
    try:
        for prefix in prefixes:
            for key in client.scan_iter(match=f"{prefix}*"):
                client.delete(key)
    except redis.RedisError:
        pass  # a test that stopped the server
    finally:
        client.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of ``backend``: its own file, its own Redis prefix, or a new dict."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    if backend == "redis":
        make: UrlMaker = request.getfixturevalue("redis_urls")
        return make()
    return "memory:"


@pytest.fixture(params=DURABLE)
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/durable/store.db"
    make: UrlMaker = request.getfixturevalue("redis_urls")
    return make()


# -- what every backend does --------------------------------------------------------------


def test_roundtrip(store_url: str) -> None:
    async def main() -> None:
        async with opened(store_url) as store:
            first = make_record(new_id(), text=UNICODE)
            big = make_record(new_id(), text=BIG, previous=first.id)
            await store.put(first)
            await store.put(big)
            assert await store.get(first.id) == first
            got = await store.get(big.id)
            assert got == big
            assert got is not None and got.previous_response_id == first.id
            assert got.response["output"][2]["content"][0]["text"] == BIG
            big.response["status"] = "mutated after put"
            again = await store.get(big.id)
            assert again is not None and again.response["status"] == "completed"

    run(main())


def test_lone_surrogates_and_odd_values_roundtrip(store_url: str) -> None:
    """What json.loads lets a client send: lone surrogates, huge integers."""

    async def main() -> None:
        async with opened(store_url) as store:
            record = make_record(new_id(), text="half a pair: \ud83d and \udc00")
            record.response["metadata"] = {"big": 2**80, "neg": -(2**70), "float": 1e-300}
            await store.put(record)
            assert await store.get(record.id) == record

    run(main())


def test_replace(store_url: str) -> None:
    async def main() -> None:
        async with opened(store_url) as store:
            response_id = new_id()
            await store.put(make_record(response_id, text="first"))
            second = make_record(response_id, text="second")
            second.input_items.append({"id": "in_extra", "type": "message", "content": []})
            await store.put(second)
            assert await store.get(response_id) == second

    run(main())


def test_delete(store_url: str) -> None:
    async def main() -> None:
        async with opened(store_url) as store:
            keep, gone = make_record(new_id()), make_record(new_id())
            await store.put(keep)
            await store.put(gone)
            assert await store.delete(gone.id) is True
            assert await store.get(gone.id) is None
            assert await store.delete(gone.id) is False
            assert await store.delete(new_id()) is False
            assert await store.get(keep.id) == keep

    run(main())


def test_find_item(store_url: str) -> None:
    """Every input and output item of a record is found by its id; the record it
    finds is the latest put that holds the item; a deleted record's items are gone."""

    async def main() -> None:
        async with opened(store_url) as store:
            first, later = make_record(new_id()), make_record(new_id())
            shared = first.input_items[0]
            later.input_items.append(shared)  # a client sends an earlier item again
            await store.put(first)
            for item in [*first.input_items, *first.response["output"]]:
                assert await store.find_item(item["id"]) == first, item["id"]
            await store.put(later)
            assert await store.find_item(shared["id"]) == later
            assert await store.find_item(f"msg_{first.id}") == first
            assert await store.find_item("msg_nobody") is None
            assert await store.find_item("") is None
            assert await store.delete(later.id) is True
            assert await store.find_item(f"msg_{later.id}") is None
            assert await store.find_item(f"msg_{first.id}") == first
            assert await store.delete(first.id) is True
            for item in [*first.input_items, *first.response["output"]]:
                assert await store.find_item(item["id"]) is None, item["id"]

    run(main())


def test_tenants_roundtrip_and_index_their_items_apart(store_url: str) -> None:
    async def main() -> None:
        async with opened(store_url) as store:
            mine = make_record(new_id())
            mine = StoredResponse(mine.response, mine.input_items, tenant="t-alice")
            theirs = make_record(new_id())
            theirs = StoredResponse(theirs.response, mine.input_items, tenant="t-bob")
            await store.put(mine)
            await store.put(theirs)  # the same input item ids, another tenant
            assert await store.get(mine.id) == mine
            shared = mine.input_items[0]["id"]
            assert await store.find_item(shared, "t-alice") == mine
            assert await store.find_item(shared, "t-bob") == theirs
            assert await store.find_item(shared) is None  # no record without a tenant has it
            assert await store.find_item(f"msg_{mine.id}", "t-bob") is None
            assert await store.delete(theirs.id) is True
            assert await store.find_item(shared, "t-alice") == mine

    run(main())


def test_a_record_from_before_tenancy_has_none(store_url: str) -> None:
    record = make_record(new_id())
    old = {"format": 1, "response": record.response, "input_items": record.input_items}
    decoded = decode_record(json.dumps(old).encode(), record.id)
    assert decoded == record and decoded.tenant is None
    with pytest.raises(StoreError, match="tenant"):
        decode_record(json.dumps({**old, "format": 2, "tenant": 7}).encode(), record.id)


def test_the_tenant_secret_is_made_once_and_kept(durable_url: str) -> None:
    async def secret() -> bytes:
        async with opened(durable_url) as store:
            return await store.tenant_secret()

    async def two_at_once() -> list[bytes]:
        async with opened(durable_url) as one, opened(durable_url) as two:
            return list(await asyncio.gather(one.tenant_secret(), two.tenant_secret()))

    first = run(secret())
    assert len(first) == 32
    assert run(secret()) == first  # reopened
    assert run(two_at_once()) == [first, first]


def test_a_memory_store_has_a_secret_of_its_own() -> None:
    async def secret() -> bytes:
        async with opened("memory:") as store:
            return await store.tenant_secret()

    assert run(secret()) != run(secret())


def test_find_item_after_a_reopen(durable_url: str) -> None:
    record = make_record(new_id())

    async def write() -> None:
        async with opened(durable_url) as store:
            await store.put(record)

    async def find() -> StoredResponse | None:
        async with opened(durable_url) as store:
            return await store.find_item(f"rs_{record.id}")

    run(write())
    assert run(find()) == record


def test_record_items() -> None:
    record = make_record(new_id())
    ids = record.item_ids()
    assert ids[:3] == [i["id"] for i in record.input_items]
    assert ids[3:] == [o["id"] for o in record.response["output"]]
    assert record.item(ids[4]) == record.response["output"][1]
    assert record.item("nothing") is None


def test_unknown_id(store_url: str) -> None:
    async def main() -> None:
        async with opened(store_url) as store:
            assert await store.get(new_id()) is None
            assert await store.get("") is None
            assert await store.get("resp_'; DROP TABLE responses; --") is None

    run(main())


def test_concurrent_puts_and_gets(store_url: str) -> None:
    async def main() -> None:
        async with opened(store_url) as store:
            records = [make_record(new_id(), text=f"answer {n} 😀") for n in range(200)]
            await asyncio.gather(*(store.put(r) for r in records))
            got = await asyncio.gather(*(store.get(r.id) for r in records))
            assert got == records
            more = [make_record(new_id(), text=f"more {n}") for n in range(200)]
            mixed: list[Awaitable[Any]] = []
            for old, new in zip(records, more, strict=True):
                mixed += [store.put(new), store.get(old.id), store.delete(old.id)]
            results = await asyncio.gather(*mixed)
            assert all(r is True for r in results[2::3])
            assert await asyncio.gather(*(store.get(r.id) for r in more)) == more
            assert await asyncio.gather(*(store.get(r.id) for r in records)) == [None] * 200

    run(main())


@pytest.mark.parametrize("found", [b'{"format": 99, "response": {}, "input_items": []}', b"\x00?"])
def test_unreadable_record_is_a_store_error(store_url: str, found: bytes) -> None:
    """A record from a later format version (or garbage) is refused, not misread."""
    response_id = new_id()

    async def main() -> None:
        async with opened(store_url) as store:
            await store.put(make_record(response_id))
            write_raw(store, response_id, found)
            with pytest.raises(StoreError) as caught:
                await store.get(response_id)
            assert response_id in str(caught.value)
            expected = "unknown format 99" if found.startswith(b"{") else "is not JSON"
            assert expected in str(caught.value)

    run(main())


def write_raw(store: Store, response_id: str, data: bytes) -> None:
    """Overwrite ``response_id``'s record behind the store's back."""
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as db:
            db.execute("UPDATE responses SET record = ? WHERE id = ?", (data, response_id))
        db.close()
    elif isinstance(store, RedisStore):
        with sync_client(store) as client:
            client.set(store.prefix + response_id, data)
    else:
        assert isinstance(store, MemoryStore)
        store._records[response_id] = data


def sync_client(store: RedisStore) -> redis.Redis:
    """A plain client on the server and database of ``store`` (a TCP one)."""
    kwargs = store._redis.connection_pool.connection_kwargs
    return redis.Redis(host=kwargs["host"], port=kwargs["port"], db=kwargs.get("db", 0))


# -- nothing is lost on restart -----------------------------------------------------------


def test_reopen_keeps_every_record(durable_url: str) -> None:
    records = [make_record(new_id(), text=f"kept {n} {UNICODE}") for n in range(50)]
    records.append(make_record(new_id(), text=BIG))

    async def write() -> None:
        async with opened(durable_url) as store:
            await asyncio.gather(*(store.put(r) for r in records))

    async def read() -> list[StoredResponse | None]:
        async with opened(durable_url) as store:
            return list(await asyncio.gather(*(store.get(r.id) for r in records)))

    run(write())
    assert run(read()) == records


def test_redis_server_restart_keeps_every_record(
    redis_server: RedisServer, redis_urls: UrlMaker
) -> None:
    url = redis_urls(redis_server.url)
    records = [make_record(new_id(), text=f"kept {n}") for n in range(50)]
    records.append(make_record(new_id(), text=BIG))

    async def write() -> None:
        async with opened(url) as store:
            await asyncio.gather(*(store.put(r) for r in records))

    async def read() -> list[StoredResponse | None]:
        async with opened(url) as store:
            return list(await asyncio.gather(*(store.get(r.id) for r in records)))

    run(write())
    redis_server.restart()
    assert run(read()) == records


def test_redis_store_survives_a_server_restart(
    redis_server: RedisServer, redis_urls: UrlMaker
) -> None:
    """An open store reconnects after Redis restarts: the gateway need not restart too."""
    url = redis_urls(redis_server.url)

    async def main() -> None:
        async with opened(url) as store:
            before = make_record(new_id())
            await store.put(before)
            await asyncio.to_thread(redis_server.restart)
            assert await store.get(before.id) == before
            after = make_record(new_id())
            await store.put(after)
            assert await store.get(after.id) == after

    run(main())


# -- Redis specifics -----------------------------------------------------------------------


def test_redis_ttl(redis_urls: UrlMaker) -> None:
    url = redis_urls(ttl=1)

    async def main() -> None:
        async with opened(url) as store:
            assert isinstance(store, RedisStore) and store.ttl == 1
            record = make_record(new_id())
            await store.put(record)
            assert await store.get(record.id) == record
            with sync_client(store) as client:
                assert 0 < client.pttl(store.prefix + record.id) <= 1000
            await asyncio.sleep(1.3)
            assert await store.get(record.id) is None
            assert await store.delete(record.id) is False

    run(main())


def test_redis_keys_never_expire_without_ttl(redis_urls: UrlMaker) -> None:
    async def main() -> None:
        async with opened(redis_urls()) as store:
            assert isinstance(store, RedisStore) and store.ttl is None
            record = make_record(new_id())
            await store.put(record)
            with sync_client(store) as client:
                assert client.ttl(store.prefix + record.id) == -1

    run(main())


def test_redis_prefix_isolation(redis_urls: UrlMaker) -> None:
    async def main() -> None:
        async with opened(redis_urls()) as one, opened(redis_urls()) as two:
            response_id = new_id()
            mine, theirs = make_record(response_id, "one's"), make_record(response_id, "two's")
            await one.put(mine)
            assert await two.get(response_id) is None
            await two.put(theirs)
            assert await one.get(response_id) == mine
            assert await two.get(response_id) == theirs
            assert await two.delete(response_id) is True
            assert await one.get(response_id) == mine
            assert await two.delete(response_id) is False

    run(main())


def test_redis_default_prefix(redis_url: str) -> None:
    async def main() -> None:
        async with opened(redis_url) as store:
            assert isinstance(store, RedisStore) and store.prefix == "responses-stream:"
            record = make_record(new_id())
            await store.put(record)
            try:
                with sync_client(store) as client:
                    assert client.exists(f"responses-stream:{record.id}") == 1
            finally:
                assert await store.delete(record.id) is True

    run(main())


def test_redis_over_a_unix_socket(redis_server: RedisServer) -> None:
    prefix = f"test-{uuid.uuid4().hex}:"
    tcp = with_query(redis_server.url, prefix=prefix)
    unix = with_query(redis_server.unix_url, prefix=prefix)

    async def main() -> None:
        async with opened(unix) as over_unix, opened(tcp) as over_tcp:
            record = make_record(new_id())
            await over_unix.put(record)
            assert await over_tcp.get(record.id) == record

    run(main())


# -- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form", ["redis://:{s}@127.0.0.1:{port}/0", "redis://127.0.0.1:{port}/0?password={s}"]
)
def test_redis_down_is_a_store_error_without_the_password(form: str) -> None:
    url = form.format(s=SECRET, port=free_port())  # nothing listens there

    async def main() -> None:
        async with opened(url) as store:
            assert SECRET not in store.url
            calls: list[Callable[[], Awaitable[Any]]] = [
                lambda: store.put(make_record(new_id())),
                lambda: store.get(new_id()),
                lambda: store.delete(new_id()),
            ]
            for call in calls:
                with pytest.raises(StoreError) as caught:
                    await call()
                shown = "".join(traceback.format_exception(caught.value))
                assert SECRET not in shown
                assert "127.0.0.1" in str(caught.value)

    started = time.monotonic()
    run(main())
    assert time.monotonic() - started < 30


def test_sqlite_path_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    with pytest.raises(ValueError, match="cannot create the directory of the SQLite store"):
        open_store(f"sqlite:///{tmp_path}/a-file/sub/store.db")
    (tmp_path / "a-directory.db").mkdir()
    with pytest.raises(ValueError, match="cannot open the SQLite store .*a-directory.db"):
        open_store(str(tmp_path / "a-directory.db"))


def test_sqlite_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a SQLite file" * 100)
    with pytest.raises(ValueError, match="cannot open the SQLite store .*garbage.db"):
        open_store(str(path))


def test_sqlite_failure_is_a_store_error(tmp_path: Path) -> None:
    async def main() -> None:
        store = open_store(f"sqlite:///{tmp_path}/closed.db")
        await store.close()
        with pytest.raises(StoreError, match="closed.db failed"):
            await store.put(make_record(new_id()))
        with pytest.raises(StoreError):
            await store.get(new_id())

    run(main())


def test_sqlite_file_layout(tmp_path: Path) -> None:
    """WAL journal, one row per response with its created_at, the JSON record."""
    path = tmp_path / "deep" / "er" / "store.sqlite3"
    record = make_record(new_id())

    async def main() -> None:
        async with opened(str(path)) as store:
            await store.put(record)

    run(main())
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        rows = db.execute("SELECT id, created_at, typeof(record) FROM responses").fetchall()
        data = db.execute("SELECT record FROM responses").fetchone()[0]
    db.close()
    assert rows == [(record.id, 1764800000, "blob")]
    assert data.startswith(b'{"format":2,"tenant":null,')


def test_without_redis_installed(tmp_path: Path) -> None:
    """The store imports, and SQLite and memory work, without redis; Redis says what to do."""
    code = f"""
import asyncio, sys
sys.modules["redis"] = None
from responses_stream._runtime.gateway import store
from responses_stream._runtime.gateway.store import redis as store_redis, sqlite as store_sqlite
assert "redis" not in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None]
for url in ("memory:", {str(tmp_path / "x.db")!r}):
    asyncio.run(store.open_store(url).close())
try:
    store.open_store("redis://127.0.0.1:6379/0")
except ImportError as exc:
    print(exc)
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert "pip install 'responses-stream[gateway]'" in done.stdout


# -- URLs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "file"),
    [
        ("sqlite:///relative/dir/a.db", "relative/dir/a.db"),
        ("sqlite:///plain.db", "plain.db"),
        ("SQLite:///case.db", "case.db"),
        ("sqlite:////{tmp}/absolute.db", "absolute.db"),
        ("sqlite:////{tmp}/any-name", "any-name"),
        ("bare.db", "bare.db"),
        ("bare.sqlite", "bare.sqlite"),
        ("sub/bare.sqlite3", "sub/bare.sqlite3"),
        ("UPPER.DB", "UPPER.DB"),
        ("{tmp}/absolute-bare.db", "absolute-bare.db"),
        ("  spaced.db  ", "spaced.db"),
    ],
)
def test_sqlite_urls(url: str, file: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store(url.replace("/{tmp}", str(tmp_path)).replace("{tmp}", str(tmp_path)))
    try:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / file
        assert store.path.is_file()
        assert store.url == f"sqlite:///{tmp_path / file}"
        assert store.url.startswith("sqlite:////")
    finally:
        run(store.close())


def test_memory_url() -> None:
    store = open_store("memory:")
    assert isinstance(store, MemoryStore) and store.url == "memory:"
    assert open_store("memory:") is not store  # each open is a store of its own


@pytest.mark.parametrize(
    ("url", "shown", "prefix", "ttl", "connection"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0", DEFAULT_PREFIX, None, {"db": 0}),
        ("redis://localhost", "redis://localhost", DEFAULT_PREFIX, None, {"host": "localhost"}),
        ("redis://[::1]:6390/3", "redis://[::1]:6390/3", DEFAULT_PREFIX, None, {"host": "::1"}),
        (
            f"redis://:{SECRET}@cache:6390/2",
            "redis://:***@cache:6390/2",
            DEFAULT_PREFIX,
            None,
            {"password": SECRET, "db": 2, "port": 6390},
        ),
        (
            f"redis://gateway:{SECRET}@cache/1",
            "redis://gateway:***@cache/1",
            DEFAULT_PREFIX,
            None,
            {"username": "gateway", "password": SECRET},
        ),
        (
            "redis://:p%40ss%3Aword@cache/0",
            "redis://:***@cache/0",
            DEFAULT_PREFIX,
            None,
            {"password": "p@ss:word"},
        ),
        (
            f"rediss://:{SECRET}@cache:6380/1?ssl_cert_reqs=none",
            "rediss://:***@cache:6380/1?ssl_cert_reqs=none",
            DEFAULT_PREFIX,
            None,
            {"ssl_cert_reqs": "none"},
        ),
        (
            "unix:///run/redis/redis.sock?db=4",
            "unix:///run/redis/redis.sock?db=4",
            DEFAULT_PREFIX,
            None,
            {"path": "/run/redis/redis.sock", "db": 4},
        ),
        ("unix:///tmp/r.sock", "unix:///tmp/r.sock", DEFAULT_PREFIX, None, {}),
        (
            "redis://cache/0?prefix=app:responses:&ttl=86400",
            "redis://cache/0?prefix=app:responses:&ttl=86400",
            "app:responses:",
            86400,
            {},
        ),
        ("redis://cache/0?prefix=", "redis://cache/0?prefix=", "", None, {}),
        (
            f"redis://cache/0?password={SECRET}&socket_timeout=2.5",
            "redis://cache/0?password=***&socket_timeout=2.5",
            DEFAULT_PREFIX,
            None,
            {"password": SECRET, "socket_timeout": 2.5},
        ),
        ("redis://cache", "redis://cache", DEFAULT_PREFIX, None, {"socket_connect_timeout": 5.0}),
    ],
)
def test_redis_urls(
    url: str, shown: str, prefix: str, ttl: int | None, connection: dict[str, Any]
) -> None:
    store = open_store(url)  # connects on first use only
    try:
        assert isinstance(store, RedisStore)
        assert store.url == shown
        assert store.prefix == prefix and store.ttl == ttl
        kwargs = store._redis.connection_pool.connection_kwargs
        assert {name: kwargs.get(name) for name in connection} == connection
        assert "prefix" not in kwargs and "ttl" not in kwargs
    finally:
        run(store.close())


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "memory",
        "memory://",
        "memory:x",
        "notes.txt",
        "store.db/",
        "responses",
        f"postgres://user:{SECRET}@db/responses",
        "http://example.com/store.db",
        "sqlite:",
        "sqlite://",
        "sqlite:///",
        "sqlite:relative.db",
        "sqlite://host/store.db",
        "sqlite:///dir/",
        "sqlite:///store.db?mode=ro",
        "sqlite:///store.db#x",
        "sqlite:///:memory:",
        "redis://",
        "redis:///0",
        f"redis://:{SECRET}@",
        f"redis://:{SECRET}@cache:port/0",
        f"redis://:{SECRET}@cache:99999/0",
        "redis://cache/zero",
        "redis://cache/0?db=x",
        "redis://cache/0?ttl=0",
        "redis://cache/0?ttl=-5",
        "redis://cache/0?ttl=1.5",
        "redis://cache/0?ttl=",
        f"redis://:{SECRET}@cache/0?prefix=a&prefix=b",
        f"redis://:{SECRET}@cache/0?bogus=1",
        f"redis://cache/0?password={SECRET}&bogus=1",
        "redis://cache/0?socket_timeout=soon",
        "unix://",
        "unix:///run/redis/",
        "unix:///run/redis.sock?db=x",
    ],
)
def test_refused_urls(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        open_store(url)
    message = str(caught.value)
    assert message and "\n" not in message
    assert SECRET not in message


@pytest.mark.parametrize("url", ["postgres://db/x", "notes.txt", "", "memory"])
def test_unknown_store_names_the_accepted_forms(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        open_store(url)
    for form in ("sqlite:///", "sqlite:////", ".db", "redis://", "rediss://", "unix://", "memory:"):
        assert form in str(caught.value)


def test_stored_response_properties() -> None:
    record = make_record("resp_1", previous="resp_0")
    assert record.id == "resp_1" and record.previous_response_id == "resp_0"
    assert make_record("resp_2").previous_response_id is None
    with pytest.raises(ValueError, match="'id'"):
        _ = StoredResponse(response={"object": "response"}, input_items=[]).id
