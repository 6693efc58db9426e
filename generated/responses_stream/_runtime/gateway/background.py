"""Background responses (``background: true``): the run goes on after the client leaves.

Every event of a background run is appended to a log in the store as it is made, so any
replica answers a poll (the log folded into the Response), a resumed stream (the log after
``starting_after``, then the live events as they are logged) and a cancel (a flag in the
store, which the replica running it reads as it renews its lease, and acts on at once when
the cancel reaches that replica itself).  The replica holds the run by a lease it renews
every :data:`RENEW` seconds; a run whose lease ran out was lost with its replica.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..consumers.accumulate import AccumulateError, ResponseAccumulator
from ..core.processor import get_dialect
from ..core.sse_parse import parse_sse
from .errors import GatewayError
from .store import Store, StoredResponse
from .store.base import LogEntry, RunClaim, RunState
from .turn import Turn, ending_frames, final_response, keep

log = logging.getLogger("responses_stream.gateway")

LEASE = 10.0  # seconds a replica holds a run without renewing it (by default)
RENEW = 1.0  # seconds between renewals (and between looks for a cancel from elsewhere)
FOLLOW = 0.05  # seconds between reads of a log a resumed stream follows
REPLICA = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
TERMINAL = ("completed", "incomplete", "failed", "cancelled")
LOST = "the gateway replica running this background response stopped before it ended"
_SEQUENCE = re.compile(rb'"sequence_number":(\d+)')


def log_entries(frames: bytes) -> list[LogEntry]:
    """The events among SSE ``frames`` (the conversion's: one ``data`` line an event), each
    with its sequence number."""
    entries: list[LogEntry] = []
    for block in frames.split(b"\n\n"):
        found = _SEQUENCE.search(block)
        if found is not None:
            entries.append((int(found.group(1)), block + b"\n\n"))
    return entries


def lost(snapshot: dict[str, Any], message: str) -> dict[str, Any]:
    """``snapshot`` as a response that failed because its run was lost."""
    return {**snapshot, "status": "failed", "error": {"code": "server_error", "message": message}}


def cancelled(snapshot: dict[str, Any]) -> dict[str, Any]:
    """``snapshot`` cancelled: as OpenAI's API keeps a cancelled response, with no output."""
    return {**snapshot, "status": "cancelled", "output": []}


def fold(entries: list[LogEntry], dialect: str) -> dict[str, Any] | None:
    """The Response the logged events make so far (None before ``response.created``)."""
    acc = ResponseAccumulator(dialect, check_texts=False)
    snapshot: dict[str, Any] | None = None
    for message in parse_sse(frame for _, frame in entries):
        try:
            snapshot = acc.feed(json.loads(message.data))
        except (AccumulateError, ValueError) as exc:
            log.warning("a logged event does not fold: %s", exc)
    return acc.final or snapshot


@dataclass
class Runs:
    """The background runs of this replica, and what every replica does with any run."""

    store: Store
    ttl: int = 24 * 3600
    max_running: int = 16
    lease: float = LEASE
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    closing: bool = False  # shutting down: a run stopped now failed, it was not cancelled

    async def admit(self, turn: Turn) -> None:
        """Take a place for ``turn``'s run before the upstream is called: a 429 when its key
        already has as many running (on any replica) as a key may."""
        lease_until = time.time() + self.lease
        claim = RunClaim(
            REPLICA, lease_until, self.ttl, turn.dialect, turn.tenant, self.max_running
        )
        if not await self.store.run_start(turn.response_id, claim):
            raise GatewayError(
                429,
                f"at most {self.max_running} background responses may run at once for a key",
                code="rate_limit_exceeded",
            )

    async def withdraw(self, turn: Turn) -> None:
        """Give up the place :meth:`admit` took (the upstream refused the turn)."""
        await self.store.run_end(turn.response_id)

    async def start(self, turn: Turn, opening: bytes) -> dict[str, Any]:
        """Log ``turn``'s opening events, store it queued and run it on; the queued
        Response.  ``opening`` is the frames :meth:`Turn.start` made."""
        rid = turn.response_id
        entries = log_entries(opening)
        # the Response as it is before it runs: what created and queued made of it
        waiting = [e for e in entries if b"event: response.in_progress\n" not in e[1]]
        queued = fold(waiting, turn.dialect) or {}
        await self.store.run_renew(rid, REPLICA, time.time() + self.lease)
        await self.store.log_append(rid, entries)
        await self.store.put(StoredResponse(queued, turn.input_items, tenant=turn.tenant))
        self.tasks[rid] = asyncio.create_task(self._run(turn, len(entries)))
        return queued

    async def _run(self, turn: Turn, skip: int) -> None:
        rid = turn.response_id
        renewing = asyncio.create_task(self._renew(rid))
        try:
            async for frames in turn.frames():
                entries = log_entries(frames)[skip:]
                skip = 0
                final = final_response(frames)
                if final is not None:
                    # the record first, whole: a poll that reads the terminal status, and a
                    # continuation that loads it, then find its output; and the key may
                    # start its next run
                    turn.response = final
                    await self.store.run_release(rid)
                    await keep(self.store, turn)
                if entries:
                    await self.store.log_append(rid, entries)
            await self.store.run_end(rid)
        except asyncio.CancelledError:
            if self.closing:
                await self._failed(turn, "the gateway shut down before the response ended")
            else:
                await self._cancelled(turn)
        except Exception:
            log.exception("background response %s broke off", rid)
            await self._failed(turn, "the background response broke off")
        finally:
            renewing.cancel()
            self.tasks.pop(rid, None)

    async def _cancelled(self, turn: Turn) -> None:
        """End ``turn``'s run cancelled: ``response.failed`` logged after what it made,
        carrying the Response cancelled, and its record cancelled."""
        rid = turn.response_id
        if turn.response is not None:  # it ended (and was kept) as the cancel came
            await self.store.run_end(rid)
            return
        if await self.store.run_end(rid):
            entries = await self.store.log_read(rid)
            response = cancelled(fold(entries, turn.dialect) or {})
            await self._log_ending(rid, turn.dialect, entries, response)
            turn.response = response
            await keep(self.store, turn)

    async def _failed(self, turn: Turn, message: str) -> None:
        """End ``turn``'s run failed: ``error`` and ``response.failed`` logged after what it
        made, and its record failed."""
        if turn.response is not None:  # it ended (and was kept) before it was stopped
            await self.store.run_end(turn.response_id)
            return
        if await self.store.run_end(turn.response_id):
            turn.response = await self._log_failure(turn.response_id, turn.dialect, message)
            await keep(self.store, turn)

    async def _log_failure(self, rid: str, dialect: str, message: str) -> dict[str, Any]:
        """Log ``error`` and ``response.failed`` after what the run made; the failed
        Response."""
        entries = await self.store.log_read(rid)
        response = lost(fold(entries, dialect) or {}, message)
        await self._log_ending(rid, dialect, entries, response, ("replica_lost", message))
        return response

    async def _log_ending(
        self,
        rid: str,
        dialect: str,
        entries: list[LogEntry],
        response: dict[str, Any],
        error: tuple[str, str] | None = None,
    ) -> None:
        """Log the events that end the run after its logged ``entries``."""
        seq = entries[-1][0] + 1 if entries else 0
        frames = ending_frames(dialect, seq, response, error)
        await self.store.log_append(rid, log_entries(frames))

    async def _renew(self, rid: str) -> None:
        """Hold the lease while the run goes on; a cancel asked elsewhere stops it."""
        while True:
            await asyncio.sleep(RENEW)
            try:
                state = await self.store.run_renew(rid, REPLICA, time.time() + self.lease)
            except Exception as exc:  # the store is down: the run goes on, its lease may lapse
                log.warning("background response %s: the lease was not renewed: %s", rid, exc)
                continue
            if state is not None and state.cancel:
                task = self.tasks.get(rid)
                if task is not None:
                    task.cancel()
                return

    async def cancel(self, rid: str) -> RunState | None:
        """Ask for the run to stop: at once when it runs here, else at its replica's next
        renewal, waited for (up to a lease); the state after."""
        state = await self.store.run_cancel(rid)
        if state is None or state.ended:
            return state
        task = self.tasks.get(rid)
        if task is not None:
            task.cancel()
            await asyncio.wait([task], timeout=self.lease)
            return await self.store.run_state(rid)
        deadline = time.monotonic() + self.lease
        while state is not None and not state.ended and time.monotonic() < deadline:
            await asyncio.sleep(FOLLOW)
            state = await self.reap(rid)  # its replica may have died meanwhile
        return state

    async def current(self, record: StoredResponse) -> dict[str, Any]:
        """``record``'s Response as it stands: a run not yet ended, folded from its log (and
        failed, when its replica died)."""
        response = record.response
        if response.get("status") in TERMINAL:
            return response
        state = await self.reap(record.id)
        if state is None:
            return response
        folded = fold(await self.store.log_read(record.id), state.dialect)
        return folded or response

    async def reap(self, rid: str) -> RunState | None:
        """End a run whose lease ran out (its replica died) with ``error`` and
        ``response.failed``, logged in its dialect, and its record failed; the run's
        state after."""
        now = time.time()
        state = await self.store.run_state(rid)
        if state is None or state.ended or state.lease_until >= now:
            return state
        if await self.store.run_end(rid, expired_before=now):
            failed = await self._log_failure(rid, state.dialect, LOST)
            record = await self.store.get(rid)
            if record is not None:
                await self.store.put(replace(record, response=failed))
            log.warning("background response %s failed: its replica stopped renewing it", rid)
        return await self.store.run_state(rid)

    async def follow(self, rid: str, after: int) -> AsyncIterator[bytes]:
        """The logged frames numbered above ``after``, then those logged as the run goes on,
        until it ended and every event was sent (then its dialect's closing frame)."""
        while True:
            entries = await self.store.log_read(rid, after)
            for seq, frame in entries:
                after = seq
                yield frame
            if entries:
                continue
            state = await self.reap(rid)
            if state is None or state.ended:
                for seq, frame in await self.store.log_read(rid, after):
                    after = seq
                    yield frame
                closing = get_dialect(state.dialect if state else "openai").encoder().close()
                if closing:
                    yield closing
                return
            await asyncio.sleep(FOLLOW)

    async def aclose(self) -> None:
        """Shutting down: the runs of this replica end failed, as streams in flight do."""
        self.closing = True
        for task in list(self.tasks.values()):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=self.lease)
