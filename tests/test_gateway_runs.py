"""Background runs in the store: their state (lease, cancel, end) and their event log, on
every backend (SQLite, a real redis-server, memory) and across two connections."""

from __future__ import annotations

import asyncio
import time

import pytest
from test_gateway_store import backend, durable_url, opened, redis_urls, run, store_url

from responses_stream._runtime.gateway.store import Store
from responses_stream._runtime.gateway.store.base import RunClaim

__all__ = ["backend", "durable_url", "redis_urls", "store_url"]  # fixtures used here
FRAMES = [
    (0, b'event: response.created\ndata: {"type":"response.created"}\n\n'),
    (1, 'event: x\ndata: {"delta":"caf\u00e9 \U0001f600 line\\nbreak"}\n\n'.encode()),
    (2, b"event: response.completed\ndata: {}\n\n"),
]


def test_a_run_starts_renews_and_is_cancelled(store_url: str) -> None:
    async def work() -> None:
        async with opened(store_url) as store:
            now = time.time()
            assert await store.run_state("resp_a") is None
            await store.run_start("resp_a", RunClaim("replica-1", now + 10, ttl=60))
            state = await store.run_state("resp_a")
            assert state is not None and (state.owner, state.cancel, state.ended) == (
                "replica-1",
                False,
                False,
            )
            assert state.lease_until == pytest.approx(now + 10)
            renewed = await store.run_renew("resp_a", "replica-1", now + 20)
            assert renewed is not None and renewed.lease_until == pytest.approx(now + 20)
            stolen = await store.run_renew("resp_a", "replica-2", now + 99)
            assert stolen is not None and stolen.lease_until == pytest.approx(now + 20)
            cancelled = await store.run_cancel("resp_a")
            assert cancelled is not None and cancelled.cancel and not cancelled.ended
            seen = await store.run_renew("resp_a", "replica-1", now + 30)
            assert seen is not None and seen.cancel  # the runner learns of it as it renews
            assert await store.run_cancel("resp_missing") is None

    run(work())


def test_a_run_ends_once(store_url: str) -> None:
    async def work() -> None:
        async with opened(store_url) as store:
            now = time.time()
            await store.run_start("resp_b", RunClaim("replica-1", now + 10, ttl=60))
            assert not await store.run_end("resp_b", expired_before=now)  # lease still held
            assert await store.run_end("resp_b")
            assert not await store.run_end("resp_b")
            state = await store.run_state("resp_b")
            assert state is not None and state.ended
            after = await store.run_cancel("resp_b")
            assert after is not None and not after.cancel  # nothing to cancel once ended
            late = await store.run_renew("resp_b", "replica-1", now + 50)
            assert late is not None and late.lease_until == pytest.approx(now + 10)
            await store.run_start("resp_c", RunClaim("replica-2", now - 1, ttl=60))
            assert await store.run_end("resp_c", expired_before=now)  # its replica died
            assert not await store.run_end("resp_missing")

    run(work())


def test_the_log_reads_after_any_number(store_url: str) -> None:
    async def work() -> None:
        async with opened(store_url) as store:
            await store.run_start("resp_d", RunClaim("replica-1", time.time() + 10, ttl=60))
            assert await store.log_read("resp_d") == []
            await store.log_append("resp_d", FRAMES[:2])
            await store.log_append("resp_d", FRAMES[2:])
            assert await store.log_read("resp_d") == FRAMES
            assert await store.log_read("resp_d", after=0) == FRAMES[1:]
            assert await store.log_read("resp_d", after=2) == []
            assert await store.log_read("resp_other") == []
            await store.run_start("resp_d", RunClaim("replica-2", time.time() + 10, ttl=60))
            assert await store.log_read("resp_d") == []  # a new run starts a new log

    run(work())


def test_a_run_and_its_log_expire(store_url: str) -> None:
    async def work() -> None:
        async with opened(store_url) as store:
            await store.run_start("resp_e", RunClaim("replica-1", time.time() + 10, ttl=1))
            await store.log_append("resp_e", FRAMES)
            await asyncio.sleep(2.1)
            assert await store.run_state("resp_e") is None
            assert await store.log_read("resp_e") == []

    run(work())


def test_two_replicas_racing_to_end_a_run_end_it_once(durable_url: str) -> None:
    """Two connections (as two replicas would have), 20 runs, each ended by both at once."""

    async def work() -> None:
        async with opened(durable_url) as one, opened(durable_url) as two:
            now = time.time()
            ids = [f"resp_race_{n}" for n in range(20)]
            for response_id in ids:
                await one.run_start(response_id, RunClaim("replica-1", now - 1, ttl=60))

            async def end(store: Store, response_id: str) -> bool:
                return await store.run_end(response_id, expired_before=now)

            for response_id in ids:
                won = await asyncio.gather(end(one, response_id), end(two, response_id))
                assert sorted(won) == [False, True], response_id
            state = await two.run_state(ids[0])
            assert state is not None and state.ended

    run(work())


def test_a_tenants_running_runs_are_limited(store_url: str) -> None:
    """``limit`` counts the tenant's runs that go on: not another tenant's, not one that
    ended or was released, not one whose lease ran out (its replica died)."""

    async def work() -> None:
        async with opened(store_url) as store:
            now = time.time()

            async def start(rid: str, tenant: str, lease: float = 10) -> bool:
                return await store.run_start(
                    rid, RunClaim("r-1", now + lease, 60, tenant=tenant, limit=2)
                )

            assert await start("resp_l1", "ta") and await start("resp_l2", "ta")
            assert not await start("resp_l3", "ta")
            assert await store.run_state("resp_l3") is None  # refused: nothing recorded
            assert await start("resp_l4", "tb")  # another tenant has places of its own
            assert await store.run_end("resp_l1")
            assert await start("resp_l5", "ta")  # the ended run gave its place back
            assert not await start("resp_l6", "ta")
            await store.run_renew("resp_l2", "r-1", now - 1)  # its replica stopped renewing
            assert await start("resp_l7", "ta")
            assert not await start("resp_l9", "ta")
            await store.run_release("resp_l5")  # its final Response is kept
            assert await start("resp_l9", "ta")
            state = await store.run_state("resp_l5")  # released, it still runs to its end
            assert state is not None and not state.ended
            # without a limit nothing is counted
            assert await store.run_start("resp_l8", RunClaim("r-1", now + 10, 60, tenant="ta"))

    run(work())


def test_two_replicas_racing_for_the_last_place_get_one(durable_url: str) -> None:
    """Two connections start runs of one tenant at once, 20 times, with a limit of 5: 5
    start, the rest are refused."""

    async def work() -> None:
        async with opened(durable_url) as one, opened(durable_url) as two:
            lease_until = time.time() + 30

            async def start(store: Store, n: int) -> bool:
                rid = f"resp_place_{n}"
                return await store.run_start(
                    rid, RunClaim("r", lease_until, 60, tenant="t", limit=5)
                )

            won = await asyncio.gather(*(start((one, two)[n % 2], n) for n in range(20)))
            assert sum(won) == 5

    run(work())
