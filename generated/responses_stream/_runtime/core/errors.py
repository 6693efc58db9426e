"""Exceptions raised by the generated emitters and the stream tools, the base every
exception of the package derives from, and how a failed input source is reported
(:func:`source_failure`)."""

from __future__ import annotations


class ResponsesStreamError(Exception):
    """The base of every exception this package raises.

    ``except ResponsesStreamError`` catches them all.  Each also derives from the
    builtin it is a kind of (``ValueError`` for bad input, ``RuntimeError`` for a
    misuse, ``TimeoutError`` for a timeout), so clauses written for those still work.
    """


class BadValue(ResponsesStreamError, ValueError):
    """A value the package cannot take: an option, a setting, a URL or a limit."""


class MissingArgument(ResponsesStreamError, TypeError):
    """A call without an argument that what it was given makes necessary."""


class NotReady(ResponsesStreamError, RuntimeError):
    """A method called before the one it depends on has succeeded."""


class TransitionError(ResponsesStreamError, RuntimeError):
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


class ProcessorError(ResponsesStreamError, RuntimeError):
    """A misuse of the direct API (``StreamProcessor`` / ``ItemHandle``).

    Raised before anything is emitted or any state changes: a delta for an item
    that is not open, an unknown item type, transition or parameter, a value
    that strict clients would reject on the wire (a non-string ``id``, a junk
    annotation, ``usage=5``...), anything after the terminal event.  The stream
    stays endable: ``fail()`` (or ``finish()`` where legal) still ends it.
    """


SOURCE_FAILED = "source_failed"


def source_failure(exc: BaseException) -> tuple[str, str]:
    """The message and code an async stream ends with when its source raised ``exc``.

    A source can name its failure: an exception with a non-empty string ``code``
    attribute gives that code and its own text as the message.  Otherwise the code is
    ``source_timeout`` for a timeout (``TimeoutError``, or any exception whose class
    name contains ``Timeout``, like httpx's) and ``source_failed`` for anything else,
    and the message names the exception.
    """
    name, text = type(exc).__name__, str(exc)
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code:
        return text or name, code
    timeout = isinstance(exc, TimeoutError) or any(
        "Timeout" in cls.__name__ for cls in type(exc).__mro__
    )
    detail = f"{name}: {text}" if text else name
    return f"the input stream failed: {detail}", "source_timeout" if timeout else SOURCE_FAILED
