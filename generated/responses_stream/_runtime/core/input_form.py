"""What form a stream's input is in, SSE or JSON lines, and the SSE it stands for.

Streams are kept either way: as the SSE a server sent (``data:`` lines, a blank line
after each event) or one JSON event per line, as recordings often are.  Every reader
of a stream takes both.  The form is told from the input's first byte that is not
white space (a BOM aside): ``{`` starts JSON lines; a comment (``:``) or an SSE field
name (``data``, ``event``, ``id``, ``retry``) followed by a colon or a line end starts
SSE (after blank lines only: an indented field is not SSE).  Anything else is neither:
``InputFormError``, with the input's first bytes escaped; input that is empty or only
white space is ``EmptyInput``.

``sse_from_input`` turns JSON lines into SSE as they come, without holding a line:
each non-blank line becomes one ``data:`` line and the blank line that ends its
event, and carriage returns, which JSON allows only as white space, are dropped.
The SSE parser's caps and every reader of SSE then apply unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from itertools import chain

from .aio import aclose
from .errors import BadValue, ResponsesStreamError

FORMS = ("auto", "sse", "jsonl")
SHOWN = 48  # how many first bytes a message about the input shows
_FIELDS = (b"data", b"event", b"id", b"retry")
_SPACE = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"

__all__ = ["FORMS", "EmptyInput", "InputFormError", "asse_from_input", "sse_from_input"]
# (the async reader takes neither form as SSE, as the sync one does when not strict)


class InputFormError(ResponsesStreamError, ValueError):
    """The input is neither SSE nor JSON lines."""


class EmptyInput(InputFormError):
    """The input holds nothing but white space."""


def _check(form: str) -> None:
    if form not in FORMS:
        raise BadValue(f"input must be one of {FORMS}, not {form!r}")


def form_of(head: bytes, final: bool) -> str | None:
    """``"sse"`` or ``"jsonl"`` for an input that starts with ``head``; None while more
    bytes are needed to tell (never when ``final``: ``head`` is the whole input).

    Raises ``InputFormError`` for neither, ``EmptyInput`` for nothing (when ``final``).
    """
    if not final and head and _BOM.startswith(head):
        return None  # a BOM cut short by the read
    text = head[len(_BOM) :] if head.startswith(_BOM) else head
    if not text.lstrip(_SPACE):
        if not final:
            return None
        raise EmptyInput("the input is empty" if not head else "the input is only white space")
    if text.lstrip(_SPACE)[:1] == b"{":
        return "jsonl"
    text = text.lstrip(b"\r\n")  # SSE may start with blank lines, not with indentation
    if text[:1] == b":":
        return "sse"
    for name in _FIELDS:
        after = text[len(name) : len(name) + 1]
        if text.startswith(name) and after in (b":", b"\n", b"\r"):
            return "sse"
        if not final and (name.startswith(text) or (text.startswith(name) and not after)):
            return None  # a field name cut short by the read
    shown = ascii(head[:SHOWN])[1:] + ("..." if len(head) > SHOWN else "")
    if text[:1] == b"[":
        raise InputFormError(f"the input is a JSON array ({shown}); give one event per line")
    raise InputFormError(f"the input is neither SSE nor JSON lines: it starts with {shown}")


def sse_from_input(
    blocks: Iterable[bytes], input: str = "auto", *, strict: bool = False
) -> Iterator[bytes]:
    """The input as SSE bytes: SSE as it is, JSON lines one event per line.

    With ``input="auto"`` the form is detected from the first blocks.  Input that is
    neither is passed on as SSE (whose parser skips what it does not know), unless
    ``strict``: then ``InputFormError`` (``EmptyInput``) is raised before any of the
    input is passed on.
    """
    _check(input)
    source = iter(blocks)
    found: str | None = None if input == "auto" else input
    head = b""
    while found is None:
        block = next(source, None)
        try:
            found = form_of(head + (block or b""), final=block is None)
        except InputFormError:
            if strict:
                _refuse(head + (block or b""), source)
            found = "sse"
        if block is None:
            break
        head += block
    source = chain((head,), source) if head else source
    return source if found == "sse" else _jsonl_sse(source)


def _refuse(head: bytes, source: Iterator[bytes]) -> None:
    """Raise the error for input that is neither, showing its first ``SHOWN`` bytes."""
    while len(head) <= SHOWN:  # one byte more says whether there is more
        block = next(source, None)
        if block is None:
            break
        head += block
    form_of(head, final=True)  # raises: a start that is neither stays so as it grows
    raise AssertionError("unreachable")


def asse_from_input(blocks: AsyncIterable[bytes], input: str = "auto") -> AsyncIterator[bytes]:
    """``sse_from_input`` for an async source (never strict); closing it closes the
    source.  SSE said to be SSE is the source itself, as in ``sse_from_input``."""
    _check(input)
    if input == "sse":
        return aiter(blocks)
    return _asse(aiter(blocks), input)


async def _asse(source: AsyncIterator[bytes], input: str) -> AsyncIterator[bytes]:
    try:
        found = None if input == "auto" else input
        head = b""
        while found is None:
            try:
                head += await anext(source)
            except StopAsyncIteration:
                found = "sse"  # too little to tell: read as SSE
                break
            try:
                found = form_of(head, final=False)
            except InputFormError:
                found = "sse"
        if found == "sse":
            if head:
                yield head
            async for block in source:
                yield block
            return
        lines = _JsonLines()
        if head:
            yield lines.feed(head)
        async for block in source:
            out = lines.feed(block)
            if out:
                yield out
        if lines.open:
            yield b"\n\n"
    finally:
        await aclose(source)


class _JsonLines:
    """JSON lines to SSE, a block at a time: no line is held."""

    __slots__ = ("first", "open")

    def __init__(self) -> None:
        self.open = False  # the output is inside a data: line
        self.first = True

    def feed(self, block: bytes) -> bytes:
        if self.first and block:
            self.first = False
            if block.startswith(_BOM):
                block = block[len(_BOM) :]
        out: list[bytes] = []
        for n, piece in enumerate(block.replace(b"\r", b"").split(b"\n")):
            if n and self.open:  # a line ended before this piece
                out.append(b"\n\n")
                self.open = False
            if piece and (self.open or piece.strip(_SPACE)):
                if not self.open:
                    out.append(b"data: ")
                    self.open = True
                out.append(piece)
        return b"".join(out)


def _jsonl_sse(blocks: Iterable[bytes]) -> Iterator[bytes]:
    lines = _JsonLines()
    for block in blocks:
        out = lines.feed(block)
        if out:
            yield out
    if lines.open:
        yield b"\n\n"
