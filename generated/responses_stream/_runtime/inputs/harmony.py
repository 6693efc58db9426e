"""Harmony (gpt-oss) segments -> Responses stream, routed by the harmony routes spec.

A message arrives as segments ``(channel, recipient, delta)`` and ends with
``end_message(content_type)``.  The first route that matches the message's
channel and recipient names the item type, how it is opened, where its text
goes, which transitions finish it, and the parameters that close it.

Bad input never raises and never leaves a stream without its terminal event:
a segment whose channel, recipient or delta is not a string, a message no route
takes (no channel, or an empty one), a junk ``content_type``,
``usage`` or ``reason`` end the stream with
``error`` (code ``invalid_harmony_input``) and ``response.failed``, every item
closed and the text received until then kept.  A buffered message (the
``browser.*`` routes) whose text does not give its item's close parameters (JSON
that does not parse, a ``query`` that is not a string, a message cut short)
goes to the next route that matches it, which keeps the text as arguments.
Calls once the stream has ended do nothing.

A message on a channel Harmony does not define (``analysis``, ``commentary`` and
``final`` are its channels) is taken by the routes' fallback: its text is kept as
reasoning, never as the answer, the messages after it go on as usual, and each such
message is a warning (``warnings``, and this module's logger).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from ..core import wire
from ..core.convert import normalize_usage, resolve_tool, tool_index
from ..core.errors import BadValue, ResponsesStreamError, TransitionError
from ..core.limits import LIMIT_EXCEEDED, LimitExceeded
from ..core.processor import INCOMPLETE_REASONS, ItemHandle, ProcessorError, StreamProcessor
from ..core.stream import TextAcc

_log = logging.getLogger(__name__)

BAD_HARMONY = "invalid_harmony_input"
"""The ``code`` of the ``error`` event sent when Harmony input cannot be converted."""


class BadHarmony(ResponsesStreamError, ValueError):
    """Harmony input that cannot be part of a valid stream (the stream is failed)."""


class _Unusable(ResponsesStreamError):
    """A buffered message's text does not give its route's close parameters."""


def _segments(recipient: str) -> list[str]:
    return recipient.split(".")


def recipient_source(name: str, recipient: str) -> str:
    parts = _segments(recipient)
    if name == "recipient":
        return recipient
    if name == "recipient.head":
        return parts[0]
    if name == "recipient.rest":
        return recipient.split(".", 1)[1] if len(parts) > 1 else recipient
    if name == "recipient.last":
        return parts[-1]
    if name == "recipient.second":
        return parts[1] if len(parts) > 1 else parts[0]
    raise BadValue(name)


def _uses_text(source: Any) -> bool:
    """Whether a route source (or a mapping of them) reads the message text."""
    if isinstance(source, Mapping):
        return any(_uses_text(v) for v in source.values())
    name = str(source).partition("|")[0]
    return name == "text" or name.startswith("args.")


def _uses_args(source: Any) -> bool:
    """Whether a route source (or a mapping of them) reads the message text as JSON."""
    if isinstance(source, Mapping):
        return any(_uses_args(v) for v in source.values())
    return str(source).partition("|")[0].startswith("args.")


def _accepts(proc: StreamProcessor, item_type: str, method: str, params: Mapping[str, Any]) -> bool:
    """Whether ``method`` of ``item_type``'s emitter takes ``params`` as strict clients would.

    The same checks the processor makes, made here before the item opens; nothing is
    counted (lone surrogates are counted when the values are really used).
    """
    cls = proc.dialect.item_emitters[item_type]
    sig = wire.signature(cls, method)
    if any(name not in sig.hints for name in params) or sig.required - params.keys():
        return False
    shapes = wire.SHAPES.get(proc.dialect.name, {}).get(item_type, {})
    try:
        for name, value in params.items():
            wire.check_value(value, sig.hints[name], shapes.get(name), name, wire.Fixes())
    except ProcessorError:
        return False
    return True


class HarmonyToResponses:
    """Feeds Harmony segments into a ``StreamProcessor``; read events with ``drain()``.

    ``done`` is true once the stream has ended; ``error`` then holds the message of the
    ``error`` event if the input was bad, and ``ignored`` counts the calls made after
    the end (they change nothing).
    """

    def __init__(self, proc: StreamProcessor, request: Mapping[str, Any] | None = None) -> None:
        if not isinstance(proc, StreamProcessor):
            raise ProcessorError(f"HarmonyToResponses needs a StreamProcessor, got {proc!r:.80}")
        if request is not None and not isinstance(request, Mapping):
            raise ProcessorError(f"request must be a mapping, got {request!r:.80}")
        self.proc = proc
        proc.fail_on_limit = False  # over a limit, _fail keeps the buffered text first
        self.routes: list[dict[str, Any]] = proc.dialect.tables.HARMONY_ROUTES
        try:
            self.tools = tool_index(request)
        except (TypeError, AttributeError) as exc:
            raise ProcessorError(f"request: malformed tools ({exc})") from None
        self._index = {id(r): i for i, r in enumerate(self.routes)}
        self._keeps_text = [_uses_text(r["open"]) or _uses_text(r["close"]) for r in self.routes]
        self.route: dict[str, Any] | None = None
        self.handle: ItemHandle | None = None
        self.channel: str | None = None
        self.recipient = ""
        self.buffer = TextAcc()
        self.buffered = 0  # characters held for a buffered route
        self.pending = ""  # a high surrogate whose pair may come in the next delta
        self.call_id = ""
        self.done = False
        self.error: str | None = None
        self.ignored = 0
        self.warnings: list[str] = []  # messages a fallback route took, in order

    # -- routing --------------------------------------------------------------
    def match(self, channel: str | None, recipient: str | None, after: int = -1) -> dict[str, Any]:
        """The first route after index ``after`` that takes the message, or ProcessorError."""
        for index, route in enumerate(self.routes):
            if index <= after:
                continue
            m = route["match"]
            if m["channel"] is not None and m["channel"] != channel:
                continue
            if m["any_channel"] and not channel:
                continue
            if m["no_recipient"] and recipient:
                continue
            if m["any_recipient"] and not recipient:
                continue
            if m["recipient"] is not None and m["recipient"] != recipient:
                continue
            if m["recipient_prefix"] is not None and not (recipient or "").startswith(
                m["recipient_prefix"]
            ):
                continue
            return route
        raise ProcessorError(f"no harmony route for channel={channel!r} recipient={recipient!r}")

    # -- input ----------------------------------------------------------------
    def segment(self, channel: str | None, recipient: str | None, delta: str) -> None:
        """One piece of the current message.

        A segment whose channel or recipient differs from the open message's starts a
        new message (and item), as if ``end_message`` had come first.
        """
        if self._ignore():
            return
        try:
            self._segment(channel, recipient, delta)
        except (BadHarmony, ProcessorError, TransitionError) as exc:
            self._failed(exc)

    def end_message(self, content_type: str | None = None) -> None:
        """The current message is complete: run its finishing transitions and close it.

        ``content_type`` (``<|constrain|>json``...) is informational; without an open
        message this does nothing.
        """
        if self._ignore():
            return
        try:
            if content_type is not None and type(content_type) is not str:
                raise BadHarmony(
                    f"end_message: content_type must be a str, got {content_type!r:.80}"
                )
            self._end_message()
        except (BadHarmony, ProcessorError, TransitionError) as exc:
            self._failed(exc)

    def end(self, usage: Mapping[str, Any] | None = None, reason: str | None = None) -> None:
        """The output is over: a message still open is cut short (``response.incomplete``).

        ``reason`` (``max_output_tokens`` or ``content_filter``) makes the stream
        incomplete even when no message is open.
        """
        if self._ignore():
            return
        try:
            if reason is not None and reason not in INCOMPLETE_REASONS:
                raise BadHarmony(
                    f"end: reason must be one of {INCOMPLETE_REASONS} or None, got {reason!r:.80}"
                )
            if usage is not None and not isinstance(usage, Mapping):
                raise BadHarmony(f"end: usage must be a mapping of token counts, got {usage!r:.80}")
            try:
                u = normalize_usage(usage)
            except (AttributeError, TypeError) as exc:
                raise BadHarmony(f"end: malformed usage ({exc})") from None
            if not self.proc.started:
                self.proc.start()
            cut = self.route is not None
            if cut:
                self._keep_buffered()
                self._flush()
            self.done = True
            self.route = self.handle = None
            if cut or reason is not None:
                self.proc.truncate(reason or "max_output_tokens", u)
            else:
                self.proc.finish(u)
        except (BadHarmony, ProcessorError, TransitionError) as exc:
            self._failed(exc)

    # -- internals --------------------------------------------------------------
    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        _log.warning("%s", message)

    def _ignore(self) -> bool:
        if self.done or self.proc.ended:
            self.done = True
            self.ignored += 1
            return True
        return False

    def _segment(self, channel: Any, recipient: Any, delta: Any) -> None:
        for name, value in (("channel", channel), ("recipient", recipient)):
            if value is not None and type(value) is not str:
                raise BadHarmony(f"segment: {name} must be a str or None, got {value!r:.80}")
        if type(delta) is not str:
            raise BadHarmony(f"segment: delta must be a str, got {delta!r:.80}")
        if not self.proc.started:
            self.proc.start()
        if self.route is not None and (
            channel != self.channel or (recipient or "") != self.recipient
        ):
            self._end_message()
        if self.route is None:
            self._open(channel, recipient or None)
        route = self.route
        assert route is not None
        if route["buffer"]:  # the item opens when the message ends
            total = self.buffered + len(delta)
            if total > self.proc.max_item_chars:
                self._keep_buffered()  # the text so far goes to an item before the stream fails
                self.proc.over_limit(
                    "max_item_text_chars",
                    f"harmony message to {self.recipient}: {total} characters",
                )
            self.buffered = total
            self.buffer.add(delta)
            return
        if self._keeps_text[self._index[id(route)]]:
            self.buffer.add(delta)
        if self.pending:
            delta, self.pending = self.pending + delta, ""
        if delta and "\ud800" <= delta[-1] <= "\udbff":  # a pair may end in the next delta
            delta, self.pending = delta[:-1], delta[-1]
        if delta:
            self._send(delta)

    def _send(self, delta: str) -> None:
        route, handle = self.route, self.handle
        assert route is not None and handle is not None
        if route["part"] is not None:
            handle.text(delta)
        else:
            handle.delta(delta)

    def _flush(self) -> None:
        """A high surrogate held back for its pair that never came goes out (as U+FFFD)."""
        if self.pending and self.handle is not None and not self.handle.closed:
            pending, self.pending = self.pending, ""
            self._send(pending)
        self.pending = ""

    def _open(self, channel: str | None, recipient: str | None) -> None:
        route = self.match(channel, recipient)
        if route["warn"]:
            self._warn(route["warn"].format(channel=channel, recipient=recipient))
        self.channel, self.recipient = channel, recipient or ""
        self.buffer = TextAcc()
        self.buffered = 0
        self.pending = ""
        self.call_id = ""
        self.route = route
        self.handle = None if route["buffer"] else self._open_item(route)

    def _open_item(self, route: Mapping[str, Any]) -> ItemHandle:
        fields = {k: self._value(v) for k, v in route["open"].items()}
        if route["tool"] and "name" in fields:
            tool = resolve_tool(self.tools, str(fields["name"]))
            fields["name"] = tool.name
            if tool.namespace is not None:
                fields["namespace"] = tool.namespace
        handle = self.proc.open(route["item"], **fields)
        if route["part"] is not None:
            handle.part(route["part"])
        return handle

    def _resolve(self, route: dict[str, Any], complete: bool) -> tuple[dict[str, Any], ItemHandle]:
        """Open the item of a buffered message: its own route if the text gives every
        close parameter (and the message is ``complete``), else the next route that
        matches and does not buffer, fed the text as it came."""
        candidate = route
        while True:
            if candidate["buffer"]:
                if complete and self._usable(candidate):
                    return candidate, self._open_item(candidate)
            else:
                handle = self._open_item(candidate)
                self.route = candidate
                text = self.buffer.value()  # whole: a surrogate pair split over deltas joins
                if text:
                    if candidate["part"] is not None:
                        handle.text(text)
                    else:
                        handle.delta(text)
                return candidate, handle
            candidate = self.match(self.channel, self.recipient, self._index[id(candidate)])

    def _usable(self, route: Mapping[str, Any]) -> bool:
        """Whether the buffered text gives every parameter ``route`` opens and closes with.

        A route that reads arguments needs the text to be a JSON object.
        """
        if _uses_args(route["open"]) or _uses_args(route["close"]):
            try:
                args = json.loads(self.buffer.value())
            except (ValueError, RecursionError):
                return False
            if not isinstance(args, Mapping):
                return False
        try:
            params = {k: self._value(v, strict=True) for k, v in route["close"].items()}
            opened = {k: self._value(v) for k, v in route["open"].items()}
        except _Unusable:
            return False
        return _accepts(self.proc, route["item"], "__init__", opened) and _accepts(
            self.proc, route["item"], "done", params
        )

    def _keep_buffered(self) -> None:
        """A buffered message that will not end normally: its text goes to an item now."""
        route = self.route
        if route is not None and route["buffer"] and self.handle is None:
            self.route, self.handle = self._resolve(route, complete=False)

    def _end_message(self) -> None:
        route = self.route
        if route is None:
            return
        handle = self.handle
        if handle is None:
            route, handle = self._resolve(route, complete=True)
        else:
            self._flush()
        self.route = self.handle = None
        for name in route["finish"]:
            handle.phase(name)
        params = {k: self._value(v) for k, v in route["close"].items()}
        handle.close("completed", **params)

    def _value(self, source: Any, strict: bool = False) -> Any:
        if isinstance(source, Mapping):
            out = {k: self._value(v, strict) for k, v in source.items()}
            return {k: v for k, v in out.items() if v is not None}
        name, sep, fallback = str(source).partition("|")
        value = self._lookup(name)
        if value is None and fallback.startswith("="):
            return fallback[1:]
        if strict and name.startswith("args."):
            if value is None and not sep or value is not None and type(value) is not str:
                raise _Unusable(name)  # missing, or not the string a Harmony argument is
        return value

    def _lookup(self, name: str) -> Any:
        if name.startswith("="):
            return name[1:]
        if name.startswith("recipient"):
            return recipient_source(name, self.recipient)
        if name == "call_id":
            if not self.call_id:
                self.call_id = self.proc.response.ids("call_")
            return self.call_id
        text = self.buffer.value()
        if name == "text":
            return text
        if name.startswith("args."):
            try:
                args = json.loads(text) if text else {}
            except (ValueError, RecursionError):
                return None
            return args.get(name[5:]) if isinstance(args, Mapping) else None
        raise BadValue(name)

    def _failed(self, exc: Exception) -> None:
        """Bad input: fail the stream; over a limit, then raise ``LimitExceeded``."""
        if isinstance(exc, LimitExceeded):
            self._fail(str(exc), LIMIT_EXCEEDED)
            raise exc
        self._fail(str(exc), BAD_HARMONY)

    def _fail(self, message: str, code: str = BAD_HARMONY) -> None:
        """End the stream with ``error`` and ``response.failed``, keeping what came."""
        self.done = True
        self.error = message
        try:
            self._keep_buffered()
            self._flush()
        except (ProcessorError, TransitionError):
            pass  # no route keeps the buffered text: the error still ends the stream
        self.route = self.handle = None
        self.proc.fail(message, code=code)
