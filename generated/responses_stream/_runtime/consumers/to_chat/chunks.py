"""The writing half of the Responses-to-chat conversion: chat chunks out, with what
was sent kept per item and part."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from ...core.sse_parse import (
    has_surrogate,
    join_surrogates,
    replace_surrogates,
)
from ...core.stream import TextAcc
from .shapes import (
    REASONING_SEPARATOR,
    THINK_CLOSE,
    THINK_OPEN,
    ReasoningMode,
    _Call,
    _is_high_surrogate,
    _log,
    _missing,
    _str,
    chat_logprobs,
)


class ChunkWriter:
    """The chat chunks a stream is written as: the envelope, text, refusals, reasoning
    (with its think block) and client tool calls, each item and part found by its key.

    Holds what was sent so far, so that a done event's text adds only what its deltas
    did not send.  ``ResponsesToChat`` reads the events and calls these.
    """

    def __init__(
        self,
        reasoning: ReasoningMode,
        include_usage: bool,
        model: str | None,
        chunk_id: str | None,
        created: int | None,
    ) -> None:
        self.reasoning = reasoning
        self.include_usage = include_usage
        self.id = chunk_id
        self.created = created
        self.model = model
        self.kinds: dict[str, str] = {}  # item key -> item type
        self.index_keys: dict[int, str] = {}  # output_index -> item key
        self.calls: dict[str, _Call] = {}  # item key -> client tool call
        self.finished: set[str] = set()  # item keys whose output_item.done came
        # (channel, item key, part) -> the text sent, compacted as it grows (see TextAcc)
        self.sent: dict[tuple[str, str, int], TextAcc] = {}
        self.role_sent = False
        self.thinking = False
        self.reasoning_part: tuple[str, str, int] | None = None
        self.reasoning_pending_separator = False
        self.warnings: list[str] = []  # what was repaired or guessed, each reported once
        # per text part or tool call: a high surrogate whose low half may be in the next delta
        self._held: dict[tuple[str, str, int], str] = {}
        self._warned: set[str] = set()

    # -- chunks -------------------------------------------------------------
    def _warn(self, code: str, message: str) -> None:
        """Report ``message`` once per ``code``: in ``warnings`` and on the module logger."""
        if code in self._warned:
            return
        self._warned.add(code)
        self.warnings.append(message)
        _log.warning("to-chat: %s", message)

    def _take_identity(self, response: Mapping[str, Any]) -> None:
        if self.id is None and _str(response.get("id")):
            self.id = replace_surrogates(f"chatcmpl-{response['id']}")
        created = response.get("created_at")
        if self.created is None and isinstance(created, int | float) and created == created:
            self.created = int(created) if abs(created) < 2**53 else None
        if self.model is None and isinstance(response.get("model"), str):
            self.model = replace_surrogates(response["model"])

    def _envelope(self) -> dict[str, Any]:
        if self.id is None:
            self.id = f"chatcmpl-{uuid.uuid4().hex}"
        if self.created is None:
            self.created = int(time.time())
        if self.model is None:
            self.model = ""
        out: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }
        if self.include_usage:
            out["usage"] = None
        return out

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        if not self.role_sent:
            delta = {"role": "assistant", **delta}
            self.role_sent = True
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**self._envelope(), "choices": [choice]}

    def _close_think(self) -> str:
        """The text that closes an open think block (``""`` if none is open)."""
        if not self.thinking:
            return ""
        self.thinking = False
        self.reasoning_part = None
        self.reasoning_pending_separator = False
        return THINK_CLOSE

    def _end_think(self) -> list[dict[str, Any]]:
        """The chunk that closes an open think block, if one is open."""
        close = self._close_think()
        return [self._chunk({"content": close})] if close else []

    # -- routing ------------------------------------------------------------
    def _event_key(self, payload: Mapping[str, Any]) -> str:
        """The item an event belongs to: its ``item_id``, else its ``output_index``."""
        item_id = _str(payload.get("item_id"))
        if item_id in self.kinds:
            return item_id
        index = payload.get("output_index")
        if isinstance(index, int) and index in self.index_keys:
            key = self.index_keys[index]
            if item_id:
                self._id_changed(item_id, key)
            return key
        return item_id or (f"#{index}" if isinstance(index, int) else "#?")

    def _item_key(
        self, payload: Mapping[str, Any], item: Mapping[str, Any], *, done: bool = False
    ) -> str:
        index = payload.get("output_index")
        item_id = _str(item.get("id"))
        if (
            done
            and item_id not in self.kinds
            and isinstance(index, int)
            and self.index_keys.get(index, "") in self.kinds
            and self.index_keys[index] not in self.finished
        ):
            key = self.index_keys[index]  # the open item at this index, under another id
            if item_id:
                self._id_changed(item_id, key)
        else:
            key = item_id or (f"#{index}" if isinstance(index, int) else "#?")
            if isinstance(index, int) and self.index_keys.get(index) in self.finished:
                self.index_keys[index] = key  # a server that reuses output_index
            elif isinstance(index, int):
                self.index_keys.setdefault(index, key)
        if done:
            self.finished.add(key)
        return key

    def _id_changed(self, item_id: str, key: str) -> None:
        self._warn(
            "item-id-changed",
            f"the upstream changed item ids between events (item {key!r} is also called "
            f"{item_id!r}); routing by output_index",
        )

    # -- text, refusal, reasoning --------------------------------------------
    def _part_of(self, channel: str, payload: Mapping[str, Any]) -> tuple[str, str, int]:
        index = payload.get("summary_index" if channel == "summary" else "content_index")
        return (channel, self._event_key(payload), index if isinstance(index, int) else 0)

    def _output_text_delta(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        chunks = self._text_delta("text", payload)
        logprobs = chat_logprobs(payload.get("logprobs"))
        if logprobs:
            if not chunks:  # a delta of no text: its logprobs still go out
                chunks = [self._chunk({"content": ""})]
            chunks[-1]["choices"][0]["logprobs"] = {"content": logprobs, "refusal": None}
        return chunks

    def _text_delta(self, channel: str, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self._send_text(self._part_of(channel, payload), _str(payload.get("delta")))

    def _text_done(
        self, channel: str, payload: Mapping[str, Any], attr: str
    ) -> list[dict[str, Any]]:
        part = self._part_of(channel, payload)
        return self._send_text(
            part, self._rest(self._sent_text(part), _str(payload.get(attr)))
        ) + self._flush(part)

    def _text_full(self, channel: str, key: str, index: int, full: str) -> list[dict[str, Any]]:
        part = (channel, key, index)
        missing = self._rest(self._sent_text(part), full)
        return self._send_text(part, missing) + self._flush(part)

    def _rest(self, sent: str, full: str) -> str:
        """What a done text adds to what was sent; a done text that contradicts it (the SDK
        would take the done text) cannot be sent in an append-only stream: a warning."""
        rest = _missing(sent, full)
        if not rest and full and join_surrogates(full) != join_surrogates(sent):
            self._warn(
                "done-text-differs",
                "a done text differs from what its deltas streamed; a chat stream only "
                "appends, so the streamed text stands",
            )
        return rest

    def _sent_text(self, part: tuple[str, str, int]) -> str:
        sent = self.sent.get(part)
        return "" if sent is None else sent.value()

    def _clean(self, stream: tuple[str, str, int], text: str) -> str:
        """``text`` as it can be sent: surrogate pairs joined, even over two deltas; a high
        surrogate at its end held back for the next delta of ``stream``; any other lone
        surrogate replaced by U+FFFD (and a warning)."""
        held = self._held.pop(stream, "")
        if not held and not has_surrogate(text):
            return text
        text = join_surrogates(held + text)
        if text and _is_high_surrogate(text[-1]):
            self._held[stream] = text[-1]
            text = text[:-1]
        fixed = replace_surrogates(text)
        if fixed != text:
            self._lone_surrogate()
        return fixed

    def _lone_surrogate(self) -> None:
        self._warn(
            "lone-surrogate",
            "the upstream sent a UTF-16 surrogate without its pair; sent as U+FFFD",
        )

    def _flush(self, stream: tuple[str, str, int]) -> list[dict[str, Any]]:
        """A held-back high surrogate whose pair never came, sent as U+FFFD."""
        if self._held.pop(stream, None) is None:
            return []
        self._lone_surrogate()
        if stream[0] == "args":
            return self._args_chunk(stream[1], "\ufffd")
        return self._emit_part(stream, "\ufffd")

    def _flush_all(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for stream in list(self._held):
            out += self._flush(stream)
        return out

    def _send_text(self, part: tuple[str, str, int], text: str) -> list[dict[str, Any]]:
        if not text:
            return []
        sent = self.sent.get(part)
        if sent is None:
            sent = self.sent[part] = TextAcc()
        sent.add(text)
        text = self._clean(part, text)
        if not text:
            return []
        return self._emit_part(part, text)

    def _emit_part(self, part: tuple[str, str, int], text: str) -> list[dict[str, Any]]:
        channel = part[0]
        if channel in ("reasoning", "summary"):
            return self._emit_reasoning(part, text)
        return self._emit_text(channel, text)

    def _emit_text(self, channel: str, text: str) -> list[dict[str, Any]]:
        """Visible text (``content``) or a refusal, closing a think block first."""
        if channel == "refusal":
            return self._end_think() + [self._chunk({"refusal": text})]
        return [self._chunk({"content": self._close_think() + text})]

    def _emit_reasoning(self, part: tuple[str, str, int], text: str) -> list[dict[str, Any]]:
        if self.reasoning == "omit":
            return []
        if self.reasoning_part is not None and self.reasoning_part != part:
            self.reasoning_pending_separator = True
        if self.reasoning_pending_separator:
            text = REASONING_SEPARATOR + text
            self.reasoning_pending_separator = False
        self.reasoning_part = part
        if self.reasoning == "think":
            if not self.thinking:
                self.thinking = True
                text = THINK_OPEN + text
            return [self._chunk({"content": text})]
        return [self._chunk({self.reasoning: text})]

    # -- client tool calls ----------------------------------------------------
    def _open_call(
        self, key: str, item: Mapping[str, Any], action: str | None = None
    ) -> list[dict[str, Any]]:
        """Open a tool call: a function or custom call, or ``action`` (an ``ACTION_CALLS`` name)."""
        if action is None:
            name = _str(item.get("name"))
            namespace = _str(item.get("namespace"))
            if namespace:
                name = f"{namespace}.{name}"
            call_id = _str(item.get("call_id"))
        else:
            name = action
            call_id = _str(item.get("call_id")) or _str(item.get("id"))
        call_id, name = replace_surrogates(call_id), replace_surrogates(name)
        call = _Call(index=len(self.calls), call_id=call_id, name=name)
        self.calls[key] = call
        tool = {
            "index": call.index,
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        return self._end_think() + [self._chunk({"content": None, "tool_calls": [tool]})]

    def _send_args(self, key: str, text: str) -> list[dict[str, Any]]:
        call = self.calls.get(key)
        if call is None or not text:
            return []
        call.sent.add(text)
        text = self._clean(("args", key, 0), text)
        if not text:
            return []
        return self._args_chunk(key, text)

    def _args_chunk(self, key: str, text: str) -> list[dict[str, Any]]:
        call = self.calls[key]
        tool = {"index": call.index, "function": {"arguments": text}}
        return self._end_think() + [self._chunk({"tool_calls": [tool]})]

    def _call_delta(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self._send_args(self._event_key(payload), _str(payload.get("delta")))

    def _call_done(self, payload: Mapping[str, Any], attr: str) -> list[dict[str, Any]]:
        key = self._event_key(payload)
        call = self.calls.get(key)
        if call is None:
            return []
        missing = self._rest(call.sent.value(), _str(payload.get(attr)))
        return self._send_args(key, missing) + self._flush(("args", key, 0))
