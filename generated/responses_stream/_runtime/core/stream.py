"""State shared by one response stream: sequence numbers and output slots."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from .errors import TransitionError
from .ids import RandomIds

COMPACT_EVERY = 256
"""How many deltas a ``TextAcc`` holds as separate strings before joining them."""


class TextAcc(list[str]):
    """Text accumulated from deltas, at a few bytes per delta beyond the text itself.

    Deltas are appended to the list itself (``list.append``, the hot path).  Once it
    holds ``COMPACT_EVERY`` of them the emitter calls ``compact()``, which joins them
    into one chunk, so a delta costs its characters plus a share of a chunk header
    rather than a string object of its own.  ``value()`` joins the chunks once and keeps
    the result as the only chunk: repeated snapshots share one string.
    """

    __slots__ = ("chunks",)

    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[str] = []

    def add(self, delta: str) -> None:
        """Append ``delta``, compacting when due (for callers off the hot path)."""
        self.append(delta)
        if len(self) >= COMPACT_EVERY:
            self.compact()

    def compact(self) -> None:
        """Join the deltas held separately into one chunk."""
        if self:
            self.chunks.append("".join(self))
            self.clear()

    def pieces(self) -> list[str]:
        """The text so far as a list of strings, in order (chunks, then recent deltas)."""
        return [*self.chunks, *self]

    def value(self) -> str:
        """The whole text."""
        self.compact()
        chunks = self.chunks
        if len(chunks) > 1:
            joined = "".join(chunks)
            chunks.clear()
            chunks.append(joined)
        return chunks[0] if chunks else ""


def now() -> int:
    """The current Unix time in whole seconds."""
    return int(time.time())


class StreamBase:
    """Counters and output bookkeeping that every item emitter of a stream shares.

    ``seq`` yields sequence numbers from 0.  Items take dense output indexes
    when they open and store their final snapshot when they close.
    """

    def __init__(self, ids: Callable[[str], str] | None = None) -> None:
        self.seq = itertools.count()
        self.ids: Callable[[str], str] = ids or RandomIds()
        self.output: list[Any] = []
        self.open_items: dict[int, Any] = {}
        self.state = "start"

    def open_item(self, emitter: Any, snapshot: Any) -> int:
        """Give ``emitter`` the next output index and record its first snapshot."""
        if self.state != "running":
            raise TransitionError(
                "response", f"open a {emitter.item_type} item", self.state, ("running",)
            )
        index = len(self.output)
        self.output.append(snapshot)
        self.open_items[index] = emitter
        return index

    def close_item(self, index: int, snapshot: Any) -> None:
        """Store the final snapshot of the item at ``index``."""
        self.output[index] = snapshot
        del self.open_items[index]

    def require_closed_items(self, transition: str) -> None:
        if self.open_items:
            kinds = ", ".join(f"{e.item_type}@{i}" for i, e in sorted(self.open_items.items()))
            raise TransitionError(
                "response", transition, f"items still open: {kinds}", ("no open items",)
            )
