"""The general path of reading chat chunks: every field of every choice, in order."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ...core.convert import logprobs_from_chat, normalize_usage, resolve_tool, tool_index
from ...core.limits import LIMIT_EXCEEDED, LimitExceeded
from ...core.processor import ItemHandle, StreamProcessor
from ...core.sse_parse import has_surrogate, join_surrogates, replace_surrogates
from ...core.stream import TextAcc
from .client_calls import stream_typed_call
from .shapes import (
    BAD_INPUT,
    EXTRA_FINISH_REASONS,
    LONE_SURROGATE,
    UNSUPPORTED_N,
    UPSTREAM_ERROR,
    WHOLE_CALLS,
    BadChunk,
    _as_summary,
    _Call,
    _log,
    _PartFast,
    upstream_error,
    wants_summary,
)


class ChunkReader:
    """The general path of the chat-to-Responses conversion: each chunk's choices read
    field by field into the items the chat routes name, tool call fragments gathered into
    calls, bad input and lone surrogates dealt with.  ``ChatToResponses`` adds the input
    methods and the fast paths of the usual chunk."""

    end: Callable[[], None]  # the converter's: the input is over (ChatToResponses.end)

    def __init__(self, proc: StreamProcessor, request: Mapping[str, Any] | None = None) -> None:
        self.proc = proc
        proc.fail_on_limit = False  # over a limit, _fail flushes the buffered calls first
        routes = proc.dialect.tables.CHAT_ROUTES
        self.fields: dict[str, Any] = routes["fields"]
        if wants_summary(request):  # reasoning streamed as the summary that was asked for
            self.fields = {k: _as_summary(route) for k, route in self.fields.items()}
        self.tool_items: dict[str, str] = routes["tool_calls"]
        # calls opened whole when they end: a client tool_search, a client-run typed tool
        self.whole: dict[str, str] = {**WHOLE_CALLS, **routes["tool_calls"].get("client", {})}
        self.bad_call: str | None = None  # a typed call's bad arguments: the response fails
        # parallel_tool_calls false: one call, even from an upstream that starts a second
        self.one_call = isinstance(request, Mapping) and request.get("parallel_tool_calls") is False
        self.enough = False
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
        if self.enough and not self.done:  # the one call is whole: the response ends
            self.finish_reason = "tool_calls"
            self.end()

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
    @staticmethod
    def _keep_args(call: _Call, args: str) -> None:
        """Arguments kept for a call whose item is not open yet."""
        call.args.add(args)
        call.buffered += len(args)

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
        if call is None and (self.enough or (self.one_call and self.calls)):
            self.enough = True  # a second call, where one was asked for: not taken
            return
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
        if tool.kind in self.whole:  # opened whole when the call ends (_close_whole)
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
        """A client-run tool's call, its item made from its whole arguments: a typed
        tool's (``client_calls``), or a ``tool_search_call`` (JSON, else the text)."""
        text = "".join(call.args.pieces()) + call.held
        call.held = ""
        kind = resolve_tool(self.tools, call.name, call.kind).kind
        if not call.id:
            call.id = self.proc.response.ids("call_")
        if kind != "tool_search":
            bad = stream_typed_call(self.proc, self.whole[kind], call.id, text, status)
            if bad is not None and status == "completed":  # cut short, it is no error
                self.bad_call = self.bad_call or bad
            call.closed = True
            return
        try:
            arguments: Any = json.loads(text) if text.strip() else {}
        except ValueError:
            arguments = text
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
