"""The stream processor: a response whose items are driven through their state machines.

It works for every spec'd item type from the generated tables alone: it
opens items, routes deltas and phases to their transitions, finishes an item
by walking its machine to ``done``, and guarantees the envelope: created and
in_progress first, one item open at a time, and exactly one terminal event.
"""

from __future__ import annotations

import importlib
import sys
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

import msgspec

from . import wire
from .convert import normalize_usage
from .dialect import Dialect
from .errors import ProcessorError as ProcessorError
from .errors import TransitionError
from .limits import DEFAULT_LIMITS, LIMIT_EXCEEDED, LimitExceeded, Limits
from .sse import SSEEncoder

if TYPE_CHECKING:
    from responses_stream.openai.models import Event as OpenAIEvent
    from responses_stream.openresponses.models import Event as OpenResponsesEvent

    ResponsesEvent: TypeAlias = OpenAIEvent | OpenResponsesEvent
    """An event of either dialect, as ``drain()`` and ``events_from_chat`` give them."""

INCOMPLETE_REASONS = ("max_output_tokens", "content_filter")
TERMINAL_TRANSITION = {"completed": "done", "incomplete": "incomplete", "failed": "fail"}
CLOSING_STATUS = {goal: status for status, goal in TERMINAL_TRANSITION.items()}
# The token counters of usage, in either the Responses or the chat shape.
USAGE_COUNTERS = frozenset(
    """input_tokens output_tokens total_tokens prompt_tokens completion_tokens
    cached_tokens cache_write_tokens cache_creation_tokens reasoning_tokens
    prompt_cache_hit_tokens""".split()
)
USAGE_DETAILS = frozenset(
    """input_tokens_details output_tokens_details prompt_tokens_details
    completion_tokens_details""".split()
)
# The codes the Responses API allows in ``response.error.code`` (a closed enum there);
# any other code stays on the ``error`` event and the response says ``server_error``.
RESPONSE_ERROR_CODES = frozenset(
    """server_error rate_limit_exceeded invalid_prompt data_residency_mismatch bio_policy
    misalignment_policy_violation vector_store_timeout invalid_image invalid_image_format
    invalid_base64_image invalid_image_url image_too_large image_too_small image_parse_error
    image_content_policy_violation invalid_image_mode image_file_too_large
    unsupported_image_media_type empty_image_file failed_to_download_image
    image_file_not_found""".split()
)


# One SSE encoder per dialect object, shared by every processor's drain_sse (an encoder
# holds no stream state, only its per-class prefix cache, which then stays warm).
_ENCODERS: dict[int, tuple[Dialect, SSEEncoder]] = {}


def _shared_encoder(dialect: Dialect) -> SSEEncoder:
    entry = _ENCODERS.get(id(dialect))
    if entry is None or entry[0] is not dialect:
        if len(_ENCODERS) >= 64:  # dialects made on the fly: keep the cache bounded
            _ENCODERS.clear()
        entry = _ENCODERS[id(dialect)] = (dialect, dialect.encoder())
    return entry[1]


def _check_usage(usage: Any, where: str) -> None:
    """Usage must be a mapping whose token counters are ints and whose details are mappings."""
    if not isinstance(usage, Mapping):
        raise ProcessorError(f"{where} must be a mapping of token counts, got {usage!r:.80}")
    for key, value in usage.items():
        if value is None:
            continue
        if key in USAGE_DETAILS:
            _check_usage(value, f"{where}.{key}")
        elif key in USAGE_COUNTERS and type(value) is not int:
            raise ProcessorError(f"{where}.{key} must be an int, got {value!r:.80}")


def _check_envelope_args(
    request: Any, model: Any, response_id: Any, created_at: Any, ids: Any
) -> None:
    if request is not None and not isinstance(request, Mapping):
        raise ProcessorError(f"request must be a mapping, got {request!r:.80}")
    for name, value in (("model", model), ("response_id", response_id)):
        if value is not None and type(value) is not str:
            raise ProcessorError(f"{name} must be a str, got {value!r:.80}")
    if created_at is not None and type(created_at) is not int:
        raise ProcessorError(f"created_at must be an int (Unix seconds), got {created_at!r:.80}")
    if ids is not None and not callable(ids):
        raise ProcessorError(f"ids must be a callable, got {ids!r:.80}")


def get_dialect(dialect: Dialect | str) -> Dialect:
    """A dialect object, by object or by name."""
    if isinstance(dialect, Dialect):
        return dialect
    package = importlib.import_module(__name__.partition("._runtime.")[0])
    dialects: dict[str, Dialect] = package.DIALECTS
    if dialect not in dialects:
        raise ProcessorError(f"unknown dialect {dialect!r}; known: {sorted(dialects)}")
    return dialects[dialect]


def _path_to(table: Mapping[str, Any], state: str, goal: str) -> list[str] | None:
    """Transitions without required parameters that lead from ``state`` to where ``goal`` is legal."""
    states = table["states"]
    queue: deque[tuple[str, list[str]]] = deque([(state, [])])
    seen = {state}
    while queue:
        here, path = queue.popleft()
        if goal in states[here]:
            return path
        for name, target in states[here].items():
            tr = table["transitions"][name]
            if target in seen or name in TERMINAL_TRANSITION.values() or tr["required"]:
                continue
            seen.add(target)
            queue.append((target, path + [name]))
    return None


def _check_params(
    proc: StreamProcessor,
    item_type: str,
    cls: Any,
    method: str,
    what: str,
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """``params`` of ``cls.method`` checked against its signature and the wire.

    Raises ProcessorError naming the item type, the transition and the accepted
    parameters; returns the values to pass on (lone surrogates replaced).
    """
    sig = wire.signature(cls, method)
    unknown = [name for name in params if name not in sig.hints]
    if unknown:
        raise ProcessorError(
            f"{item_type}: {what}: unexpected keyword argument"
            f"{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
            f" (accepted: {wire.accepted(sig)})"
        )
    missing = sorted(sig.required - params.keys())
    if missing:
        raise ProcessorError(
            f"{item_type}: {what}: missing required parameter"
            f" {', '.join(map(repr, missing))} (accepted: {wire.accepted(sig)})"
        )
    shapes = proc._shapes.get(item_type, {})
    return {
        name: wire.check_value(
            value, sig.hints[name], shapes.get(name), f"{item_type}: {what}: {name}", proc._fixes
        )
        for name, value in params.items()
    }


class ItemHandle:
    """One item of a processed stream, driven by transition names from its spec."""

    def __init__(self, proc: StreamProcessor, item_type: str, emitter: Any) -> None:
        self._proc = proc
        self.type = item_type
        self.emitter = emitter
        self.table: Mapping[str, Any] = proc.dialect.tables.ITEMS[item_type]
        self.part_kind: str | None = None
        self.chars = 0  # text accumulated by this item, counted against the limits

    @property
    def item_id(self) -> str:
        return str(self.emitter.item_id)

    @property
    def output_index(self) -> int:
        return int(self.emitter.output_index)

    @property
    def closed(self) -> bool:
        return bool(self.emitter.closed)

    def _checked(self, method: str, what: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` checked against ``method``'s signature and the wire, before any change."""
        return _check_params(self._proc, self.type, type(self.emitter), method, what, params)

    def _emit(self, method: str, params: Mapping[str, Any]) -> None:
        """Run a transition whose parameters are already checked."""
        self._proc.out.extend(getattr(self.emitter, method)(**params))

    def _call(self, method: str, what: str | None = None, **params: Any) -> None:
        self._proc._require_open(self)
        if getattr(self.emitter, method, None) is None:
            raise ProcessorError(f"{self.type}: no transition {method!r}")
        self._emit(method, self._checked(method, what or repr(method), params))

    def _delta_text(self, delta: Any, what: str) -> str:
        if type(delta) is not str:
            raise ProcessorError(f"{self.type}: {what}: a delta must be a str, got {delta!r:.80}")
        return delta if delta.isascii() else wire.fix_str(delta, self._proc._fixes)

    def _part_transitions(self, kind: str) -> Mapping[str, Any]:
        parts: Mapping[str, Any] = self._proc.dialect.tables.PARTS
        transitions: Mapping[str, Any] = parts[kind]["transitions"]
        return transitions

    def part(self, kind: str) -> None:
        """Open a part of ``kind``, closing the part that is open, if any."""
        kinds = sorted({k for ks in self.table["slots"].values() for k in ks})
        if not isinstance(kind, str) or kind not in kinds:
            raise ProcessorError(
                f"{self.type} has no part {kind!r} (parts: {', '.join(kinds) or 'none'})"
            )
        self._proc._require_open(self)
        self.close_part()
        self._call(f"{kind}_open")
        self.part_kind = kind

    def close_part(self) -> None:
        if self.part_kind is not None:
            kind, self.part_kind = self.part_kind, None
            self._call(f"{kind}_done")

    def text(self, delta: str, /, **params: Any) -> None:
        """A delta for the open part."""
        self._proc._require_open(self)
        if self.part_kind is None:
            raise ProcessorError(f"{self.type}: no open part for a text delta")
        if type(delta) is not str or params:
            delta = self._delta_text(delta, f"{self.part_kind} text")
            if "delta" in params:
                raise ProcessorError(
                    f"{self.type}: {self.part_kind} text: the delta is given twice"
                )
        elif not delta.isascii():
            delta = wire.fix_str(delta, self._proc._fixes)
        method = self.part_kind + "_delta"
        args = (
            self._checked(method, f"{self.part_kind} text", {**params, "delta": delta})
            if params
            else {"delta": delta}
        )  # every argument checked before the text is counted
        total = self.charged(len(delta))
        self._emit(method, args)
        self.chars = total

    def part_phase(self, name: str, /, **params: Any) -> None:
        """Another transition of the open part, such as ``annotate``."""
        self._proc._require_open(self)
        if self.part_kind is None:
            raise ProcessorError(f"{self.type}: no open part for {name!r}")
        transitions = self._part_transitions(self.part_kind)
        if not isinstance(name, str) or name not in transitions or name == "open":
            others = ", ".join(t for t in transitions if t != "open")
            raise ProcessorError(
                f"{self.type}: part {self.part_kind} has no phase {name!r} (phases: {others};"
                " open a part with part())"
            )
        if name == "delta":
            if "delta" not in params:
                sig = wire.signature(self.emitter.__class__, f"{self.part_kind}_delta")
                raise ProcessorError(
                    f"{self.type}: part_phase('delta'): missing required parameter 'delta'"
                    f" (accepted: {wire.accepted(sig)})"
                )
            rest = dict(params)
            self.text(rest.pop("delta"), **rest)
        elif name == "done":
            if params:
                self._checked(f"{self.part_kind}_done", "part_phase('done')", params)
            self.close_part()
        else:
            self._call(f"{self.part_kind}_{name}", f"part_phase({name!r})", **params)

    def delta(self, delta: str) -> None:
        """A delta for the item's own accumulator (arguments, code, input...)."""
        if self.table["delta"] is None:
            raise ProcessorError(f"{self.type} takes no item-level deltas")
        self._proc._require_open(self)
        delta = self._delta_text(delta, "delta")
        total = self.charged(len(delta))
        self._emit("delta", {"delta": delta})
        self.chars = total

    def charged(self, chars: int) -> int:
        """The item's character count with ``chars`` more, checked against
        ``Limits.max_item_text_chars``; the caller stores it once the delta is taken.

        Over the limit the processor's limit handling runs (see
        ``StreamProcessor.over_limit``).  A delta the emitter refuses is not counted.
        """
        total = self.chars + chars
        if total > self._proc.max_item_chars:
            self._proc.over_limit(
                "max_item_text_chars",
                f"{self.type} {self.item_id}: text of {total} characters",
            )
        return total

    def phase(self, name: str, /, **params: Any) -> None:
        """Any named transition of the item, e.g. ``searching`` or ``partial_image``.

        A closing transition (``done``, ``incomplete``, ``fail``) is ``close()``.
        """
        if not isinstance(name, str) or name not in self.table["transitions"] or name == "open":
            phases = ", ".join(t for t in self.table["transitions"] if t != "open")
            raise ProcessorError(f"{self.type}: no phase {name!r} (phases: {phases})")
        if name in CLOSING_STATUS:
            self.close(CLOSING_STATUS[name], **params)
        else:
            self._call(name, f"phase({name!r})", **params)

    def close(self, status: str | None = None, /, **params: Any) -> None:
        """Close with a terminal status, walking the machine to its closing transition.

        ``status`` (``completed`` by default) may also be given by keyword.
        """
        if status is None:
            status = params.pop("status", "completed")
        goal = TERMINAL_TRANSITION.get(status) if isinstance(status, str) else None
        if goal is None or goal not in self.table["transitions"]:
            can = [s for s, g in TERMINAL_TRANSITION.items() if g in self.table["transitions"]]
            raise ProcessorError(
                f"{self.type} cannot close as {status!r} (statuses: {', '.join(can)})"
            )
        if self.closed:
            raise ProcessorError(f"{self.type} {self.item_id} is already closed")
        self._proc._require_open(self)
        checked = self._checked(goal, f"close({status!r}), transition {goal!r}", params)
        path = _path_to(self.table, self.emitter.state, goal)
        if path is None:
            raise TransitionError(self.type, goal, self.emitter.state, ())
        if goal == "done":
            self.close_part()
        for name in path:
            self._emit(name, {})
        self._emit(goal, checked)
        self.part_kind = None
        if getattr(self.emitter, "status", None) == "incomplete":
            self._proc._incomplete.append(self.item_id)
        if self._proc.current is self:
            self._proc.current = None


class StreamProcessor:
    """Produces one complete Responses event stream.

    Every method appends its events to ``out``; ``drain()`` hands them over.
    """

    def __init__(
        self,
        dialect: Dialect | str = "openai",
        *,
        request: Mapping[str, Any] | None = None,
        model: str | None = None,
        response_id: str | None = None,
        created_at: int | None = None,
        ids: Callable[[str], str] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.dialect = get_dialect(dialect)
        if limits is not None and not isinstance(limits, Limits):
            raise ProcessorError(f"limits must be a Limits, got {limits!r:.80}")
        self.limits = limits or DEFAULT_LIMITS
        self.max_item_chars = self.limits.max_item_text_chars or sys.maxsize
        self.max_items = self.limits.max_output_items or sys.maxsize
        # Over a limit, end the stream (error, then response.failed) before raising
        # LimitExceeded; a converter with buffers of its own to flush first turns this off.
        self.fail_on_limit = True
        _check_envelope_args(request, model, response_id, created_at, ids)
        fields = {"model": model} if model else {}
        self.response = self.dialect.emitter(
            id=response_id, created_at=created_at, request=dict(request or {}), ids=ids, **fields
        )
        try:  # what request and arguments put in the Response, against the dialect's model
            snapshot = msgspec.to_builtins(self.response.snapshot())
            msgspec.convert(snapshot, type=self.dialect.models.Response, strict=True)
            msgspec.json.encode(snapshot)
        except (msgspec.ValidationError, TypeError, ValueError) as exc:
            raise ProcessorError(f"the Response this request makes is invalid: {exc}") from None
        self._shapes = wire.SHAPES.get(self.dialect.name, {})
        self._fixes = wire.Fixes()
        self._item_ids: set[str] = set()
        self._incomplete: list[str] = []  # items closed incomplete: the response cannot complete
        self.out: list[ResponsesEvent] = []
        self.current: ItemHandle | None = None
        self.started = False
        self.ended = False
        self._encoder: SSEEncoder | None = None  # drain_sse's, made on first use
        self._tail_sent = False

    # -- envelope -----------------------------------------------------------
    def start(self) -> None:
        if self.started:
            raise ProcessorError("the stream has already started")
        self.started = True
        if self.response.fields.get("background") is True:
            # as OpenAI starts a background response: created queued, queued, then running
            self.out += self.response.created(status="queued") + self.response.queued()
        else:
            self.out += self.response.created()
        self.out += self.response.in_progress()

    @property
    def replaced_surrogates(self) -> int:
        """How many lone surrogates in strings given so far were replaced with U+FFFD."""
        return self._fixes.surrogates

    def _require_live(self) -> None:
        if self.ended:
            raise ProcessorError("the stream has ended; nothing more can be emitted")

    def _ensure_live(self) -> None:
        self._require_live()
        if not self.started:
            self.start()

    def _require_open(self, handle: ItemHandle) -> None:
        if self.ended:
            raise ProcessorError("the stream has ended; nothing more can be emitted")
        if handle.closed:
            raise ProcessorError(f"{handle.type} {handle.item_id} is already closed")

    def over_limit(self, limit: str, what: str) -> NoReturn:
        """Raise LimitExceeded for ``limit``, first ending the stream if ``fail_on_limit``."""
        exc = LimitExceeded(limit, getattr(self.limits, limit), what)
        if self.fail_on_limit and not self.ended:
            self.fail(str(exc), code=LIMIT_EXCEEDED)
        raise exc

    def reserve_items(self, count: int) -> None:
        """Check that ``count`` more items fit in ``Limits.max_output_items``."""
        if len(self.response.output) + count > self.max_items:
            self.over_limit("max_output_items", f"{len(self.response.output) + count} output items")

    def open(self, item_type: str, **fields: Any) -> ItemHandle:
        """Open an item of any spec'd type; the item that was open is completed first."""
        self._require_live()
        self.reserve_items(1)
        cls = self.dialect.item_emitters.get(item_type) if isinstance(item_type, str) else None
        if cls is None:
            raise ProcessorError(
                f"unknown item type {item_type!r} (known: {', '.join(sorted(self.dialect.item_emitters))})"
            )
        checked = _check_params(self, item_type, cls, "__init__", "open", fields)
        item_id = checked.get("id")
        if item_id is not None and item_id in self._item_ids:
            raise ProcessorError(
                f"{item_type}: open: id {item_id!r} is already used in this response"
            )
        self._ensure_live()
        emitter = cls(self.response, **checked)
        if not isinstance(emitter.item_id, str) or emitter.item_id in self._item_ids:
            raise ProcessorError(
                f"{item_type}: open: the ids function gave {emitter.item_id!r}, not a new str id"
            )
        self.close_current("completed")
        handle = ItemHandle(self, item_type, emitter)
        self.out += emitter.open()
        self._item_ids.add(emitter.item_id)
        self.current = handle
        return handle

    def close_current(self, status: str = "completed", **params: Any) -> None:
        if self.current is not None and not self.current.closed:
            self.current.close(status, **params)
        self.current = None

    def finish(self, usage: Mapping[str, Any] | None = None) -> None:
        """Complete the open item and end with ``response.completed``.

        A completed response cannot hold an item closed ``incomplete``: once one
        was, this ends with ``response.incomplete`` (reason ``max_output_tokens``)
        instead, as ``truncate()`` would.
        """
        self._require_live()
        if self._incomplete:
            self.truncate("max_output_tokens", usage)
            return
        terminal = self._usage(usage)  # checked before anything changes
        self._ensure_live()
        self.close_current("completed")
        self.ended = True
        self.out += self.response.completed(**terminal)

    def truncate(self, reason: str, usage: Mapping[str, Any] | None = None) -> None:
        """Close the open item as incomplete and end with ``response.incomplete``."""
        if not isinstance(reason, str) or reason not in INCOMPLETE_REASONS:
            raise ProcessorError(
                f"incomplete reason must be one of {INCOMPLETE_REASONS}, got {reason!r:.80}"
            )
        self._require_live()
        terminal = self._usage(usage)  # checked before anything changes
        self._ensure_live()
        self.close_current("incomplete")
        self.ended = True
        self.out += self.response.incomplete(reason=reason, **terminal)

    def fail(
        self, message: str, code: str = "server_error", usage: Mapping[str, Any] | None = None
    ) -> None:
        """Close the open item as incomplete, then ``error`` and ``response.failed``.

        Once the stream has ended this does nothing. Arguments strict clients would
        reject raise ProcessorError, before anything changes.
        """
        if self.ended:
            return
        for name, value in (("message", message), ("code", code)):
            if type(value) is not str:
                raise ProcessorError(f"fail: {name} must be a str, got {value!r:.80}")
        message = wire.fix_str(message, self._fixes)
        code = wire.fix_str(code, self._fixes)
        terminal = self._usage(usage)
        if not self.started:
            self.start()
        self.close_current("incomplete")
        self.ended = True
        self.out += self.response.error(message=message, code=code)
        failed_code = code if code in RESPONSE_ERROR_CODES else "server_error"
        self.out += self.response.failed(message=message, code=failed_code, **terminal)

    def _usage(self, usage: Mapping[str, Any] | None) -> dict[str, Any]:
        """The terminal event's usage argument, or ProcessorError for junk usage."""
        if usage is None:
            return {}
        _check_usage(usage, "usage")
        try:
            return {"usage": msgspec.convert(normalize_usage(usage), self.dialect.models.Usage)}
        except (msgspec.ValidationError, TypeError, ValueError, AttributeError) as exc:
            raise ProcessorError(f"usage: {exc}") from None

    def drain(self) -> list[ResponsesEvent]:
        """The events produced since the last drain, in order."""
        out, self.out = self.out, []
        return out

    def drain_sse(self) -> list[bytes]:
        """``drain()`` as SSE frames, one per event, in the dialect's framing.

        Once the stream has ended, the dialect's closing frame (``data: [DONE]`` where it
        has one) follows the last event, once.
        """
        enc = self._encoder
        if enc is None:
            enc = self._encoder = _shared_encoder(self.dialect)
        out, self.out = self.out, []
        frames = [enc.encode(ev) for ev in out]
        if self.ended and not self._tail_sent:
            self._tail_sent = True
            tail = enc.close()
            if tail:
                frames.append(tail)
        return frames
