"""Exceptions raised by the generated emitters and the stream tools."""

from __future__ import annotations


class TransitionError(RuntimeError):
    """A transition was called where the state machine does not allow it.

    This is a programming error in the producer: a delta for an item that is
    not open, closing an item twice, an event after the terminal one.
    """

    def __init__(self, machine: str, transition: str, state: str, allowed: tuple[str, ...]) -> None:
        self.machine = machine
        self.transition = transition
        self.state = state
        self.allowed = allowed
        where = ", ".join(allowed) if allowed else "nowhere"
        super().__init__(
            f"{machine}: cannot {transition!r} in state {state!r} (allowed from: {where})"
        )


class ProcessorError(RuntimeError):
    """A misuse of the direct API (``StreamProcessor`` / ``ItemHandle``).

    Raised before anything is emitted or any state changes: a delta for an item
    that is not open, an unknown item type, transition or parameter, a value
    that strict clients would reject on the wire (a non-string ``id``, a junk
    annotation, ``usage=5``...), anything after the terminal event.  The stream
    stays endable: ``fail()`` (or ``finish()`` where legal) still ends it.
    """
