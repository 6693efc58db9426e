"""Graceful shutdown: on SIGTERM (or a first SIGINT) the server stops accepting, the
streams in flight go on for the grace period, and then those still running are ended.

Ending one means cutting its upstream connection (:func:`upstream.interrupt_streams`):
the conversion then writes ``error`` and ``response.failed`` as for any upstream that
broke off (code ``gateway_shutdown``), keeping what was said, and the record is stored
as for any failed response.  The server (uvicorn) waits for them, longer than the grace
period, before it exits.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from .upstream import interrupt_streams

log = logging.getLogger("responses_stream.gateway")
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Drain:
    """Watches for the server's shutdown signals (see the module doc)."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.begun = False
        self._timer: asyncio.TimerHandle | None = None

    def install(self) -> Callable[[], None]:
        """Chain a handler before the server's own for each signal (the main thread
        only: elsewhere there are no signals); returns what takes it out again."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        loop = asyncio.get_running_loop()
        previous = {sig: signal.getsignal(sig) for sig in SIGNALS}

        def handler(sig: int, frame: FrameType | None) -> None:
            if not self.begun:
                self.begun = True
                loop.call_soon_threadsafe(self._arm, loop)
            chained: Any = previous[signal.Signals(sig)]
            if callable(chained):
                chained(sig, frame)

        for sig in SIGNALS:
            signal.signal(sig, handler)

        def uninstall() -> None:
            for sig, chained in previous.items():
                signal.signal(sig, chained)
            if self._timer is not None:
                self._timer.cancel()

        return uninstall

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        log.info("shutting down: streams still running in %gs will be ended", self.grace)
        self._timer = loop.call_later(self.grace, self.end_streams)

    def end_streams(self) -> int:
        """End every stream still running; how many there were."""
        count = interrupt_streams()
        if count:
            log.warning("shutdown grace period over: %d stream(s) ended", count)
        return count
