"""The chat-to-Responses converter: its input methods, events or SSE frames out, and the
fast paths of the usual chunk."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ...core.convert import loads, normalize_usage
from ...core.processor import ItemHandle
from ...core.sse_parse import has_surrogate
from .client_calls import MODEL_ERROR
from .general import ChunkReader
from .shapes import (
    _HANDLED,
    EMPTY_INPUT,
    InputFailure,
    _Call,
    _decode,
    _decode_quick,
    _PartFast,
    _QuickChunk,
)


class ChatToResponses(ChunkReader):
    """Feeds chat chunks into a ``StreamProcessor``; read events with ``drain()``.

    For SSE bytes rather than events, ``feed_data_sse``/``feed_sse``/``end_sse`` return
    the frames of what each call produced (the fastest way to serve a stream).  The usual
    chunk (one choice, one text field or one live call's arguments) takes a fast path;
    anything else the general one (``ChunkReader``).
    """

    # -- input --------------------------------------------------------------
    def feed_data(self, data: str) -> None:
        """One SSE ``data:`` payload: a JSON chunk or ``[DONE]``."""
        chunk = self._parse(data)
        if chunk is not _HANDLED:
            self.feed(chunk)

    def feed(self, chunk: Any) -> None:
        """One parsed chunk."""
        if self.done:
            return
        text = self._plain_text(chunk)
        if text is not None:
            self.proc.out += self._part_methods()[2](text)
            return
        live = self._live_args(chunk)
        if live is not None:
            call, args = live
            if call.handle is None:
                self._keep_args(call, args)
            else:
                self.proc.out += call.handle.emitter.delta(args)
            return
        self._feed_any(chunk)

    def _parse(self, data: str) -> Any:
        """The chunk in a ``data:`` payload, or ``_HANDLED`` for ``[DONE]`` and bad JSON."""
        if self.done:
            return _HANDLED
        if isinstance(data, InputFailure):
            self._fail(str(data), data.code)
            return _HANDLED
        if not isinstance(data, str):
            self.seen = True
            self._fail(f"malformed chunk: a data payload must be a str, got {type(data).__name__}")
            return _HANDLED
        if data.strip() == "[DONE]":
            self.end()
            return _HANDLED
        self.seen = True
        try:
            return loads(data)
        except (ValueError, RecursionError) as exc:
            self._fail(f"malformed chunk (not JSON): {exc}"[:1000])
            return _HANDLED

    def end(self) -> None:
        """The input is over ([DONE] or end of stream)."""
        if self.done:
            return
        if not self.proc.started:
            self.proc.start()
        if not self.seen:
            self._fail("the input holds no chat chunk (empty, or not a chat stream)", EMPTY_INPUT)
            return
        self.done = True
        reason = self.finish_reasons.get(self.finish_reason or "", None)
        usage = normalize_usage(self.usage)
        self._warn_replaced()
        if self.finish_reason is None:
            self._close_all("incomplete")
            self.proc.truncate("max_output_tokens", usage)
        elif reason == "completed":
            self._close_all("completed")
            if self.bad_call is not None:  # a typed call the client cannot run
                self.proc.fail(self.bad_call, code=MODEL_ERROR, usage=usage)
            else:
                self.proc.finish(usage)
        else:
            self._close_all("incomplete")
            self.proc.truncate(reason or "max_output_tokens", usage)

    # -- input, SSE out -----------------------------------------------------
    def feed_data_sse(self, data: str) -> list[bytes]:
        """``feed_data``, then the SSE frames of what it produced."""
        return self.feed_payloads_sse((data,))

    def feed_payloads_sse(self, payloads: Sequence[str]) -> list[bytes]:
        """``feed_data_sse`` of each payload in turn, the frames of all in one list (the
        same bytes), up to the payload that ends the stream; those after it are ignored.

        The text deltas of the open part (the bulk of a stream) are framed here, with
        the state that lets them through read once a run of them instead of once a chunk:
        a text delta changes none of it.
        """
        out: list[bytes] = []
        state = self._text_state()
        for data in payloads:
            if state is None or data[:1] != "{":
                out += self._one_sse(data)
            else:
                try:
                    quick = _decode_quick(data)
                except msgspec.DecodeError:
                    out += self._general_sse(data, False)
                else:
                    choices = quick.choices
                    if choices is not None and len(choices) == 1 and quick.usage is None:
                        choice = choices[0]
                        delta = choice.delta
                        index = choice.index
                        if (
                            type(delta) is dict
                            and len(delta) == 1
                            and choice.finish_reason is None
                            and not choice.logprobs
                            and (index == 0 and type(index) is int or index is None)
                        ):
                            ((key, text),) = delta.items()
                            item, sse, keys, most = state
                            if key in keys and type(text) is str and text:
                                total = item.chars + len(text)
                                if total <= most and not has_surrogate(text):
                                    item.chars = total
                                    out.append(sse(text))
                                    continue
                    out += self._quick_sse(data, quick)
            if self.done:
                break
            state = self._text_state()
        return out

    def _text_state(self) -> tuple[ItemHandle, Any, frozenset[str], int] | None:
        """What ``feed_payloads_sse`` reads to frame a text delta itself, when the stream is
        in a state that lets one through: the open item, its part's ``_sse`` delta method,
        the delta keys routed to the part and the item's text limit; else None."""
        item = self.item
        proc = self.proc
        if (
            item is None
            or item.part_kind is None
            or self.calls
            or self._held
            or self.finish_reason is not None
            or self.done
            or proc.ended
            or proc.out
            or item.emitter.closed
        ):
            return None
        fast = self._part_fast
        if fast is None or fast[0] is not item or fast[1] != item.part_kind:
            fast = self._part_methods()
        if fast[3] is None:
            return None
        return item, fast[3], fast[4], proc.max_item_chars

    def _one_sse(self, data: str) -> list[bytes]:
        """``feed_data_sse`` of a payload the text path of ``feed_payloads_sse`` did not
        take."""
        if data[:1] == "{" and not self.done:
            try:
                quick = _decode_quick(data)
            except msgspec.DecodeError:  # not of that shape (or not JSON): the general path
                quick = None
            if quick is not None:
                return self._quick_sse(data, quick)
        return self._general_sse(data, False)

    def _quick_sse(self, data: str, quick: _QuickChunk) -> list[bytes]:
        """``_one_sse`` of ``data``, decoded as ``quick``."""
        frames = self._fast_sse(quick)
        if frames is not None:
            return frames
        return self._general_sse(data, True)

    def _general_sse(self, data: str, tried: bool) -> list[bytes]:
        """``feed_data_sse`` of ``data`` once the fast paths did not take it (``tried``:
        they had it decoded)."""
        try:  # the usual chunk, parsed inline (see convert.loads); all else is left to _parse
            chunk = _HANDLED if self.done or data.strip() == "[DONE]" else _decode(data)
        except Exception:
            chunk = _HANDLED
        if chunk is _HANDLED:
            chunk = self._parse(data)
        if chunk is _HANDLED:
            return self.proc.drain_sse()
        if tried:
            self._feed_any(chunk)
            return self.proc.drain_sse()
        return self._chunk_sse(chunk)

    def feed_sse(self, chunk: Any) -> list[bytes]:
        """``feed``, then the SSE frames of what it produced."""
        if not self.done:
            return self._chunk_sse(chunk)
        return self.proc.drain_sse()

    def _chunk_sse(self, chunk: Any) -> list[bytes]:
        frames = self._fast_sse(chunk)
        if frames is not None:
            return frames
        self._feed_any(chunk)
        return self.proc.drain_sse()

    def end_sse(self) -> list[bytes]:
        """``end``, then the SSE frames of what it produced."""
        self.end()
        return self.proc.drain_sse()

    # -- the fast paths ------------------------------------------------------
    def _fast_sse(self, chunk: Any) -> list[bytes] | None:
        """The frames of a chunk (a dict or a ``_QuickChunk``) that a fast path takes (it
        only continues the open part, or a known call's arguments), else None."""
        text = self._plain_text(chunk)
        if text is not None:
            fast = self._part_fast
            if fast is None or fast[0] is not self.item or fast[1] != fast[0].part_kind:
                fast = self._part_methods()
            if fast[3] is not None:
                return [fast[3](text)]
            self.proc.out += fast[2](text)
            return self.proc.drain_sse()
        live = self._live_args(chunk)
        if live is not None:
            call, args = live
            if call.handle is None:
                self._keep_args(call, args)
                return []
            emitter = call.handle.emitter
            sse = getattr(emitter, "delta_sse", None)
            if sse is not None:
                return [sse(args)]
            self.proc.out += emitter.delta(args)
            return self.proc.drain_sse()
        return None

    def _part_methods(self) -> _PartFast:
        """The open item, its part, the part's ``<part>_delta`` and its ``_sse`` twin (None
        if it has none), and the delta keys routed to that part, kept for the next delta."""
        item = self.item
        assert item is not None
        kind = item.part_kind
        name = f"{kind}_delta"
        emitter = item.emitter
        keys = frozenset(k for k, r in self._routes.items() if r == (item.type, kind))
        fast = (item, kind, getattr(emitter, name), getattr(emitter, f"{name}_sse", None), keys)
        self._part_fast = fast
        return fast

    def _delta_of(self, chunk: Any) -> Mapping[str, Any] | None:
        """The delta of a chunk (a dict or a ``_QuickChunk``) that has one choice, index 0,
        and nothing else to act on (no finish_reason, logprobs or usage, no pending
        events, the stream not ended)."""
        if type(chunk) is _QuickChunk:
            choices = chunk.choices
            if choices is None or len(choices) != 1 or chunk.usage is not None:
                return None
            quick = choices[0]
            delta, index = quick.delta, quick.index
            finish_reason, logprobs = quick.finish_reason, quick.logprobs
        else:
            if type(chunk) is not dict:
                return None
            listed = chunk.get("choices")
            if type(listed) is not list or len(listed) != 1 or chunk.get("usage") is not None:
                return None
            choice = listed[0]
            if type(choice) is not dict:
                return None
            delta, index = choice.get("delta"), choice.get("index", 0)
            finish_reason, logprobs = choice.get("finish_reason"), choice.get("logprobs")
        if type(delta) is not dict:
            return None
        if (
            finish_reason is not None
            or logprobs
            or (index is not None and (type(index) is not int or index != 0))
            or self.finish_reason is not None
            or self.proc.ended
            or self.proc.out
        ):
            return None
        return delta

    def _plain_text(self, chunk: Any) -> str | None:
        """The text of a chunk that only continues the open part, else None.

        Such a chunk (the bulk of a stream) has one choice, index 0, a non-empty text in
        one field routed to the open item's open part, nothing else routed, no logprobs,
        usage or finish_reason, and there are no tool calls or pending events: ``_feed``
        would do nothing but send the text to that part, which the caller does directly.
        Anything else is None and takes the general path.
        """
        item = self.item
        if item is None or item.part_kind is None or self.calls or self._held:
            return None
        delta = self._delta_of(chunk)
        if delta is None or item.emitter.closed:  # ItemHandle.closed, one call less
            return None
        key: str | None
        text: Any
        if len(delta) == 1:
            key, text = next(iter(delta.items()))
        else:
            key = text = None
            for k in self._delta_keys:
                value = delta.get(k)
                if value is not None and value != "":
                    if key is not None:
                        return None
                    key, text = k, value
        route = self._routes.get(key) if key is not None else None
        if route is None or route[1] != item.part_kind or route[0] != item.type:
            return None
        if type(text) is not str or not text or has_surrogate(text):
            return None
        total = item.chars + len(text)
        if total > self.proc.max_item_chars:
            return None  # the general path reports the limit
        item.chars = total
        return text

    def _live_args(self, chunk: Any) -> tuple[_Call, str] | None:
        """The tool call and the arguments of a chunk that only continues a call's
        arguments: the live call's (streamed) or those of a call waiting its turn (kept).

        Such a chunk has one choice as ``_plain_text`` says, no routed text, and one tool
        call fragment: a known call's index, no id, no name, non-empty ``arguments``.
        ``_tool_fragment`` would send them to the call's item or keep them for it, which
        the caller does.
        """
        if not self.calls:
            return None
        delta = self._delta_of(chunk)
        if delta is None:
            return None
        calls = delta.get("tool_calls")
        if type(calls) is not list or len(calls) != 1:
            return None
        if len(delta) > 1:
            for key in self.fields:
                if delta.get(key) not in (None, ""):
                    return None
        fragment = calls[0]
        if type(fragment) is not dict:
            return None
        index = fragment.get("index")
        fn = fragment.get("function")
        if type(index) is not int or type(fn) is not dict:
            return None
        call = self.calls.get(index)
        args = fn.get("arguments")
        if (
            call is None
            or call.closed
            or call.held
            or fragment.get("id") not in (None, "")
            or fn.get("name") not in (None, "")
            or type(args) is not str
            or not args
            or has_surrogate(args)
        ):
            return None
        handle = call.handle
        if handle is None:  # kept until its item opens; the live one may open now
            if call is self.live or call.buffered + len(args) > self.proc.max_item_chars:
                return None
            return call, args
        total = handle.chars + len(args)
        if handle.emitter.closed or total > self.proc.max_item_chars:
            return None
        handle.chars = total
        return call, args
