"""The reading half of the Responses-to-chat conversion: events in, routed to the
chunks they make."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...core.convert import loads
from ...core.dialect import Dialect
from ...core.errors import BadValue
from ...core.processor import get_dialect
from ...core.sse_parse import (
    has_surrogate,
    replace_surrogates,
)
from ...core.stream import TextAcc
from .chunks import ChunkWriter
from .shapes import (
    _SPLICED,
    ACTION_CALLS,
    CLIENT_CALLS,
    EMPTY_INPUT,
    HOSTED_MODES,
    INCOMPLETE_REASONS,
    REASONING_MODES,
    SILENT_ITEMS,
    TEXT_DELTA,
    HostedMode,
    Payload,
    ReasoningMode,
    _decode,
    _dumps,
    _dumps_args,
    _dumps_str,
    _frame,
    _list,
    _mapping,
    _plain,
    _str,
    _utf8,
    action_arguments,
    chat_usage,
    is_client_action,
)


class ResponsesToChat(ChunkWriter):
    """Turns Responses stream payloads into Chat Completions chunk dicts.

    ``feed`` takes one payload (a parsed dict, or its JSON text; ``[DONE]`` is
    ignored) and returns the chunks to send now; ``close`` ends the stream and
    returns what is left.  Once ``done`` is true nothing more is produced.
    ``feed_sse`` is ``feed`` with each chunk framed as ``data: {json}\\n\\n`` bytes,
    and faster than framing ``feed``'s chunks.
    """

    def __init__(
        self,
        *,
        reasoning: ReasoningMode = "reasoning_content",
        include_usage: bool = False,
        dialect: Dialect | str = "openai",
        hosted: HostedMode = "omit",
        model: str | None = None,
        chunk_id: str | None = None,
        created: int | None = None,
    ) -> None:
        if reasoning not in REASONING_MODES:
            raise BadValue(f"reasoning must be one of {REASONING_MODES}, not {reasoning!r}")
        if hosted not in HOSTED_MODES:
            raise BadValue(f"hosted must be one of {HOSTED_MODES}, not {hosted!r}")
        super().__init__(reasoning, include_usage, model, chunk_id, created)
        self.hosted = hosted
        self.dialect = get_dialect(dialect)
        self.event_names = self.dialect.wire_types
        self.item_kinds = {wire: kind for kind, wire in self.dialect.item_types.items()}
        self.done = False
        self.fed = False  # an event came (the spliced path is taken only after one)
        # feed_sse's fast path: per (field, tool index), the envelope (id, created, model,
        # include_usage) and the JSON of a chunk before and after its text.
        self._splices: dict[tuple[str, int], tuple[tuple[Any, ...], bytes, bytes]] = {}
        self._handlers: dict[str, Callable[[Mapping[str, Any]], list[dict[str, Any]]]] = {
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done,
            TEXT_DELTA: self._output_text_delta,
            "response.output_text.done": lambda p: self._text_done("text", p, "text"),
            "response.refusal.delta": lambda p: self._text_delta("refusal", p),
            "response.refusal.done": lambda p: self._text_done("refusal", p, "refusal"),
            "response.reasoning_text.delta": lambda p: self._text_delta("reasoning", p),
            "response.reasoning_text.done": lambda p: self._text_done("reasoning", p, "text"),
            "response.reasoning_summary_text.delta": lambda p: self._text_delta("summary", p),
            "response.reasoning_summary_text.done": lambda p: self._text_done("summary", p, "text"),
            "response.function_call_arguments.delta": self._call_delta,
            "response.function_call_arguments.done": lambda p: self._call_done(p, "arguments"),
            "response.custom_tool_call_input.delta": self._call_delta,
            "response.custom_tool_call_input.done": lambda p: self._call_done(p, "input"),
            "response.completed": self._completed,
            "response.incomplete": self._incomplete,
            "response.failed": self._failed,
            "error": self._error,
        }

    # -- input --------------------------------------------------------------
    def feed(self, payload: Payload) -> list[dict[str, Any]]:
        """One Responses stream payload in; the chat chunks to send out."""
        if self.done:
            return []
        if isinstance(payload, (str, bytes)):
            parsed = self._parse(payload)
            if isinstance(parsed, list):
                return parsed
            payload = parsed
        return self._route(payload)

    def feed_sse(self, payload: Payload) -> list[bytes]:
        """``feed``, framed: the chat SSE frames (``data: {json}\\n\\n``) to send out.

        A text delta's frame is spliced from pre-encoded JSON, byte for byte the frame
        of the chunk ``feed`` returns; nothing else differs from framing ``feed``.
        """
        if self.done:
            return []
        event: Mapping[str, Any]
        if isinstance(payload, (str, bytes)):
            parsed: Any = None
            if type(payload) is str and payload.strip() != "[DONE]":
                try:  # the usual event, parsed inline (see convert.loads); all else to _parse
                    parsed = _decode(payload)
                except Exception:
                    pass
            if type(parsed) is not dict:
                parsed = self._parse(payload)
                if isinstance(parsed, list):
                    return [_frame(chunk) for chunk in parsed]
            event = parsed
        else:
            event = payload
        if type(event) is dict and self.role_sent and not self.thinking and "response" not in event:
            frame = self._spliced_delta(event)
            if frame is not None:
                return frame
        return [_frame(chunk) for chunk in self._route(event)]

    def _spliced_delta(self, event: dict[str, Any]) -> list[bytes] | None:
        """The frames of a text, reasoning or arguments delta that only continues what was
        sent (role sent, no think block, nothing held), spliced from pre-encoded JSON; None
        for anything else (the general path)."""
        kind = event.get("type")
        if type(kind) is not str:
            return None
        name = self.event_names.get(kind, kind)
        channel = _SPLICED.get(name)
        if channel is None:
            return None
        text = event.get("delta")
        if not isinstance(text, str) or not text:
            return [] if channel != "args" else None  # as _send_text: nothing to send
        if self._held or has_surrogate(text) or event.get("logprobs"):
            return None  # logprobs ride on the general path's chunk
        key = event.get("item_id")
        if type(key) is not str or key not in self.kinds:
            key = self._event_key(event)
        if channel == "args":
            call = self.calls.get(key)
            if call is None:
                return None
            call.sent.add(text)
            return [self._splice("args", text, call.index)]
        index = event.get("summary_index" if channel == "summary" else "content_index")
        part = (channel, key, index if isinstance(index, int) else 0)
        if channel != "text":  # reasoning: a separator or a think block leaves the fast path
            if (
                self.reasoning not in ("reasoning_content", "reasoning")
                or self.reasoning_part != part
                or self.reasoning_pending_separator
            ):
                return None
        sent = self.sent.get(part)
        if sent is None:
            sent = self.sent[part] = TextAcc()
        sent.add(text)
        return [self._splice("content" if channel == "text" else self.reasoning, text)]

    def _splice(self, field: str, text: str, index: int = 0) -> bytes:
        """The frame of a chunk whose delta is ``text`` in ``field`` (``args``: the
        arguments of tool call ``index``), from the chunk's JSON made once per envelope."""
        envelope = (self.id, self.created, self.model, self.include_usage)
        cached = self._splices.get((field, index))
        if cached is None or cached[0] != envelope:
            if field == "args":
                delta: dict[str, Any] = {
                    "tool_calls": [{"index": index, "function": {"arguments": ""}}]
                }
                mark = '"arguments":""'
            else:
                delta, mark = {field: ""}, f'{_dumps_str(field)}:""'
            js = _dumps(self._chunk(delta))
            cut = js.rindex(mark) + len(mark) - 2
            cached = (envelope, b"data: " + _utf8(js[:cut]), _utf8(js[cut + 2 :]) + b"\n\n")
            self._splices[(field, index)] = cached
        return cached[1] + _dumps_str(text).encode() + cached[2]

    def _parse(self, payload: str | bytes) -> Mapping[str, Any] | list[dict[str, Any]]:
        """A text payload's event, or the chunks it makes instead (none for ``[DONE]``)."""
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
        if text.strip() == "[DONE]":
            return []
        try:
            parsed = loads(text)
        except (ValueError, RecursionError) as exc:
            return self._end_with_error(
                f"malformed Responses event (not JSON): {exc}", "invalid_upstream_event"
            )
        return parsed if isinstance(parsed, Mapping) else {}

    def _route(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        self.fed = True
        response = payload.get("response")
        if isinstance(response, Mapping):
            self._take_identity(response)
        kind = _str(payload.get("type"))
        handler = self._handlers.get(self.event_names.get(kind, kind))
        if handler is not None:
            return handler(payload)
        if not kind and payload.get("error"):  # a bare {"error": {...}}, as from an HTTP error
            return self._error(payload)
        return []  # an event type this adapter has no use for (or does not know)

    def close(self) -> list[dict[str, Any]]:
        """End the stream; without a terminal event it finishes with ``length``, and
        without any event with an error chunk (code ``empty_input``)."""
        if self.done:
            return []
        if not self.fed:
            return self._end_with_error("the input held no Responses event", EMPTY_INPUT)
        self.done = True
        return self._flush_all() + self._end_think() + [self._chunk({}, finish_reason="length")]

    def fail(self, message: str, code: Any = None) -> list[dict[str, Any]]:
        """End the stream with an error chunk (an input that cannot be read, say)."""
        if self.done:
            return []
        return self._end_with_error(message, code)

    # -- items --------------------------------------------------------------
    def _item_kind(self, item: Mapping[str, Any]) -> str:
        wire = _str(item.get("type"))
        return self.item_kinds.get(wire, wire)

    def _item_added(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        item = _mapping(payload.get("item"))
        key = self._item_key(payload, item)
        kind = self._item_kind(item)
        self.kinds[key] = kind
        if key in self.calls:
            return []
        if kind in CLIENT_CALLS:
            return self._open_call(key, item) + self._send_args(
                key, _str(item.get(CLIENT_CALLS[kind]))
            )
        if kind in ACTION_CALLS and is_client_action(kind, item):
            return self._open_call(key, item, ACTION_CALLS[kind])
        return []

    def _item_done(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        item = _mapping(payload.get("item"))
        key = self._item_key(payload, item, done=True)
        kind = self._item_kind(item)
        self.kinds.setdefault(key, kind)
        out: list[dict[str, Any]] = []
        if kind in CLIENT_CALLS:
            if key not in self.calls:
                out += self._open_call(key, item)
            call = self.calls[key]
            out += self._send_args(
                key, self._rest(call.sent.value(), _str(item.get(CLIENT_CALLS[kind])))
            )
        elif kind in ACTION_CALLS and (key in self.calls or is_client_action(kind, item)):
            if key not in self.calls:
                out += self._open_call(key, item, ACTION_CALLS[kind])
            call = self.calls[key]
            arguments = _dumps_args(action_arguments(kind, item))
            out += self._send_args(key, self._rest(call.sent.value(), arguments))
        elif kind == "message":
            for i, part in enumerate(_list(item.get("content"))):
                part = _mapping(part)
                if part.get("type") == "output_text":
                    out += self._text_full("text", key, i, _str(part.get("text")))
                elif part.get("type") == "refusal":
                    out += self._text_full("refusal", key, i, _str(part.get("refusal")))
        elif kind == "reasoning":
            for i, part in enumerate(_list(item.get("summary"))):
                out += self._text_full("summary", key, i, _str(_mapping(part).get("text")))
            for i, part in enumerate(_list(item.get("content"))):
                out += self._text_full("reasoning", key, i, _str(_mapping(part).get("text")))
        elif kind not in SILENT_ITEMS and self.hosted == "content":
            status = _str(item.get("status")) or "done"
            out += self._emit_text("text", f"[{kind}: {status}]\n")
        return out

    # -- endings --------------------------------------------------------------
    def _finish(self, response: Mapping[str, Any], reason: str) -> list[dict[str, Any]]:
        self.done = True
        out = self._flush_all() + self._end_think() + [self._chunk({}, finish_reason=reason)]
        usage = response.get("usage")
        if self.include_usage and isinstance(usage, Mapping):
            out.append({**self._envelope(), "choices": [], "usage": chat_usage(usage)})
        return out

    def _unclosed(self, response: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Items opened and never closed, closed from the response's own output (as the
        SDK takes it): what their done events would have delivered, and a warning."""
        output = response.get("output")
        if not isinstance(output, list):
            return []
        still = {
            index: key
            for index, key in self.index_keys.items()
            if key not in self.finished and key in self.kinds and index < len(output)
        }
        if not still:
            return []
        self._warn(
            "never-closed",
            f"output items {sorted(still)} were never closed; what they hold is taken from "
            "the response's output",
        )
        out: list[dict[str, Any]] = []
        for index in sorted(still):
            out += self._item_done({"output_index": index, "item": output[index]})
        return out

    def _completed(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        response = _mapping(payload.get("response"))
        out = self._unclosed(response)
        reason = "tool_calls" if self.calls else "stop"
        return out + self._finish(response, reason)

    def _incomplete(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        response = _mapping(payload.get("response"))
        out = self._unclosed(response)
        why = _str(_mapping(response.get("incomplete_details")).get("reason"))
        reason = INCOMPLETE_REASONS.get(why) or ("tool_calls" if self.calls else "stop")
        return out + self._finish(response, reason)

    def _failed(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        error = _mapping(_mapping(payload.get("response")).get("error"))
        return self._end_with_error(
            _str(error.get("message")) or "the response failed",
            error.get("code"),
            error_type=_str(error.get("type")) or None,
            param=error.get("param"),
        )

    def _error(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        # OpenAI's error event has message/code/param at the top level (its
        # ``type`` is the event type); some upstreams nest a full error object.
        nested = payload.get("error")
        error = nested if isinstance(nested, Mapping) else payload
        error_type = _str(error.get("type")) if error is nested else ""
        return self._end_with_error(
            _str(error.get("message"))
            or _str(nested)  # {"error": "text"}
            or "an error occurred during streaming",
            error.get("code"),
            error_type=error_type or None,
            param=error.get("param"),
        )

    def _end_with_error(
        self, message: str, code: Any, *, error_type: str | None = None, param: Any = None
    ) -> list[dict[str, Any]]:
        held = self._flush_all()
        self.done = True
        error = {
            "message": replace_surrogates(message),
            "type": replace_surrogates(error_type or "server_error"),
            "param": _plain(param),
            "code": _plain(code),
        }
        return held + self._end_think() + [{"error": error}]
