"""The repaired stream's items: what a server streamed of each, and the processor calls
that stream it strictly (see ``reader`` for the events that drive them)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core import wire
from ...core.convert import declared_tools
from ...core.errors import ResponsesStreamError
from ...core.processor import ItemHandle, ProcessorError, StreamProcessor
from .markup import CallMarkup, MarkupCall

TEXT_ITEMS = ("message", "reasoning")
CALL_ITEMS = ("function_call", "custom_tool_call")
# item fields the repaired item keeps (the rest the processor makes)
KEPT_FIELDS = {
    "message": ("phase",),
    "reasoning": ("encrypted_content",),
    "function_call": ("call_id", "name", "namespace"),
    "custom_tool_call": ("call_id", "name", "namespace"),
}


class BadStream(ResponsesStreamError, ValueError):
    """The server's stream cannot be repaired from here: its message ends the stream."""


@dataclass
class _Part:
    kind: str
    text: str = ""  # all text received for it (before markup is taken out)
    done: bool = False
    added: bool = True  # its .added event came (else its first text made it)


@dataclass
class _Item:
    """One item of the server's stream and what was streamed of it."""

    type: str
    fields: dict[str, Any]
    handle: ItemHandle | None = None
    parts: list[_Part] = field(default_factory=list)
    part: _Part | None = None  # the part the handle has open
    args: str = ""
    done: bool = False
    markup: CallMarkup | None = None
    calls: int = 0  # calls its text's markup held


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class ItemWriter:
    """Streams the server's items through a ``StreamProcessor``: opens each at its first
    content, continues text that comes after another item began in a new item of its
    type, takes tool calls out of a message's markup, and settles each item against its
    final form."""

    def __init__(self, proc: StreamProcessor, request: Mapping[str, Any] | None = None) -> None:
        self.proc = proc
        self.request = request or {}
        tools = declared_tools(request)
        self.functions = frozenset(n for n, t in tools.items() if t.kind == "function")
        self.order: list[_Item] = []
        self.last: _Item | None = None  # the item the last content went to
        self.repairs: dict[str, int] = {}  # what was repaired, by kind, for logs and metrics
        self.pending: list[_Item] = []  # ended calls whose arguments are not JSON

    def _open(self, found: _Item) -> ItemHandle:
        """The item's open handle: opened (or, for text after another item began, a new
        item of its type continuing it)."""
        handle = found.handle
        if handle is not None and not handle.closed and self.proc.current is handle:
            return handle
        if handle is not None:
            if found.type not in TEXT_ITEMS:  # calls and other items are opened once, whole
                raise BadStream(f"more of {found.type} {found.fields.get('id')!r} after it ended")
            self._note("item_continued")
        kept = KEPT_FIELDS.get(found.type)
        if kept is None:
            found.handle = self._open_whole(found)
        else:
            fields = {k: found.fields[k] for k in kept if found.fields.get(k) is not None}
            if found.type in CALL_ITEMS:
                fields.setdefault("call_id", "call_" + secrets.token_hex(12))
                fields.setdefault("name", "")
            found.handle = self.proc.open(found.type, **fields)
        found.part = None
        self.last = found
        return found.handle

    def _open_whole(self, found: _Item) -> ItemHandle:
        """An item of another type (a web search, an MCP call...), opened from its final
        form with the fields its emitter takes (only the required ones when the others
        are of a newer API than the models know)."""
        cls = self.proc.dialect.item_emitters.get(found.type)
        if cls is None:
            raise BadStream(f"an output item of unknown type {found.type!r}")
        self._note("item_passed_whole")
        sig = wire.signature(cls, "__init__")
        fields = {k: v for k, v in found.fields.items() if k in sig.hints and v is not None}
        fields.pop("id", None)
        fields.pop("status", None)
        try:
            return self.proc.open(found.type, **fields)
        except ProcessorError:
            self._note("item_fields_left_out")
            return self.proc.open(found.type, **{k: fields[k] for k in sig.required if k in fields})

    def _part_of(self, found: _Item, kind: str, *, ending: bool = False) -> _Part:
        """The part of ``kind`` text goes to: the last one added, if it is still open
        (or, for the event that ends a part, ``ending``, the last one added at all)."""
        for part in reversed(found.parts):
            if part.kind == kind:
                if ending or not part.done:
                    return part
                break
        part = _Part(kind, added=False)
        found.parts.append(part)
        return part

    def _add_text(self, found: _Item, kind: str, delta: str) -> None:
        part = self._part_of(found, kind)
        part.text += delta
        if found.markup is not None and kind == "output_text":
            self._pieces(found, part, found.markup.feed(delta))
        else:
            self._stream_text(found, part, delta)

    def _stream_text(self, found: _Item, part: _Part, delta: str) -> None:
        handle = self._open(found)
        if found.part is not part or handle.part_kind != part.kind:
            handle.part(part.kind)
            found.part = part
        handle.text(delta)

    def _pieces(self, found: _Item, part: _Part, pieces: list[str | MarkupCall]) -> None:
        for piece in pieces:
            if isinstance(piece, MarkupCall):
                self._note("markup_call")
                found.calls += 1
                call = self.proc.open(
                    "function_call", call_id="call_" + secrets.token_hex(12), name=piece.name
                )
                call.delta(piece.arguments)
                call.close()
                self.last = found
            elif piece.strip() or (found.handle is not None and self.proc.current is found.handle):
                self._stream_text(found, part, piece)

    def _settle_text(self, found: _Item, part: _Part, text: str | None) -> None:
        """A part's final text: what extends the text streamed is streamed, then the part
        is closed."""
        if part.done:
            return
        if text and text != part.text:
            if text.startswith(part.text):
                self._note("text_from_done")
                self._add_text(found, part.kind, text[len(part.text) :])
            else:
                self._note("done_text_differs")
        if found.markup is not None and part.kind == "output_text":
            self._pieces(found, part, found.markup.end())
        part.done = True
        if found.part is part and found.handle is not None and not found.handle.closed:
            found.handle.close_part()
            found.part = None

    def _add_args(self, found: _Item, delta: str) -> None:
        """A call's arguments are held until the call ends: a call is streamed whole,
        so calls the server interleaves, or glues together, still come out right."""
        found.args += delta

    def _settle_args(self, found: _Item, args: str | None) -> None:
        if args and args != found.args:
            if args.startswith(found.args) or (not _is_json(found.args) and _is_json(args)):
                self._note("arguments_from_done")
                found.args = args
            else:
                self._note("done_arguments_differ")

    def _stream_call(self, found: _Item, status: str = "completed") -> None:
        """The held call, streamed: several when its arguments are JSON objects glued
        together (each its own call, the first with the server's call id)."""
        if found.type == "function_call" and not found.args.strip():
            self._note("empty_arguments")
            found.args = "{}"  # a call without arguments, as OpenAI's API writes one
        glued = _glued(found.args) if found.type == "function_call" else None
        if glued is None:
            handle = self._open(found)
            if found.args:
                handle.delta(found.args)
            handle.close(status)
            return
        self._note("glued_calls_split")
        call_id = found.fields.get("call_id") or "call_" + secrets.token_hex(12)
        for at, args in enumerate(glued):
            found.fields["call_id"] = call_id if at == 0 else f"{call_id}_{at}"
            found.handle = None
            handle = self._open(found)
            handle.delta(args)
            handle.close(status)

    def _settle_item(self, found: _Item, item: Mapping[str, Any]) -> None:
        """An item's final form: what it holds that was not streamed is streamed.  The
        item stays open until the next item or the terminal event (which knows whether
        the output was cut), unless it says it is incomplete."""
        if found.done:
            return
        found.done = True
        found.fields.update({k: v for k, v in item.items() if v is not None})
        if found.type in TEXT_ITEMS:
            self._settle_parts(found, item)
        elif found.type in CALL_ITEMS:
            self._settle_args(found, _text(item.get("arguments", item.get("input"))))
        if found.type in CALL_ITEMS:
            status = "incomplete" if item.get("status") == "incomplete" else "completed"
            if status == "completed" and _broken(found):
                self.pending.append(found)  # cut short or malformed: the end tells which
            else:
                self._stream_call(found, status)
            return
        handle = found.handle
        if handle is None:
            if found.calls:
                return  # its text was all calls: they are the items
            handle = self._open(found)
        if item.get("status") == "incomplete" and not handle.closed:
            handle.close("incomplete")

    def _settle_parts(self, found: _Item, item: Mapping[str, Any]) -> None:
        for slot in ("summary", "content"):
            parts = item.get(slot)
            if not isinstance(parts, list):
                continue
            known = [p for p in found.parts if (p.kind == "summary_text") == (slot == "summary")]
            for at, part in enumerate(parts):
                if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
                    continue
                text = _text(part.get("text", part.get("refusal")))
                if at < len(known):
                    if not known[at].done:
                        self._settle_text(found, known[at], text)
                    continue
                if text:
                    self._note("part_from_done")
                    kind = part["type"]
                    fresh = _Part(kind)
                    found.parts.append(fresh)
                    self._add_text(found, kind, text)
                    self._settle_text(found, fresh, text)
        for part in found.parts:  # parts the final form leaves out: closed as streamed
            if not part.done:
                self._settle_text(found, part, None)

    def _stream_pending(self, status: str) -> None:
        """The ended calls whose arguments are not JSON, once the end of the stream says
        whether the output was cut (``incomplete``: cut at the token limit, as OpenAI's
        API ends such a call) or not (their arguments are as the model wrote them)."""
        pending, self.pending = self.pending, []
        for found in pending:
            self._stream_call(found, status)

    def _flush_held(self) -> None:
        """What is held when the stream fails: text that may have begun a call's markup,
        and the calls not yet streamed (closed incomplete)."""
        self._stream_pending("incomplete")
        for found in self.order:
            if found.markup is not None:
                for part in found.parts:
                    if part.kind == "output_text" and not part.done:
                        self._pieces(found, part, found.markup.end())
            if found.type in CALL_ITEMS and not found.done:
                found.done = True
                self._stream_call(found, "incomplete")

    def _note(self, kind: str) -> None:
        self.repairs[kind] = self.repairs.get(kind, 0) + 1


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _glued(text: str) -> list[str] | None:
    """The JSON objects ``text`` holds one after another, when it holds two or more and
    nothing else (parallel calls a server glued into one); else None."""
    if _is_json(text) or not text.strip():
        return None
    decoder, out, at = json.JSONDecoder(), [], 0
    while at < len(text):
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        if at == len(text):
            break
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        out.append(text[at:end])
        at = end
    return out if len(out) > 1 else None


def _broken(found: _Item) -> bool:
    """A function call whose arguments are neither JSON nor JSON objects glued together."""
    return found.type == "function_call" and not _is_json(found.args) and _glued(found.args) is None
