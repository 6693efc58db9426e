"""Responses stream -> Chat Completions chunks: the reverse of ``chat.py``.

``ResponsesToChat`` takes the parsed ``data:`` payloads of a Responses
stream, one at a time, and returns the ``chat.completion.chunk`` dicts to
send; ``chat_sse_from_responses`` (and its async twin) frame them as chat
SSE ending with ``data: [DONE]``.

Routing. Event types are read through the dialect's ``wire_types`` (so
openresponses' ``response.reasoning.delta`` is raw reasoning like openai's
``response.reasoning_text.delta``) and item types through its
``item_types``.  Every event is tied to its item by ``item_id`` (or by
``output_index`` when it carries no id), never to "the last item added", so
interleaved items stay apart.  Some servers (a GitHub Copilot gateway, for
one) give every event a fresh ``item_id``: an id that names no known item
while its ``output_index`` does is routed by ``output_index`` (and
``content_index`` / ``summary_index`` within it), ``output_item.done``
included, so its text is not sent a second time; this is reported once as a
warning: appended to ``ResponsesToChat.warnings`` and logged on this
module's logger (``logging`` prints it to stderr when nothing is
configured, as in the CLI).

Mapping:

- ``output_text`` -> ``delta.content``; ``refusal`` -> ``delta.refusal``.
- Reasoning, raw (``reasoning_text``) and summaries alike, by ``reasoning``:
  ``"reasoning_content"`` -> ``delta.reasoning_content``; ``"reasoning"`` ->
  ``delta.reasoning``; ``"think"`` -> inline in ``delta.content`` between
  ``<think>\\n`` and ``\\n</think>\\n\\n``; ``"omit"`` -> dropped.  Two
  reasoning parts in a row are separated by a blank line.  An open think
  block is closed before any text, refusal, tool call or hosted-tool note,
  and at every end: completed, incomplete, failed, error, or ``close()``.
- ``function_call`` and ``custom_tool_call`` items -> ``delta.tool_calls``.
  Indexes are 0-based and contiguous, in order of ``output_item.added``.
  The first chunk of a call carries ``id`` (the ``call_id``), ``type``
  ``"function"`` and ``function.name`` (``namespace.name`` when namespaced)
  with empty arguments; later chunks carry only ``index`` and
  ``function.arguments``.  A custom tool's free-form input is sent as its
  arguments, since chat streams only carry function tool calls.
- Done events deliver what deltas did not: ``*.done`` events and
  ``output_item.done`` send the missing suffix (the done text minus what was
  already sent), so arguments (or text) that arrive only at the end are not
  lost.  A done text that does not extend what was sent cannot be expressed
  in an append-only chat stream and is ignored, with a warning (``done-text-differs``).
  Items still open at ``response.completed`` or ``response.incomplete`` are closed
  from the response's own output, as the SDK takes it, with a warning
  (``never-closed``).  Argument events for a call
  whose ``output_item.added`` never came are dropped; its
  ``output_item.done`` then delivers the whole call.
- Items the client must act on become tool calls as well, opened at
  ``output_item.added`` and given their arguments, one JSON object, at
  ``output_item.done`` (``id`` is the ``call_id``, or the item ``id`` when
  there is none):

  - ``apply_patch_call`` -> ``apply_patch``, arguments: its ``operation``
    (``type``, ``path``, ``diff``);
  - ``local_shell_call`` -> ``local_shell``: its ``action`` (``type``,
    ``command``, ``env``, ...);
  - ``shell_call`` -> ``shell``: its ``action`` (``commands``,
    ``timeout_ms``, ``max_output_length``);
  - ``computer_call`` -> ``computer``: its ``action`` (or
    ``{"actions": [...]}`` when it carries a list);
  - ``mcp_approval_request`` -> ``mcp_approval_request``: its
    ``server_label``, ``name`` and ``arguments`` (the string, as sent).

  A ``shell_call`` whose ``environment`` is a container
  (``container_auto``, ``container_reference``) runs on the server and is
  treated as hosted.
- Hosted tools (``web_search_call``, ``file_search_call``,
  ``code_interpreter_call``, ``mcp_call``, ``mcp_list_tools``,
  ``image_generation_call``, ``tool_search_call``, ``program``, the
  ``*_output`` items and any item type not named here) run on the server or
  have no chat equivalent: they are not client tool calls, and never become
  ``tool_calls``.  ``hosted="omit"`` (the default) sends nothing for them;
  ``hosted="content"`` sends a one-line note such as
  ``[web_search_call: completed]`` in ``delta.content`` when the item is
  done.  ``compaction`` items are always silent.  Unknown item and event
  types are passed over the same way; they never raise.

Endings:

- ``response.completed`` -> ``finish_reason`` ``"tool_calls"`` if a tool
  call (of any kind above) was made, else ``"stop"``.
- ``response.incomplete`` -> ``"length"`` for ``max_output_tokens``,
  ``"content_filter"`` for ``content_filter``, otherwise as completed.
- ``response.failed``, an ``error`` event, or a bare ``{"error": {...}}``
  payload (no ``type``) -> one payload
  ``{"error": {"message", "type", "param", "code"}}``, on which the OpenAI
  SDK raises ``APIError``; nothing follows it but ``[DONE]``.  An upstream
  error never ends as ``length``.
- A stream that stops without a terminal event ends on ``close()`` with
  ``finish_reason`` ``"length"``, mirroring how ``chat.py`` treats chat
  input that stops early.
- With ``include_usage`` every chunk has ``"usage": null`` and the terminal
  response's usage follows the finish chunk in a ``choices: []`` chunk
  (omitted when the response carries no usage).

Every chunk has the same ``id`` (``chatcmpl-`` + response id), ``created``
(the response's ``created_at``) and ``model``; ``role`` is sent once, in the
first chunk.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any, Literal

import msgspec

from ..core.convert import loads, normalize_usage
from ..core.dialect import Dialect
from ..core.errors import BadValue, source_failure
from ..core.input_form import asse_from_input, sse_from_input
from ..core.processor import get_dialect
from ..core.sse_parse import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    SSELimitError,
    SSEParser,
    has_surrogate,
    join_surrogates,
    replace_surrogates,
)
from ..core.stream import TextAcc

ReasoningMode = Literal["reasoning_content", "reasoning", "think", "omit"]
HostedMode = Literal["omit", "content"]
Payload = Mapping[str, Any] | str | bytes

REASONING_MODES: tuple[str, ...] = ("reasoning_content", "reasoning", "think", "omit")
HOSTED_MODES: tuple[str, ...] = ("omit", "content")
THINK_OPEN = "<think>\n"
THINK_CLOSE = "\n</think>\n\n"
REASONING_SEPARATOR = "\n\n"
DONE_FRAME = b"data: [DONE]\n\n"
TEXT_DELTA = "response.output_text.delta"
# json.dumps(chunk, ensure_ascii=False, separators=(",", ":")), without a new encoder per call
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_dumps_str: Callable[[str], str] = encode_basestring  # the same, for one str
_decode = msgspec.json.Decoder().decode
# The deltas feed_sse splices into pre-encoded chunk JSON, by catalogue event name.
_SPLICED: dict[str, str] = {
    TEXT_DELTA: "text",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "summary",
    "response.function_call_arguments.delta": "args",
    "response.custom_tool_call_input.delta": "args",
}

_log = logging.getLogger(__name__)
EMPTY_INPUT = "empty_input"  # the code of the error chunk for input without any event
# the encoder for an action call's arguments (tolerates values that are not JSON types)
_dumps_args = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode

# client tool call item type -> the item field its deltas accumulate
CLIENT_CALLS: dict[str, str] = {"function_call": "arguments", "custom_tool_call": "input"}
# item type the client must act on -> the tool name it is sent under
ACTION_CALLS: dict[str, str] = {
    "apply_patch_call": "apply_patch",
    "local_shell_call": "local_shell",
    "shell_call": "shell",
    "computer_call": "computer",
    "mcp_approval_request": "mcp_approval_request",
}
# item types the server runs (documentation: any type not in CLIENT_CALLS/ACTION_CALLS is hosted)
HOSTED_ITEMS: frozenset[str] = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "mcp_list_tools",
        "image_generation_call",
        "tool_search_call",
        "program",
    }
)
SILENT_ITEMS: frozenset[str] = frozenset({"message", "reasoning", "compaction"})
INCOMPLETE_REASONS: dict[str, str] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


def _missing(sent: str, full: str) -> str:
    """The suffix of ``full`` not yet sent, or ``""`` if ``full`` does not extend ``sent``.

    A surrogate pair split over two deltas counts as the character it encodes.
    """
    if has_surrogate(sent) or has_surrogate(full):
        sent, full = join_surrogates(sent), join_surrogates(full)
    return full[len(sent) :] if full.startswith(sent) else ""


def _is_high_surrogate(char: str) -> bool:
    return "\ud800" <= char <= "\udbff"


def _plain(value: Any) -> Any:
    """An error's ``code`` / ``param`` as JSON the SDK reads: a string, an integer or null."""
    if value is None or isinstance(value, str) or (type(value) is int):
        return value
    return str(value)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def is_client_action(kind: str, item: Mapping[str, Any]) -> bool:
    """Whether an ``ACTION_CALLS`` item is for the client to run (a container shell is not)."""
    if kind == "shell_call":
        return not _str(_mapping(item.get("environment")).get("type")).startswith("container")
    return kind in ACTION_CALLS


def action_arguments(kind: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments object of an ``ACTION_CALLS`` item's tool call (see the module doc)."""
    if kind == "apply_patch_call":
        return dict(_mapping(item.get("operation")))
    if kind == "mcp_approval_request":
        return {k: item[k] for k in ("server_label", "name", "arguments") if k in item}
    action = item.get("action")
    if isinstance(action, Mapping):
        return dict(action)
    if isinstance(item.get("actions"), list):
        return {"actions": item["actions"]}
    return {}


def chat_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Responses usage (or chat usage) in the chat ``CompletionUsage`` shape."""
    u = normalize_usage(usage)
    return {
        "prompt_tokens": u["input_tokens"],
        "completion_tokens": u["output_tokens"],
        "total_tokens": u["total_tokens"],
        "prompt_tokens_details": {"cached_tokens": u["input_tokens_details"]["cached_tokens"]},
        "completion_tokens_details": {
            "reasoning_tokens": u["output_tokens_details"]["reasoning_tokens"]
        },
    }


@dataclass
class _Call:
    index: int
    call_id: str
    name: str
    sent: TextAcc = field(default_factory=TextAcc)


class ResponsesToChat:
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
        self.reasoning = reasoning
        self.include_usage = include_usage
        self.hosted = hosted
        self.dialect = get_dialect(dialect)
        self.event_names = self.dialect.wire_types
        self.item_kinds = {wire: kind for kind, wire in self.dialect.item_types.items()}
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
        self.done = False
        self.fed = False  # an event came (the spliced path is taken only after one)
        self.warnings: list[str] = []  # what was repaired or guessed, each reported once
        # per text part or tool call: a high surrogate whose low half may be in the next delta
        self._held: dict[tuple[str, str, int], str] = {}
        self._warned: set[str] = set()
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

    def _warn(self, code: str, message: str) -> None:
        """Report ``message`` once per ``code``: in ``warnings`` and on the module logger."""
        if code in self._warned:
            return
        self._warned.add(code)
        self.warnings.append(message)
        _log.warning("to-chat: %s", message)

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

    # -- chunks -------------------------------------------------------------
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

    def _item_kind(self, item: Mapping[str, Any]) -> str:
        wire = _str(item.get("type"))
        return self.item_kinds.get(wire, wire)

    # -- items --------------------------------------------------------------
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


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, any lone surrogate left in it as U+FFFD."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return replace_surrogates(text).encode()


def _frame(chunk: Mapping[str, Any]) -> bytes:
    return b"data: " + _utf8(_dumps(chunk)) + b"\n\n"


def chat_logprobs(value: Any) -> list[dict[str, Any]]:
    """A delta's Responses logprobs as chat ``logprobs.content`` entries (the same
    ``token``, ``logprob``, ``bytes`` and ``top_logprobs``); malformed ones are left out."""
    out = []
    for entry in value if isinstance(value, list) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("token"), str):
            continue
        logprob = entry.get("logprob")
        if not isinstance(logprob, int | float) or isinstance(logprob, bool):
            continue
        tops = entry.get("top_logprobs")
        out.append(
            {
                "token": entry["token"],
                "logprob": float(logprob),
                "bytes": entry.get("bytes") if isinstance(entry.get("bytes"), list) else None,
                "top_logprobs": [
                    {
                        "token": t["token"],
                        "logprob": float(t["logprob"]),
                        "bytes": t.get("bytes") if isinstance(t.get("bytes"), list) else None,
                    }
                    for t in (tops if isinstance(tops, list) else ())
                    if isinstance(t, Mapping)
                    and isinstance(t.get("token"), str)
                    and isinstance(t.get("logprob"), int | float)
                    and not isinstance(t.get("logprob"), bool)
                ],
            }
        )
    return out


def chat_chunks_from_responses(
    payloads: Iterable[Payload],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Chat chunk dicts for a Responses stream's payloads; reading stops at its end."""
    conv = ResponsesToChat(
        reasoning=reasoning,
        include_usage=include_usage,
        dialect=dialect,
        hosted=hosted,
        model=model,
    )
    for payload in payloads:
        yield from conv.feed(payload)
        if conv.done:
            return
    yield from conv.close()


def chat_sse_from_responses(
    payloads: Iterable[Payload],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
) -> Iterator[bytes]:
    """Chat SSE frames (``data: {json}\\n\\n``) for a Responses stream, then ``data: [DONE]``."""
    conv = ResponsesToChat(
        reasoning=reasoning,
        include_usage=include_usage,
        dialect=dialect,
        hosted=hosted,
        model=model,
    )
    for payload in payloads:
        yield from conv.feed_sse(payload)
        if conv.done:
            break
    for chunk in conv.close():
        yield _frame(chunk)
    yield DONE_FRAME


def _over_cap(conv: ResponsesToChat, exc: SSELimitError) -> list[bytes]:
    """The frames for the events a read completed before it went over an SSE cap, then
    the error chunk (code ``sse_limit_exceeded``) unless the stream had already ended."""
    frames: list[bytes] = []
    for message in exc.messages:
        if not conv.done:
            frames.extend(conv.feed_sse(message.data))
    if not conv.done:
        frames.extend(_frame(failed) for failed in conv.fail(str(exc), "sse_limit_exceeded"))
    return frames


def chat_sse_from_sse(
    chunks: Iterable[bytes],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
    input: str = "auto",
) -> Iterator[bytes]:
    """``chat_sse_from_responses`` for a Responses stream as SSE bytes, parsed here.

    ``input`` says what the bytes are: ``"sse"``, ``"jsonl"`` (one event per line) or
    ``"auto"``, told from the first bytes (see ``sse_from_input``).  Bytes that are not
    UTF-8 are read as U+FFFD.  An input line or event over the parser's caps (see
    ``SSEParser``) ends the chat stream with an error chunk, code
    ``sse_limit_exceeded``, then ``data: [DONE]``; input without any event, with an
    error chunk, code ``empty_input``.
    """
    conv = ResponsesToChat(
        reasoning=reasoning,
        include_usage=include_usage,
        dialect=dialect,
        hosted=hosted,
        model=model,
    )
    parser = SSEParser(max_line_bytes=max_line_bytes, max_event_bytes=max_event_bytes)
    source = sse_from_input(chunks, input)
    while not conv.done:
        try:
            chunk = next(source, None)
            messages = parser.close() if chunk is None else parser.feed(chunk)
        except SSELimitError as exc:
            yield from _over_cap(conv, exc)
            break
        for message in messages:
            yield from conv.feed_sse(message.data)
            if conv.done:
                break
        if chunk is None:
            break
    for end in conv.close():
        yield _frame(end)
    yield DONE_FRAME


async def achat_sse_from_sse(
    chunks: AsyncIterable[bytes],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
    input: str = "auto",
) -> AsyncIterator[bytes]:
    """``chat_sse_from_sse`` for an async source of SSE or JSON lines (``aiter_bytes()``).

    The bytes are parsed here, one read at a time, as ``chat_sse_from_sse`` parses them
    (the same caps and the same error chunk over them).  A source that raises ends the
    stream as in ``achat_sse_from_responses``; the source is closed (its ``aclose()``)
    when the stream ends or is abandoned.
    """

    conv = ResponsesToChat(
        reasoning=reasoning,
        include_usage=include_usage,
        dialect=dialect,
        hosted=hosted,
        model=model,
    )
    parser = SSEParser(max_line_bytes=max_line_bytes, max_event_bytes=max_event_bytes)
    source = asse_from_input(chunks, input)  # closes the source when it is closed
    try:
        while not conv.done:
            try:
                chunk: bytes | None = await anext(source)
            except StopAsyncIteration:
                chunk = None
            except Exception as exc:
                message, code = source_failure(exc)
                for failed in conv._end_with_error(message, code):
                    yield _frame(failed)
                break
            try:
                messages = parser.close() if chunk is None else parser.feed(chunk)
            except SSELimitError as exc:
                for frame in _over_cap(conv, exc):
                    yield frame
                break
            for msg in messages:
                for frame in conv.feed_sse(msg.data):
                    yield frame
                if conv.done:
                    break
            if chunk is None:
                break
        for end in conv.close():
            yield _frame(end)
        yield DONE_FRAME
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()


async def achat_sse_from_responses(
    payloads: AsyncIterable[Payload] | Iterable[Payload],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
) -> AsyncIterator[bytes]:
    """The async twin of ``chat_sse_from_responses``.

    If the source raises (a dropped connection, a timeout), the stream ends with an
    ``{"error": ...}`` chunk (the openai SDK raises ``APIError``) and ``data: [DONE]``,
    never with a cut body or a ``finish_reason``; the message and code are those of
    ``source_failure``.  An async source is closed (its ``aclose()``) when the stream
    ends or is abandoned.
    """

    conv = ResponsesToChat(
        reasoning=reasoning,
        include_usage=include_usage,
        dialect=dialect,
        hosted=hosted,
        model=model,
    )
    is_async = isinstance(payloads, AsyncIterable)
    source: Any = aiter(payloads) if is_async else iter(payloads)  # type: ignore[arg-type]
    try:
        while not conv.done:
            try:
                payload = await anext(source) if is_async else next(source)
            except (StopAsyncIteration, StopIteration):
                break
            except Exception as exc:
                message, code = source_failure(exc)
                for chunk in conv._end_with_error(message, code):
                    yield _frame(chunk)
                break
            for frame in conv.feed_sse(payload):
                yield frame
        for chunk in conv.close():
            yield _frame(chunk)
        yield DONE_FRAME
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
