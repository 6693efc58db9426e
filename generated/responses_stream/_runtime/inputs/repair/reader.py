"""A server's Responses stream, read tolerantly and sent on strictly valid.

``ResponsesRepair`` reads the events a server streams as the consumers read genuine
streams: by what each event says (its type, its item's id), not by the numbers around
it.  It drives the package's own ``StreamProcessor``, which numbers the events, gives the
indexes and ids, supplies every ``.added``/``.done`` event and builds the final
Response from the items it streamed, so the stream it makes is valid by construction.

What a server gets wrong, and what the repair does:

- sequence numbers, output and content indexes absent, restarting or wrong: ignored;
  an event finds its item by ``item_id``, else by ``output_index``, else it is the item
  being streamed, and its part by the last ``.added`` of that kind;
- events missing: an item or part opens at its first content, and closes at its own
  ``.done``, at the next item's content or at the end;
- text or arguments that only a ``.done`` event (or the final output) carries: what
  extends what was streamed is streamed then; an item only the final output holds is
  streamed whole before the terminal event;
- the terminal event: ``response.completed`` whose usage shows the output cut at
  ``max_output_tokens`` ends ``response.incomplete``; an ``error`` event, a bare
  ``{"error": ...}`` object or ``response.failed`` ends with ``error`` and
  ``response.failed`` keeping the server's code and message; an end without a terminal
  event fails (code ``stream_ended_early``);
- tool calls the text carries in a model family's markup (``markup``) become
  ``function_call`` items when the request offered functions;
- a call whose arguments are not JSON waits for the end: cut by the token limit, it ends
  incomplete; else it is streamed as the model wrote it.

Text that comes for an item after another item began continues in a new item of its
type.  A call is streamed whole when it ends (its ``.done`` events, or the end of the
stream), so arguments a server interleaves between calls are joined to their own call,
and arguments that are JSON objects glued together (parallel calls a server merged)
become one call each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.convert import normalize_usage
from ...core.errors import TransitionError
from ...core.processor import ProcessorError, StreamProcessor
from ..chat.shapes import upstream_error
from .markup import CallMarkup
from .writer import BadStream, ItemWriter, _Item, _Part, _text

BAD_STREAM = "bad_upstream_stream"
ENDED_EARLY = "stream_ended_early"
INCOMPLETE_REASONS = ("max_output_tokens", "content_filter")
# text events: type -> (the item type they belong to, the part kind)
TEXT_EVENTS = {
    "response.output_text": ("message", "output_text"),
    "response.refusal": ("message", "refusal"),
    "response.reasoning_text": ("reasoning", "reasoning_text"),
    "response.reasoning_summary_text": ("reasoning", "summary_text"),
}
PART_EVENTS = (
    "response.content_part",
    "response.reasoning_summary_part",
    "response.reasoning_part",  # vLLM's name for a reasoning content part
)
ARGUMENT_EVENTS = {
    "response.function_call_arguments": "function_call",
    "response.custom_tool_call_input": "custom_tool_call",
}


class ResponsesRepair(ItemWriter):
    """Feeds a server's Responses events into a ``StreamProcessor``; read the repaired
    events with ``proc.drain()`` (see the module doc)."""

    def __init__(self, proc: StreamProcessor, request: Mapping[str, Any] | None = None) -> None:
        super().__init__(proc, request)
        self.items: dict[str, _Item] = {}
        self.by_index: dict[int, _Item] = {}
        self.done = False
        self.seen = False

    # -- input ----------------------------------------------------------------
    def feed(self, event: Any) -> None:
        """One event of the server's stream, parsed."""
        if self.done:
            return
        self.seen = True
        try:
            self._event(event)
        except BadStream as exc:
            self.fail(str(exc), BAD_STREAM)
        except (ProcessorError, TransitionError) as exc:
            self.fail(f"the upstream stream cannot be repaired: {exc}", BAD_STREAM)

    def end(self) -> None:
        """The server's stream is over without a terminal event."""
        if self.done:
            return
        if not self.seen:
            self.fail("the upstream stream holds no event", ENDED_EARLY)
            return
        self.fail("the upstream stream ended before its terminal event", ENDED_EARLY)

    def fail(self, message: str, code: str) -> None:
        """End the stream with ``error`` and ``response.failed``, keeping what came."""
        if self.done:
            return
        self.done = True
        try:
            self._flush_held()
        except (ProcessorError, TransitionError):
            pass
        self.proc.fail(message, code)

    # -- events ---------------------------------------------------------------
    def _event(self, event: Any) -> None:
        if not isinstance(event, Mapping):
            raise BadStream(f"an event must be a JSON object, got {type(event).__name__}")
        kind = event.get("type")
        if not isinstance(kind, str):
            if "error" in event:
                self._note("bare_error")
                self.fail(*upstream_error(event["error"]))
                return
            raise BadStream("an event has no type")
        if kind == "error":
            inner = event.get("error")
            self.fail(*upstream_error(inner if isinstance(inner, Mapping) else event))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self._terminal(kind.rpartition(".")[2], event.get("response"))
        elif kind == "response.output_item.added":
            self._added(event)
        elif kind == "response.output_item.done":
            self._item_done(event)
        elif kind.endswith(".delta"):
            self._delta(kind[: -len(".delta")], event)
        elif kind.endswith(".done"):
            self._done(kind[: -len(".done")], event)
        elif kind.endswith(".added") and kind[: -len(".added")] in PART_EVENTS:
            self._part_added(event)
        elif kind == "response.output_text.annotation.added":
            self._annotation(event)
        elif not kind.startswith(("response.created", "response.in_progress", "response.queued")):
            self._note("event_ignored")

    def _find(self, event: Mapping[str, Any], item_type: str | None) -> _Item:
        """The item an event is for, made when the event is the first to name it."""
        item_id, index = event.get("item_id"), event.get("output_index")
        found = self.items.get(item_id) if isinstance(item_id, str) else None
        if found is None and type(index) is int:
            found = self.by_index.get(index)
        if found is None and item_id is None and self.last is not None:
            found = self.last
        if found is None:
            if item_type is None:
                raise BadStream(f"{event.get('type')} names no item that was added")
            self._note("added_missing")
            found = self._track({"type": item_type, "id": item_id}, index)
        return found

    def _track(self, item: Mapping[str, Any], index: Any) -> _Item:
        kind = item.get("type")
        if not isinstance(kind, str):
            raise BadStream("an output item has no type")
        found = _Item(kind, dict(item))
        if kind == "message" and self.functions:
            found.markup = CallMarkup(self.functions)
        if isinstance(item.get("id"), str):
            self.items[item["id"]] = found
        self.by_index[index if type(index) is int else len(self.order)] = found
        self.order.append(found)
        return found

    def _added(self, event: Mapping[str, Any]) -> None:
        item = event.get("item")
        if not isinstance(item, Mapping):
            raise BadStream("response.output_item.added carries no item")
        self._track(item, event.get("output_index"))

    def _part_added(self, event: Mapping[str, Any]) -> None:
        part = event.get("part")
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind is None and event.get("type") == "response.reasoning_summary_part.added":
            kind = "summary_text"
        found = self._find(event, _item_type_of(kind))
        if not isinstance(kind, str):
            return
        last = next((p for p in reversed(found.parts) if p.kind == kind), None)
        if last is not None and not last.added and not last.done:
            last.added = True  # its text came first: this is the part it began
        else:
            found.parts.append(_Part(kind))

    def _delta(self, name: str, event: Mapping[str, Any]) -> None:
        delta = _text(event.get("delta"))
        if name in TEXT_EVENTS:
            item_type, kind = TEXT_EVENTS[name]
            if delta:
                self._add_text(self._find(event, item_type), kind, delta)
        elif name in ARGUMENT_EVENTS:
            if delta:
                self._add_args(self._find(event, ARGUMENT_EVENTS[name]), delta)
        else:
            self._note("event_ignored")

    def _done(self, name: str, event: Mapping[str, Any]) -> None:
        if name in TEXT_EVENTS:
            item_type, kind = TEXT_EVENTS[name]
            found = self._find(event, item_type)
            self._settle_text(
                found, self._part_of(found, kind, ending=True), _text(event.get("text"))
            )
        elif name in PART_EVENTS:
            part = event.get("part")
            if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
                return
            part_kind: str = part["type"]
            found = self._find(event, _item_type_of(part_kind))
            self._settle_text(
                found, self._part_of(found, part_kind, ending=True), _text(part.get("text"))
            )
        elif name in ARGUMENT_EVENTS:
            found = self._find(event, ARGUMENT_EVENTS[name])
            self._settle_args(found, _text(event.get("arguments", event.get("input"))))
        else:
            self._note("event_ignored")

    def _annotation(self, event: Mapping[str, Any]) -> None:
        found = self._find(event, "message")
        annotation = event.get("annotation")
        if found.handle is None or found.handle.closed or found.handle.part_kind != "output_text":
            self._note("annotation_dropped")
            return
        try:
            found.handle.part_phase("annotate", annotation=annotation)
        except ProcessorError:
            self._note("annotation_dropped")

    def _item_done(self, event: Mapping[str, Any]) -> None:
        item = event.get("item")
        if not isinstance(item, Mapping):
            raise BadStream("response.output_item.done carries no item")
        found = (
            self._find({**event, "item_id": item.get("id")}, None)
            if self._known(item, event.get("output_index"))
            else self._track(item, event.get("output_index"))
        )
        self._settle_item(found, item)

    def _known(self, item: Mapping[str, Any], index: Any) -> bool:
        return (isinstance(item.get("id"), str) and item["id"] in self.items) or (
            type(index) is int and index in self.by_index
        )

    # -- the end ----------------------------------------------------------------
    def _terminal(self, status: str, response: Any) -> None:
        response = response if isinstance(response, Mapping) else {}
        output = response.get("output")
        finals = [i for i in output if isinstance(i, Mapping)] if isinstance(output, list) else []
        for at, item in enumerate(finals):
            found = None
            if isinstance(item.get("id"), str):
                found = self.items.get(item["id"])
            if found is None and at < len(self.order) and self.order[at].type == item.get("type"):
                found = self.order[at]
            if found is None:
                self._note("item_from_final_output")
                found = self._track(item, None)
            self._settle_item(found, item)
        for found in self.order:
            self._settle_item(found, {})
        self.done = True
        usage = response.get("usage")
        usage = normalize_usage(usage) if isinstance(usage, Mapping) else None
        cut = status == "completed" and self._cut(usage)
        self._stream_pending("completed" if status == "completed" and not cut else "incomplete")
        if status == "failed":
            error = response.get("error")
            if not isinstance(error, Mapping) or not error:
                error = {"message": "the upstream response failed"}
            self.proc.fail(*upstream_error(error), usage=usage)
        elif status == "incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, Mapping) else None
            self.proc.truncate(
                reason if reason in INCOMPLETE_REASONS else "max_output_tokens", usage
            )
        elif cut:
            self._note("completed_but_cut")
            self.proc.truncate("max_output_tokens", usage)
        else:
            self.proc.finish(usage)

    def _cut(self, usage: Mapping[str, Any] | None) -> bool:
        """The output reached the request's ``max_output_tokens``: it was cut there."""
        limit = self.request.get("max_output_tokens")
        used = (usage or {}).get("output_tokens")
        return type(limit) is int and type(used) is int and used >= limit


def _item_type_of(part_kind: Any) -> str:
    """The item type a part of ``part_kind`` belongs to."""
    return "reasoning" if part_kind in ("reasoning_text", "summary_text") else "message"
