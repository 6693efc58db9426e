"""Chat Completions stream -> Responses stream, on top of the stream processor.

Input is the chunk shape that OpenAI chat chunks and vLLM's DeltaMessage
share.  Routing of delta fields to items comes from the chat routes spec.

Bad input never yields an invalid or silently truncated stream:
- broken input (bad JSON, no ``choices``, an upstream error object, a tool
  fragment for a new index with neither id nor name, content after
  ``finish_reason``) ends the stream with ``error`` and ``response.failed``;
- input that stops early (no ``finish_reason``) ends it with
  ``response.incomplete`` (reason ``max_output_tokens``);
- in both cases every item is closed and all text received is kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .convert import Tool, logprobs_from_chat, normalize_usage, resolve_tool, tool_index
from .processor import ItemHandle, StreamProcessor

BAD_INPUT = "invalid_upstream_chunk"


class BadChunk(ValueError):
    """A chunk that cannot be part of a valid chat stream."""


@dataclass
class _Call:
    index: int
    id: str
    tool: Tool
    args: list[str] = field(default_factory=list)
    handle: ItemHandle | None = None
    closed: bool = False


class ChatToResponses:
    """Feeds chat chunks into a ``StreamProcessor``; read events with ``drain()``."""

    def __init__(self, proc: StreamProcessor, request: Mapping[str, Any] | None = None) -> None:
        self.proc = proc
        routes = proc.dialect.tables.CHAT_ROUTES
        self.fields: dict[str, Any] = routes["fields"]
        self.tool_items: dict[str, str] = routes["tool_calls"]
        self.finish_reasons: dict[str, str] = routes["finish_reasons"]
        self.tools = tool_index(request)
        self.calls: dict[int, _Call] = {}
        self.live: _Call | None = None
        self.item: ItemHandle | None = None  # the open text item
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.done = False

    # -- input --------------------------------------------------------------
    def feed_data(self, data: str) -> None:
        """One SSE ``data:`` payload: a JSON chunk or ``[DONE]``."""
        if self.done:
            return
        if data.strip() == "[DONE]":
            self.end()
            return
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            self._fail(f"malformed chunk (not JSON): {exc}")
            return
        self.feed(chunk)

    def feed(self, chunk: Any) -> None:
        """One parsed chunk."""
        if self.done:
            return
        if not self.proc.started:
            self.proc.start()
        try:
            self._feed(chunk)
        except BadChunk as exc:
            self._fail(str(exc))

    def end(self) -> None:
        """The input is over ([DONE] or end of stream)."""
        if self.done:
            return
        if not self.proc.started:
            self.proc.start()
        self.done = True
        reason = self.finish_reasons.get(self.finish_reason or "", None)
        usage = normalize_usage(self.usage)
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
    def _feed(self, chunk: Any) -> None:
        if not isinstance(chunk, Mapping):
            raise BadChunk("malformed chunk: expected a JSON object")
        if "error" in chunk and "choices" not in chunk:
            err = chunk["error"]
            message = err.get("message") if isinstance(err, Mapping) else str(err)
            raise BadChunk(f"upstream error: {message or err}")
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise BadChunk("malformed chunk: missing 'choices'")
        for choice in choices:
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            self._choice(choice)

    def _choice(self, choice: Mapping[str, Any]) -> None:
        delta = choice.get("delta") or {}
        if not isinstance(delta, Mapping):
            raise BadChunk("malformed chunk: 'delta' is not an object")
        if self.finish_reason is not None and self._has_output(delta):
            raise BadChunk(f"delta after finish_reason {self.finish_reason!r}")
        routed: set[tuple[str, str]] = set()
        for key, route in self.fields.items():
            text = delta.get(key)
            target = (route["item"], route["part"])
            # Some servers send one text under two spellings (reasoning and reasoning_content).
            if isinstance(text, str) and text and target not in routed:
                routed.add(target)
                logprobs = logprobs_from_chat(choice.get("logprobs")) if key == "content" else []
                self._text(route["item"], route["part"], text, logprobs)
        calls = delta.get("tool_calls")
        if calls:
            if not isinstance(calls, list):
                raise BadChunk("malformed chunk: 'tool_calls' is not a list")
            for fragment in calls:
                self._tool_fragment(fragment)
        reason = choice.get("finish_reason")
        if reason is not None:
            if reason not in self.finish_reasons:
                raise BadChunk(f"unknown finish_reason {reason!r}")
            self.finish_reason = reason
            status = "completed" if self.finish_reasons[reason] == "completed" else "incomplete"
            self._close_all(status)

    def _has_output(self, delta: Mapping[str, Any]) -> bool:
        return any(isinstance(delta.get(k), str) and delta[k] for k in self.fields) or bool(
            delta.get("tool_calls")
        )

    def _text(self, item_type: str, part: str, text: str, logprobs: list[Any]) -> None:
        if self.calls:
            self._close_calls("completed")
        item = self.item
        if item is None or item.closed or item.type != item_type:
            item = self.item = self.proc.open(item_type)
        if item.part_kind != part:
            item.part(part)
        if part == "output_text":
            item.text(text, logprobs=self._logprobs(logprobs))
        else:
            item.text(text)

    def _logprobs(self, logprobs: list[Any]) -> Any:
        if not logprobs:
            return []
        target = list.__class_getitem__(self.proc.dialect.models.Logprob)
        return msgspec.convert(logprobs, type=target)

    # -- tool calls ---------------------------------------------------------
    def _tool_fragment(self, fragment: Any) -> None:
        if not isinstance(fragment, Mapping) or not isinstance(fragment.get("index"), int | None):
            raise BadChunk("malformed tool call fragment")
        index = fragment.get("index")
        if index is None:
            index = self._implicit_index(fragment.get("id"))
        fn = fragment.get("function") or fragment.get("custom") or {}
        name = fn.get("name") if isinstance(fn, Mapping) else None
        args = fn.get("arguments", fn.get("input")) if isinstance(fn, Mapping) else None
        call = self.calls.get(index)
        if call is None:
            if not fragment.get("id") and not name:
                raise BadChunk(f"tool call fragment for new index {index} has no id and no name")
            if self.item is not None and not self.item.closed:
                self.item.close("completed")
            kind = "custom" if fragment.get("type") == "custom" else "function"
            tool = resolve_tool(self.tools, str(name or ""), kind)
            call_id = str(fragment.get("id") or self.proc.response.ids("call_"))
            call = self.calls[index] = _Call(index, call_id, tool)
            if self.live is None:
                self._go_live(call)
        elif call.closed:
            raise BadChunk(f"tool call fragment for index {index} after the call was closed")
        if isinstance(args, str) and args:
            call.args.append(args)
            if call is self.live and call.handle is not None:
                call.handle.delta(args)

    def _implicit_index(self, call_id: Any) -> int:
        """An index for servers that leave it out: by call id, or the latest call."""
        if call_id:
            for index, call in self.calls.items():
                if call.id == call_id:
                    return index
            return max(self.calls, default=-1) + 1
        return max(self.calls, default=0)

    def _go_live(self, call: _Call) -> None:
        item_type = self.tool_items[call.tool.kind]
        fields: dict[str, Any] = {"call_id": call.id, "name": call.tool.name}
        if call.tool.namespace is not None:
            fields["namespace"] = call.tool.namespace
        call.handle = self.proc.open(item_type, **fields)
        self.live = call
        for piece in call.args:
            call.handle.delta(piece)

    def _close_calls(self, status: str) -> None:
        """Close the live call, then emit every buffered call in index order."""
        for call in sorted(self.calls.values(), key=lambda c: (c is not self.live, c.index)):
            if call.closed:
                continue
            if call.handle is None:
                self._go_live(call)
            assert call.handle is not None
            call.handle.close(status)
            call.closed = True
        self.live = None

    def _close_all(self, status: str) -> None:
        if self.item is not None and not self.item.closed:
            self.item.close(status)
        self._close_calls(status)

    def _fail(self, message: str) -> None:
        self.done = True
        self._close_all("incomplete")
        self.proc.fail(message, code=BAD_INPUT, usage=normalize_usage(self.usage))
