"""The Redis store: one Redis shared by every gateway replica.

URLs: ``redis://[user:password@]host[:port][/db]``, ``rediss://...`` (TLS) and
``unix:///path/to/redis.sock[?db=N]``, with ``?prefix=NAME`` (key prefix, default
``responses-stream:``) and ``?ttl=SECONDS`` (expiry, default none); any other query option
goes to redis-py (``socket_timeout=...``, ``max_connections=...``).  A record is a string at
``prefix + id``; nothing is cached in the process, so every replica sees every write as soon
as Redis acknowledged it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

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
    hide_password,
    new_secret,
)
from .conversation import (
    decode_conversation,
    decode_item,
    encode_conversation,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

T = TypeVar("T")

DEFAULT_PREFIX = "responses-stream:"
# Defaults a URL's own query options override: a dead Redis fails a request, never hangs it,
# and past MAX_CONNECTIONS concurrent calls a call waits (up to TIMEOUT) for a free connection.
CONNECT_TIMEOUT = 5.0
TIMEOUT = 10.0
MAX_CONNECTIONS = 64
RETRIES = 3  # SET, GET and DEL are safe to send again


@dataclass(frozen=True)
class RedisURL:
    """A store URL taken apart: redis-py's URL (without our options), prefix, ttl, secrets."""

    client_url: str
    prefix: str
    ttl: int | None
    shown: str  # the URL for logs, password hidden
    secrets: tuple[str, ...]  # the password, as written and decoded, to keep out of messages


def _one_each(query: str, url: str) -> dict[str, str]:
    pairs = parse_qsl(query, keep_blank_values=True)
    options = dict(pairs)
    if len(options) != len(pairs):
        raise BadValue(f"the Redis store URL {url} repeats a query option")
    return options


def _ttl(value: str | None) -> int | None:
    if value is None:
        return None
    if not value.isdigit() or int(value) < 1:
        raise BadValue(f"the Redis store's ttl must be a whole number of seconds >= 1: {value!r}")
    return int(value)


def _check_address(url: str, shown: str) -> None:
    """ValueError unless ``url`` names a host (redis, rediss) or a socket path (unix)."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        if not parts.path or parts.path.endswith("/"):
            raise BadValue(f"the Redis store URL {shown} names no socket: unix:///path/redis.sock")
        return
    try:
        parts.port  # noqa: B018 - urlsplit checks the port when it is read
    except ValueError:
        raise BadValue(f"the Redis store URL {shown} has a bad port") from None
    if not parts.hostname:
        raise BadValue(f"the Redis store URL {shown} names no host: redis://host:port/db")
    db = parts.path.lstrip("/")
    if db and not db.isdigit():
        raise BadValue(f"the Redis store URL {shown} has a bad database number {db!r}")


def _shown(url: str, options: dict[str, str]) -> str:
    """``url`` for logs and messages: the password hidden, in the user part and the query."""
    if "password" not in options:
        return hide_password(url)
    base, _, _ = url.partition("?")
    query = urlencode({**options, "password": "***"}, safe=":/*", quote_via=quote)
    return f"{hide_password(base)}?{query}"


def parse_redis_url(url: str) -> RedisURL:
    """``url`` taken apart; ValueError (one line, password hidden) for a bad one."""
    parts = urlsplit(url)
    options = _one_each(parts.query, hide_password(url.partition("?")[0]))
    shown = _shown(url, options)
    _check_address(url, shown)
    if not options.get("db", "0").isdigit():
        raise BadValue(f"the Redis store URL {shown} has a bad database number")
    prefix = options.pop("prefix", DEFAULT_PREFIX)
    ttl = _ttl(options.pop("ttl", None))
    client_url = urlunsplit(parts._replace(query=urlencode(options, quote_via=quote)))
    found = [s for s in (parts.password, options.get("password")) if s]
    secrets = tuple({form for s in found for form in (s, unquote(s), quote(s))})
    return RedisURL(client_url, prefix, ttl, shown, secrets)


def _client(url: str) -> Redis:
    """A redis.asyncio client for ``url`` (no connection yet); ImportError without redis."""
    try:
        import redis.asyncio
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialWithJitterBackoff
    except ImportError:
        raise ImportError(
            "the Redis store needs the redis package: pip install 'responses-stream[gateway]'"
        ) from None
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        url,
        max_connections=MAX_CONNECTIONS,
        timeout=TIMEOUT,
        socket_connect_timeout=CONNECT_TIMEOUT,
        socket_timeout=TIMEOUT,
        # a connection Redis dropped (a restart, a failover) is made again, not an error
        retry=Retry(ExponentialWithJitterBackoff(base=0.05, cap=1.0), RETRIES),
    )
    return redis.asyncio.Redis.from_pool(pool)


# Background runs: a hash at ``run:ID`` (owner, lease_until, cancel, ended) and a stream at
# ``log:ID`` whose entry ids are ``0-(sequence number + 1)``, so a range read resumes after
# any number.  Each change is one script, so that replicas racing on a run cannot interleave.
_START = """
local live = 0
if ARGV[6] ~= '' then
  for _, rid in ipairs(redis.call('SMEMBERS', KEYS[3])) do
    local run = redis.call('HMGET', ARGV[7] .. rid, 'ended', 'lease_until')
    if run[1] == '0' and tonumber(run[2]) >= tonumber(ARGV[5]) then
      live = live + 1
    else
      redis.call('SREM', KEYS[3], rid)
    end
  end
  if live >= tonumber(ARGV[6]) then return 0 end
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'lease_until', ARGV[2], 'cancel', '0',
  'ended', '0', 'dialect', ARGV[4], 'running', KEYS[3])
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[8])
redis.call('EXPIRE', KEYS[3], ARGV[3])
return 1
"""
_RELEASE = """
local running = redis.call('HGET', KEYS[1], 'running')
if running then redis.call('SREM', running, ARGV[1]) end
return 0
"""
_RENEW = """
local run = KEYS[1]
if redis.call('HGET', run, 'owner') == ARGV[1] and redis.call('HGET', run, 'ended') == '0' then
  redis.call('HSET', run, 'lease_until', ARGV[2])
end
return redis.call('HMGET', run, 'owner', 'lease_until', 'cancel', 'ended', 'dialect')
"""
_CANCEL = """
local run = KEYS[1]
if redis.call('HGET', run, 'ended') == '0' then redis.call('HSET', run, 'cancel', '1') end
return redis.call('HMGET', run, 'owner', 'lease_until', 'cancel', 'ended', 'dialect')
"""
_END = """
local run = KEYS[1]
if redis.call('HGET', run, 'ended') ~= '0' then return 0 end
if ARGV[1] ~= '' and tonumber(redis.call('HGET', run, 'lease_until')) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', run, 'ended', '1')
return 1
"""
_APPEND = """
local ttl = redis.call('TTL', KEYS[2])
for i = 1, #ARGV, 2 do
  pcall(redis.call, 'XADD', KEYS[1], '0-' .. (tonumber(ARGV[i]) + 1), 'f', ARGV[i + 1])
end
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
return ttl
"""


def _run_state(fields: Any) -> RunState | None:
    owner, lease_until, cancel, ended, dialect = fields
    if owner is None:
        return None
    return RunState(
        bytes(owner).decode(),
        float(lease_until),
        cancel == b"1",
        ended == b"1",
        bytes(dialect or b"openai").decode(),
    )


class RedisStore:
    """Records as Redis strings at ``prefix + id``, and for each item of a record the
    record's id at ``prefix + "item:" + item id`` (all with ``EX ttl`` when a ttl is set)."""

    def __init__(self, url: str) -> None:
        parsed = parse_redis_url(url)
        self.url = parsed.shown
        self.prefix = parsed.prefix
        self.ttl = parsed.ttl
        self._secrets = parsed.secrets
        try:
            self._redis = _client(parsed.client_url)
        except ValueError as exc:  # redis-py's check of its own query options
            raise BadValue(f"the Redis store URL {self.url}: {exc}") from None
        build: Callable[[], object] = self._redis.connection_pool.make_connection
        try:  # builds (never connects) a connection: refuses an option redis-py lacks
            build()
        except TypeError as exc:
            raise BadValue(f"the Redis store URL {self.url} has an unknown option: {exc}") from None

    def _key(self, response_id: str) -> str:
        return self.prefix + response_id

    def _error(self, doing: str, exc: BaseException) -> StoreUnavailable:
        message = str(exc) or type(exc).__name__
        for secret in sorted(self._secrets, key=len, reverse=True):
            message = message.replace(secret, "***")
        return StoreUnavailable(f"the Redis store {self.url} could not {doing}: {message}")

    async def _call(self, doing: str, call: Awaitable[T]) -> T:
        """``await call``; a Redis or network failure is a StoreUnavailable."""
        from redis.exceptions import RedisError

        try:
            return await call
        except (RedisError, OSError) as exc:
            raise self._error(doing, exc) from None

    def _item_key(self, item_id: str, tenant: str | None) -> str:
        return f"{self.prefix}item:{tenant or ''}:{item_id}"

    async def put(self, record: StoredResponse) -> None:
        key, data = self._key(record.id), encode_record(record)
        # one MULTI/EXEC: the record and its items' index entries land together
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(key, data, ex=self.ttl)
        for item_id in record.item_ids():
            pipe.set(self._item_key(item_id, record.tenant), record.id, ex=self.ttl)
        await self._call(f"store {record.id!r}", pipe.execute())

    async def find_item(self, item_id: str, tenant: str | None = None) -> StoredResponse | None:
        found: Any = await self._call(
            f"look up item {item_id!r}", self._redis.get(self._item_key(item_id, tenant))
        )
        if found is None:
            return None
        return await self.get(bytes(found).decode())

    async def tenant_secret(self) -> bytes:
        key = f"{self.prefix}meta:tenant-secret"  # no expiry, whatever the ttl
        await self._call("keep the tenant secret", self._redis.set(key, new_secret(), nx=True))
        found: Any = await self._call("read the tenant secret", self._redis.get(key))
        return bytes(found)

    async def get(self, response_id: str) -> StoredResponse | None:
        data: Any = await self._call(
            f"read {response_id!r}", self._redis.get(self._key(response_id))
        )
        if data is None:
            return None
        return decode_record(bytes(data), response_id)

    async def delete(self, response_id: str) -> bool:
        record = await self.get(response_id)
        count: Any = await self._call(
            f"delete {response_id!r}", self._redis.delete(self._key(response_id))
        )
        items = record.item_ids() if record is not None else []
        item_keys = [self._item_key(i, record.tenant) for i in items if record is not None]
        if item_keys:  # index entries that a later record took over stay
            owners: Any = await self._call(
                f"read the items of {response_id!r}", self._redis.mget(item_keys)
            )
            mine = [k for k, o in zip(item_keys, owners, strict=True) if o == response_id.encode()]
            if mine:
                await self._call(f"delete the items of {response_id!r}", self._redis.delete(*mine))
        return int(count) > 0

    def _run_key(self, response_id: str) -> str:
        return f"{self.prefix}run:{response_id}"

    def _log_key(self, response_id: str) -> str:
        return f"{self.prefix}log:{response_id}"

    async def run_start(self, response_id: str, claim: RunClaim) -> bool:
        # the tenant's runs: a set of response ids, those that ended or lapsed dropped as
        # the limit is counted (tenants are opaque digests, safe in a key)
        going = f"{self.prefix}running:{claim.tenant or ''}"
        keys = [self._run_key(response_id), self._log_key(response_id), going]
        args: list[Any] = [claim.owner, repr(claim.lease_until), claim.ttl, claim.dialect]
        args += [repr(time.time()), "" if claim.limit is None else claim.limit]
        args += [self._run_key(""), response_id]
        started = await self._script(f"start the run of {response_id!r}", _START, keys, args)
        return bool(started)

    async def run_state(self, response_id: str) -> RunState | None:
        fields: Any = await self._call(
            f"read the run of {response_id!r}",
            self._redis.hmget(
                self._run_key(response_id), "owner", "lease_until", "cancel", "ended", "dialect"
            ),
        )
        return _run_state(fields)

    async def _script(self, doing: str, lua: str, keys: list[str], args: list[Any]) -> Any:
        script = self._redis.register_script(lua)
        return await self._call(doing, script(keys=keys, args=args))

    async def run_renew(self, response_id: str, owner: str, lease_until: float) -> RunState | None:
        keys, args = [self._run_key(response_id)], [owner, repr(lease_until)]
        return _run_state(await self._script(f"renew {response_id!r}", _RENEW, keys, args))

    async def run_release(self, response_id: str) -> None:
        keys, args = [self._run_key(response_id)], [response_id]
        await self._script(f"release the run of {response_id!r}", _RELEASE, keys, args)

    async def run_cancel(self, response_id: str) -> RunState | None:
        keys = [self._run_key(response_id)]
        return _run_state(await self._script(f"cancel {response_id!r}", _CANCEL, keys, []))

    async def run_end(self, response_id: str, expired_before: float | None = None) -> bool:
        keys = [self._run_key(response_id)]
        args = ["" if expired_before is None else repr(expired_before)]
        return bool(await self._script(f"end the run of {response_id!r}", _END, keys, args))

    async def log_append(self, response_id: str, entries: list[LogEntry]) -> None:
        keys = [self._log_key(response_id), self._run_key(response_id)]
        args: list[Any] = [value for seq, frame in entries for value in (seq, frame)]
        await self._script(f"log the events of {response_id!r}", _APPEND, keys, args)

    async def log_read(self, response_id: str, after: int = -1) -> list[LogEntry]:
        start = "-" if after < 0 else f"(0-{after + 1}"
        found: Any = await self._call(
            f"read the events of {response_id!r}",
            self._redis.xrange(self._log_key(response_id), min=start, max="+"),
        )
        return [(int(bytes(i).split(b"-")[1]) - 1, bytes(f[b"f"])) for i, f in found]

    def _conversation_key(self, conversation_id: str) -> str:
        return f"{self.prefix}conv:{conversation_id}"

    def _conversation_items_key(self, conversation_id: str) -> str:
        return f"{self.prefix}conv-items:{conversation_id}"

    async def conversation_put(self, conversation: StoredConversation) -> None:
        key, data = self._conversation_key(conversation.id), encode_conversation(conversation)
        await self._call(f"keep {conversation.id!r}", self._redis.set(key, data, ex=self.ttl))

    async def conversation_get(self, conversation_id: str) -> StoredConversation | None:
        data: Any = await self._call(
            f"read {conversation_id!r}", self._redis.get(self._conversation_key(conversation_id))
        )
        return None if data is None else decode_conversation(bytes(data), conversation_id)

    async def conversation_delete(self, conversation_id: str) -> bool:
        key = self._conversation_key(conversation_id)
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(key)
        pipe.delete(self._conversation_items_key(conversation_id))
        counts: Any = await self._call(f"delete {conversation_id!r}", pipe.execute())
        return int(counts[0]) > 0

    async def conversation_append(self, conversation_id: str, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        key = self._conversation_items_key(conversation_id)
        pipe = self._redis.pipeline(transaction=True)
        pipe.rpush(key, *(encode_json(item) for item in items))  # one command: atomic
        if self.ttl:
            pipe.expire(key, self.ttl)
        await self._call(f"add items to {conversation_id!r}", pipe.execute())

    async def conversation_items(self, conversation_id: str) -> list[dict[str, Any]]:
        kept: Any = await self._call(
            f"read the items of {conversation_id!r}",
            self._redis.lrange(self._conversation_items_key(conversation_id), 0, -1),
        )
        return [decode_item(bytes(data), conversation_id) for data in kept]

    async def conversation_item_delete(self, conversation_id: str, item_id: str) -> bool:
        key = self._conversation_items_key(conversation_id)
        kept: Any = await self._call(
            f"read the items of {conversation_id!r}", self._redis.lrange(key, 0, -1)
        )
        for data in kept:
            if decode_item(bytes(data), conversation_id).get("id") == item_id:
                removed: Any = await self._call(
                    f"delete item {item_id!r}", self._redis.lrem(key, 1, data)
                )
                return int(removed) > 0
        return False

    async def close(self) -> None:
        await self._redis.aclose()
