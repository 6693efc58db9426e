"""One stream setup per turn of the event loop.

Requests that come together are read together: run as they come, every setup (the
translation, the opening events, the upstream request) runs before the loop reads any
upstream's answer, and the first event of every stream waits for the last setup of
the burst.  :class:`Admission` lets one setup start per turn of the loop, which polls
its sockets between turns: a stream whose upstream answered sends its first event
before the setups still waiting.  A request that finds no setup started in this turn
goes on at once.  A route takes its turn once the request's body has come (a client
may send the body apart from the head): a turn is then spent on work, never on a
wait for the client.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Admission:
    """The queue of setups waiting for their turn (first come, first served)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._open = True  # no setup started in this turn yet
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return sum(not waiter.done() for waiter in self._waiting)

    async def turn(self) -> None:
        """Return when this setup may start: at once when none started in this turn of
        the loop, else in a later turn, after those waiting before it."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # served on a new loop: nothing of the old one is left
            self._loop, self._open, self._waiting = loop, True, deque()
        if self._open:
            self._open = False
            loop.call_soon(self._next)
            return
        waiter = loop.create_future()
        self._waiting.append(waiter)
        await waiter  # a request cancelled while it waits is skipped

    def _next(self) -> None:
        """A new turn: let the first setup still waiting go, or open the gate."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                assert self._loop is not None
                self._loop.call_soon(self._next)
                return
        self._open = True
