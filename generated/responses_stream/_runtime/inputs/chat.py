"""Chat Completions stream -> Responses stream, on top of the stream processor.

Input is the chunk shape that OpenAI chat chunks and vLLM's DeltaMessage
share.  Routing of delta fields to items comes from the chat routes spec.

Bad input never yields an invalid or silently truncated stream:
- broken input (bad JSON, no ``choices``, an upstream error object, a tool
  fragment for a new index with neither id nor name, content after
  ``finish_reason``) ends the stream with ``error`` and ``response.failed``; an
  upstream error object keeps its code and message (see ``upstream_error``);
- input that stops early (no ``finish_reason``) ends it with
  ``response.incomplete`` (reason ``max_output_tokens``);
- input without a single chunk (empty, only ``[DONE]``, not SSE) ends it with
  ``error`` (code ``empty_input``) and ``response.failed``;
- values of the wrong shape where the chunk format has an object or a list
  (``choices: 5``, ``delta: "x"``, ``tool_calls: {}``, a ``finish_reason`` that is not
  a string, a choice or tool ``index`` that is not an integer) are broken input;
  malformed ``logprobs`` and ``usage`` are not (see ``convert``): they are dropped or
  count as unknown, and the text stands;
- in every case every item is closed and all text received is kept.

Lone UTF-16 surrogates (a ``"\\ud800"`` escape without its pair) become U+FFFD, and
the converter says so: a warning in ``ChatToResponses.warnings`` and on this module's
logger.  A surrogate pair split over two deltas of one text is joined into its
character: a high surrogate that ends a delta waits for the next one.

Chat input as providers send it:
- ``delta.content`` may be a list of parts (Mistral, Magistral): ``{"type": "text"}``
  parts go where a string ``content`` goes, ``{"type": "thinking", "thinking": ...}``
  parts (a string or a list of text parts) go where ``reasoning_content`` goes, in order.
- ``n > 1``: choice 0 is converted.  Output (text, reasoning, refusal, tool calls) on any
  other choice ends the stream with ``error`` (code ``unsupported_n``) and
  ``response.failed``, keeping what came before; empty deltas there are ignored.
- A tool call's ``function.name`` split over fragments is joined; a fragment repeating
  the name so far (or sending ``""``) adds nothing.  Since ``output_item.added`` carries
  name and call id, the item opens once its first arguments arrive with name and id
  known, or when it must (another tool index, text, finish, end); arguments received
  before are buffered.  ``arguments`` sent as a JSON value are serialized compactly.
- ``finish_reason`` values outside the OpenAI set map by ``EXTRA_FINISH_REASONS``
  (the spec's ``finish_reasons`` win); ``failed`` ends the stream with ``error``
  (code ``upstream_error``); a value in neither table is bad input.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..core.convert import loads, logprobs_from_chat, normalize_usage, resolve_tool, tool_index
from ..core.errors import ResponsesStreamError
from ..core.limits import LIMIT_EXCEEDED, LimitExceeded
from ..core.processor import ItemHandle, StreamProcessor
from ..core.sse_parse import has_surrogate, join_surrogates, replace_surrogates
from ..core.stream import TextAcc

BAD_INPUT = "invalid_upstream_chunk"
UNSUPPORTED_N = "unsupported_n"
UPSTREAM_ERROR = "upstream_error"
EMPTY_INPUT = "empty_input"  # not a single chat chunk came
# Client-run tool kinds whose call items take no deltas -> their item type.
WHOLE_CALLS = {"tool_search": "tool_search_call"}
LONE_SURROGATE = "the input held a lone UTF-16 surrogate (without its pair); it is U+FFFD"
_log = logging.getLogger(__name__)
# finish_reason values outside the OpenAI set -> completed | max_output_tokens |
# content_filter | failed.  The spec's ``finish_reasons`` take precedence.
EXTRA_FINISH_REASONS: dict[str, str] = {
    "eos": "completed",  # vLLM/TGI-style end of sequence
    "eos_token": "completed",
    "end_turn": "completed",  # Anthropic-style
    "stop_sequence": "completed",
    "tool_use": "completed",
    "max_tokens": "max_output_tokens",
    "model_length": "max_output_tokens",  # Mistral: context window full
    "model_context_window_exceeded": "max_output_tokens",
    "abort": "max_output_tokens",  # cut short upstream: what came is kept, incomplete
    "cancelled": "max_output_tokens",
    "safety": "content_filter",
    "recitation": "content_filter",
    "sensitive": "content_filter",  # Z.ai
    "error": "failed",
    "network_error": "failed",
    "insufficient_system_resource": "failed",  # DeepSeek
}
_decode = msgspec.json.Decoder().decode
_HANDLED: Any = object()  # ``_parse`` dealt with the payload itself: nothing to feed


class _QuickChoice(msgspec.Struct):
    """What the fast paths read of a chunk's choice (any other field is skipped)."""

    index: Any = 0
    delta: Any = None
    logprobs: Any = None
    finish_reason: Any = None


class _QuickChunk(msgspec.Struct):
    """What the fast paths read of a chunk: typed, it decodes in about half the time of
    the whole chunk as a dict.  A chunk of another shape fails to decode into it and
    takes the general path, as does one the fast paths do not take."""

    choices: list[_QuickChoice] | None = None
    usage: Any = None


_decode_quick = msgspec.json.Decoder(_QuickChunk).decode
# The open part's fast path: its item, part kind, ``<part>_delta``, the ``_sse`` twin
# (None if it has none) and the delta keys routed to it.
_PartFast = tuple[ItemHandle, str | None, Any, Any, frozenset[str]]


class BadChunk(ResponsesStreamError, ValueError):
    """A chunk that cannot be part of a valid chat stream."""

    def __init__(self, message: str, code: str = BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


def upstream_error(err: Any) -> tuple[str, str]:
    """The message and code of a chunk's upstream ``error`` object, as the stream ends.

    The upstream's own code (llama.cpp's server sends ``{"error": {"code": 500,
    "message": ..., "type": "server_error"}}``) becomes the ``error`` event's code, as a
    string; without a code, its ``type``; without either, ``upstream_error``.
    ``response.error.code`` is a closed enum (the openai SDK rejects any other value),
    so there the processor keeps such a code only when the enum has it and says
    ``server_error`` otherwise; the message names the upstream's code and type so
    neither is lost: ``upstream error: <its message> (code 500, type server_error)``.
    """
    if not isinstance(err, Mapping):
        return f"upstream error: {err}", UPSTREAM_ERROR
    message = err.get("message")
    if not isinstance(message, str) or not message:
        message = str(dict(err))[:1000]
    code = err.get("code")
    if isinstance(code, float) and code.is_integer():
        code = int(code)
    code = str(code) if isinstance(code, int | str) and not isinstance(code, bool) else ""
    kind = err.get("type") if isinstance(err.get("type"), str) else ""
    named = []
    if code:
        named.append(f"code {code}")
    if kind and kind != code:
        named.append(f"type {kind}")
    detail = f" ({', '.join(named)})" if named else ""
    return f"upstream error: {message}{detail}", code or kind or UPSTREAM_ERROR


class DataPayload(str):
    """A ``str`` that is an SSE event's ``data``, whatever its text.

    The chat APIs take a ``str`` item as an SSE line when it looks like one (empty, a
    comment, a ``data:`` field); ``chat_data_lines`` marks the payloads that could be
    taken for one (those not starting with ``{``), so they stay payloads.
    """

    __slots__ = ()


class InputFailure(DataPayload):
    """A ``data:`` payload standing for a failure of the input itself, not a chunk.

    ``chat_data_lines`` yields one when the SSE input cannot be read (over the
    parser's caps); ``feed_data`` ends the stream with ``error``
    (``code``, the text as message) and ``response.failed``.  Its text is never JSON.
    """

    code: str

    def __new__(cls, message: str, code: str) -> InputFailure:
        self = super().__new__(cls, message)
        self.code = code
        return self


def wants_summary(request: Mapping[str, Any] | None) -> bool:
    """Whether the request asks for a reasoning summary (``reasoning.summary`` set)."""
    reasoning = request.get("reasoning") if isinstance(request, Mapping) else None
    if not isinstance(reasoning, Mapping):
        return False
    return reasoning.get("summary") is not None or reasoning.get("generate_summary") is not None


def _as_summary(route: Mapping[str, Any]) -> Mapping[str, Any]:
    if route["item"] == "reasoning" and route["part"] == "reasoning_text":
        return {**route, "part": "summary_text"}
    return route


@dataclass
class _Call:
    index: int
    id: str  # "" until the provider sends one
    kind: str  # "function" or "custom" (as the chunk said)
    name: str  # joined from the fragments
    args: TextAcc = field(default_factory=TextAcc)  # arguments received before the item opens
    buffered: int = 0  # their length, counted against Limits.max_item_text_chars
    handle: ItemHandle | None = None
    closed: bool = False
    held: str = ""  # a high surrogate ending the last arguments, waiting for its pair


class ChatToResponses:
    """Feeds chat chunks into a ``StreamProcessor``; read events with ``drain()``.

    For SSE bytes rather than events, ``feed_data_sse``/``feed_sse``/``end_sse`` return
    the frames of what each call produced (the fastest way to serve a stream).
    """

    def __init__(self, proc: StreamProcessor, request: Mapping[str, Any] | None = None) -> None:
        self.proc = proc
        proc.fail_on_limit = False  # over a limit, _fail flushes the buffered calls first
        routes = proc.dialect.tables.CHAT_ROUTES
        self.fields: dict[str, Any] = routes["fields"]
        if wants_summary(request):  # reasoning streamed as the summary that was asked for
            self.fields = {k: _as_summary(route) for k, route in self.fields.items()}
        self.tool_items: dict[str, str] = routes["tool_calls"]
        self.finish_reasons: dict[str, str] = {**EXTRA_FINISH_REASONS, **routes["finish_reasons"]}
        # Where list-valued content parts go: "text" as content, "thinking" as reasoning.
        self._thinking_key = "reasoning_content" if "reasoning_content" in self.fields else None
        self.tools = tool_index(request)
        self.calls: dict[int, _Call] = {}
        self.live: _Call | None = None
        self.item: ItemHandle | None = None  # the open text item
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.done = False
        self.seen = False  # a chunk (not only [DONE]) has come
        self.warnings: list[str] = []  # what was repaired in the input, once per kind
        # A high surrogate that ended the last text delta, and where it goes: it waits
        # for the low half that may start the next delta.
        self._held = ""
        self._held_route: tuple[str, str] | None = None
        # The fast paths (``_plain_text``, ``_live_args``): where each routed field goes, the
        # delta keys whose presence matters, and the open part's emitter methods.
        self._routes = {k: (r["item"], r["part"]) for k, r in self.fields.items()}
        self._delta_keys = (*self.fields, "tool_calls")
        self._part_fast: _PartFast | None = None

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

    # -- input, SSE out -----------------------------------------------------
    # Each is the same as feed_data/feed/end followed by ``proc.drain_sse()``: the SSE
    # frames of the events produced, then the dialect's closing frame once the stream has
    # ended.  A text delta for the open part, or an arguments fragment for the live tool
    # call, skips the event structs: the emitter's ``*_sse`` fast path makes the same bytes.
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

    def end_sse(self) -> list[bytes]:
        """``end``, then the SSE frames of what it produced."""
        self.end()
        return self.proc.drain_sse()

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

    @staticmethod
    def _keep_args(call: _Call, args: str) -> None:
        """Arguments kept for a call whose item is not open yet."""
        call.args.add(args)
        call.buffered += len(args)

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
            self.proc.finish(usage)
        else:
            self._close_all("incomplete")
            self.proc.truncate(reason or "max_output_tokens", usage)

    # -- chunks -------------------------------------------------------------
    def _feed_any(self, chunk: Any) -> None:
        """The general path: any chunk, good or bad."""
        if not self.proc.started:
            self.proc.start()
        self.seen = True
        try:
            self._feed(chunk)
        except BadChunk as exc:
            self._fail(str(exc), exc.code)
        except LimitExceeded as exc:
            self._fail(str(exc), LIMIT_EXCEEDED)

    def _feed(self, chunk: Any) -> None:
        if not isinstance(chunk, Mapping):
            raise BadChunk("malformed chunk: expected a JSON object")
        if "error" in chunk and "choices" not in chunk:
            raise BadChunk(*upstream_error(chunk["error"]))
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise BadChunk("malformed chunk: missing 'choices'")
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise BadChunk("malformed chunk: a choice is not an object")
            index = choice.get("index", 0)
            if index is None:
                index = 0
            elif type(index) is not int:
                raise BadChunk(f"malformed chunk: choice index {index!r:.40} is not an integer")
            if index == 0:
                self._choice(choice)
                continue
            delta = choice.get("delta")
            if delta is not None and not isinstance(delta, Mapping):
                raise BadChunk(f"malformed chunk: 'delta' of choice {index} is not an object")
            if delta is not None and self._has_output(delta):
                raise BadChunk(
                    f"output on choice {index!r}: only one choice (n=1) is supported",
                    UNSUPPORTED_N,
                )

    def _choice(self, choice: Mapping[str, Any]) -> None:
        delta = choice.get("delta")
        if delta is None:
            delta = {}
        elif not isinstance(delta, Mapping):
            raise BadChunk("malformed chunk: 'delta' is not an object")
        reason = choice.get("finish_reason")
        if reason == "":  # some servers send "" on every chunk until the last
            reason = None
        elif reason is not None and not isinstance(reason, str):
            raise BadChunk(f"malformed chunk: finish_reason {reason!r:.40} is not a string")
        if self.finish_reason is not None and self._has_output(delta):
            raise BadChunk(f"delta after finish_reason {self.finish_reason!r}")
        routed: set[tuple[str, str]] = set()
        for key, route in self.fields.items():
            text = delta.get(key)
            target = (route["item"], route["part"])
            # Some servers send one text under two spellings (reasoning and reasoning_content).
            if isinstance(text, str):
                if text and target not in routed:
                    routed.add(target)
                    lp = logprobs_from_chat(choice.get("logprobs")) if key == "content" else []
                    self._text(route["item"], route["part"], text, lp)
            elif isinstance(text, list):
                routed.add(target)
                self._parts(key, text, choice)
        calls = delta.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise BadChunk("malformed chunk: 'tool_calls' is not a list")
            for fragment in calls:
                self._tool_fragment(fragment)
        if reason is not None:
            if reason not in self.finish_reasons:
                if isinstance(reason, str) and reason.lower() in self.finish_reasons:
                    reason = reason.lower()
                else:
                    raise BadChunk(f"unknown finish_reason {reason!r:.100}")
            if self.finish_reasons[reason] == "failed":
                raise BadChunk(f"upstream finish_reason {reason!r:.100}", UPSTREAM_ERROR)
            self.finish_reason = reason
            status = "completed" if self.finish_reasons[reason] == "completed" else "incomplete"
            self._close_all(status)

    def _has_output(self, delta: Mapping[str, Any]) -> bool:
        for key in self.fields:
            value = delta.get(key)
            if isinstance(value, str) and value:
                return True
            if isinstance(value, list) and any(text for _, text in self._split(key, value)):
                return True
        calls = delta.get("tool_calls")
        return calls is not None and calls != []

    def _split(self, key: str, parts: list[Any]) -> list[tuple[str, str]]:
        """A list-valued field as (field, text) pairs: thinking parts go to reasoning."""
        out: list[tuple[str, str]] = []
        for part in parts:
            if isinstance(part, str):
                out.append((key, part))
            elif not isinstance(part, Mapping):
                continue
            elif part.get("type") == "thinking" and self._thinking_key is not None:
                thinking = part.get("thinking")
                pieces = thinking if isinstance(thinking, list) else [thinking]
                for piece in pieces:
                    text = piece.get("text") if isinstance(piece, Mapping) else piece
                    if isinstance(text, str):
                        out.append((self._thinking_key, text))
            elif isinstance(part.get("text"), str):
                out.append((key, part["text"]))
        return out

    def _parts(self, key: str, parts: list[Any], choice: Mapping[str, Any]) -> None:
        logprobs = logprobs_from_chat(choice.get("logprobs")) if key == "content" else []
        for field_key, text in self._split(key, parts):
            if not text:
                continue
            route = self.fields[field_key]
            if field_key == "content":  # the choice's logprobs go with its first text
                self._text(route["item"], route["part"], text, logprobs)
                logprobs = []
            else:
                self._text(route["item"], route["part"], text, [])

    def _text(self, item_type: str, part: str, text: str, logprobs: list[Any]) -> None:
        if self._held_route is not None and self._held_route != (item_type, part):
            self._flush_text()
        if self._held or has_surrogate(text):
            # A high surrogate held back still opens its part: its U+FFFD may go there.
            text = self._clean_text(text, (item_type, part))
        if self.calls:
            self._close_calls("completed")
        item = self.item
        if item is None or item.closed or item.type != item_type:
            item = self.item = self.proc.open(item_type)
        if item.part_kind != part:
            item.part(part)
        if not text:
            return
        if part == "output_text":
            item.text(text, logprobs=self._logprobs(logprobs))
        else:
            item.text(text)

    # -- lone surrogates ----------------------------------------------------
    def _clean(self, held: str, text: str) -> tuple[str, str]:
        """(what can be sent, the high surrogate to hold) for ``held + text``."""
        text = join_surrogates(held + text)
        keep = ""
        if "\ud800" <= text[-1:] <= "\udbff":
            text, keep = text[:-1], text[-1]
        fixed = replace_surrogates(text)
        if fixed != text:
            self._warn(LONE_SURROGATE)
        return fixed, keep

    def _clean_text(self, text: str, route: tuple[str, str]) -> str:
        text, self._held = self._clean(self._held, text)
        self._held_route = route if self._held else None
        return text

    def _flush_text(self) -> None:
        """A held high surrogate whose pair did not come: U+FFFD, in its own part."""
        if not self._held:
            self._held_route = None
            return
        self._held = ""
        route, self._held_route = self._held_route, None
        item = self.item
        self._warn(LONE_SURROGATE)
        if item is not None and not item.closed and route == (item.type, item.part_kind):
            item.text("\ufffd")

    def _warn(self, message: str) -> None:
        """Report a repair of the input once: in ``warnings`` and on the module logger."""
        if message not in self.warnings:
            self.warnings.append(message)
            _log.warning("from-chat: %s", message)

    def _warn_replaced(self) -> None:
        """Lone surrogates the processor replaced (in names, ids, messages) are warned too."""
        if self.proc.replaced_surrogates:
            self._warn(LONE_SURROGATE)

    def _logprobs(self, logprobs: list[Any]) -> Any:
        if not logprobs:
            return []
        target = list.__class_getitem__(self.proc.dialect.models.Logprob)
        return msgspec.convert(logprobs, type=target)

    # -- tool calls ---------------------------------------------------------
    def _tool_fragment(self, fragment: Any) -> None:
        if not isinstance(fragment, Mapping):
            raise BadChunk("malformed tool call fragment: not an object")
        index = fragment.get("index")
        if index is not None and type(index) is not int:
            raise BadChunk(f"malformed tool call fragment: index {index!r:.40} is not an integer")
        call_id = fragment.get("id")
        if call_id is not None and not isinstance(call_id, str | int) or isinstance(call_id, bool):
            raise BadChunk(f"malformed tool call fragment: id {call_id!r:.40} is not a string")
        if index is None:
            index = self._implicit_index(call_id)
        fn = fragment.get("function")
        if fn is None:
            fn = fragment.get("custom")
        if fn is None:
            fn = {}
        if not isinstance(fn, Mapping):
            raise BadChunk(
                f"malformed tool call fragment: 'function' is not an object ({fn!r:.40})"
            )
        name = fn.get("name")
        if name is not None and not isinstance(name, str):
            raise BadChunk(f"malformed tool call fragment: name {name!r:.40} is not a string")
        args = fn.get("arguments", fn.get("input"))
        if args is not None and not isinstance(args, str):
            try:
                args = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
            except (TypeError, ValueError, RecursionError):
                raise BadChunk("malformed tool call fragment: arguments are not JSON") from None
        call = self.calls.get(index)
        if call is None:
            if not call_id and not name:
                raise BadChunk(f"tool call fragment for new index {index} has no id and no name")
            self._flush_text()
            if self.item is not None and not self.item.closed:
                self.item.close("completed")
            if self.live is not None and self.live.handle is None:
                self._go_live(self.live)  # another index: the live call's name is complete
            # Room for every call not yet opened: _fail and end open them all.
            self.proc.reserve_items(1 + sum(c.handle is None for c in self.calls.values()))
            kind = "custom" if fragment.get("type") == "custom" else "function"
            call = self.calls[index] = _Call(index, "", kind, "")
            if self.live is None:
                self.live = call
        elif call.closed:
            raise BadChunk(f"tool call fragment for index {index} after the call was closed")
        if call_id and not call.id:
            call.id = str(call_id)
        if isinstance(name, str) and name and name != call.name:
            if call.handle is not None:
                raise BadChunk(f"tool call {index}: name {name!r} after its item was opened")
            # A cumulative resend replaces the name; anything else continues it.
            call.name = name if name.startswith(call.name) else call.name + name
        if isinstance(args, str) and args and (call.held or has_surrogate(args)):
            args, call.held = self._clean(call.held, args)
        if isinstance(args, str) and args:
            if call.handle is not None:  # the live call: stream it
                call.handle.delta(args)
                return
            if call.buffered + len(args) > self.proc.max_item_chars:
                self.proc.over_limit(
                    "max_item_text_chars",
                    f"tool call {index}: arguments of {call.buffered + len(args)} characters",
                )
            self._keep_args(call, args)
            if call is self.live and call.id and call.name:
                self._go_live(call)

    def _implicit_index(self, call_id: Any) -> int:
        """An index for servers that leave it out: by call id, or the latest call."""
        if call_id:
            for index, call in self.calls.items():
                if call.id == call_id:
                    return index
            return max(self.calls, default=-1) + 1
        return max(self.calls, default=0)

    def _go_live(self, call: _Call) -> None:
        tool = resolve_tool(self.tools, call.name, call.kind)
        if tool.kind in WHOLE_CALLS:  # opened whole when the call ends (_close_whole)
            return
        if not call.id:
            call.id = self.proc.response.ids("call_")
        item_type = self.tool_items[tool.kind]
        fields: dict[str, Any] = {"call_id": call.id, "name": tool.name}
        if tool.namespace is not None:
            fields["namespace"] = tool.namespace
        call.handle = self.proc.open(item_type, **fields)
        self.live = call
        pieces, call.args = call.args.pieces(), TextAcc()
        for piece in pieces:
            call.handle.delta(piece)

    def _close_calls(self, status: str) -> None:
        """Close the live call, then emit every buffered call in index order."""
        for call in sorted(self.calls.values(), key=lambda c: (c is not self.live, c.index)):
            if call.closed:
                continue
            if call.handle is None:
                self._go_live(call)
            if call.handle is None:
                self._close_whole(call, status)
                continue
            if call.held:  # a high surrogate whose pair did not come
                call.held = ""
                self._warn(LONE_SURROGATE)
                call.handle.delta("\ufffd")
            call.handle.close(status)
            call.closed = True
        self.live = None

    def _close_whole(self, call: _Call, status: str) -> None:
        """A call of a client-run tool whose item has no deltas (``tool_search_call``):
        opened with its whole arguments (a JSON object, else the text as it came)."""
        text = "".join(call.args.pieces()) + call.held
        call.held = ""
        try:
            arguments: Any = json.loads(text) if text.strip() else {}
        except ValueError:
            arguments = text
        if not call.id:
            call.id = self.proc.response.ids("call_")
        handle = self.proc.open(
            WHOLE_CALLS["tool_search"], call_id=call.id, arguments=arguments, execution="client"
        )
        handle.close(status)
        call.handle, call.closed = handle, True

    def _close_all(self, status: str) -> None:
        self._flush_text()
        if self.item is not None and not self.item.closed:
            self.item.close(status)
        self._close_calls(status)

    def _fail(self, message: str, code: str = BAD_INPUT) -> None:
        self.done = True
        try:
            self._close_all("incomplete")
        except LimitExceeded:  # a held surrogate's U+FFFD did not fit: the stream fails anyway
            pass
        self._warn_replaced()
        self.proc.fail(message, code=code, usage=normalize_usage(self.usage))
