"""The stream processor: a response whose items are driven through their state machines.

It works for every spec'd item type from the generated tables alone: it
opens items, routes deltas and phases to their transitions, finishes an item
by walking its machine to ``done``, and guarantees the envelope: created and
in_progress first, one item open at a time, and exactly one terminal event.
"""

from __future__ import annotations

import importlib
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from .convert import normalize_usage
from .dialect import Dialect
from .errors import TransitionError
from .sse import SSEEncoder

INCOMPLETE_REASONS = ("max_output_tokens", "content_filter")
TERMINAL_TRANSITION = {"completed": "done", "incomplete": "incomplete", "failed": "fail"}
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


class ProcessorError(RuntimeError):
    """A misuse of the direct API, such as a delta for an item that is not open."""


def get_dialect(dialect: Dialect | str) -> Dialect:
    """A dialect object, by object or by name."""
    if isinstance(dialect, Dialect):
        return dialect
    package = importlib.import_module(__name__.rsplit(".", 2)[0])
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


class ItemHandle:
    """One item of a processed stream, driven by transition names from its spec."""

    def __init__(self, proc: StreamProcessor, item_type: str, emitter: Any) -> None:
        self._proc = proc
        self.type = item_type
        self.emitter = emitter
        self.table: Mapping[str, Any] = proc.dialect.tables.ITEMS[item_type]
        self.part_kind: str | None = None

    @property
    def item_id(self) -> str:
        return str(self.emitter.item_id)

    @property
    def output_index(self) -> int:
        return int(self.emitter.output_index)

    @property
    def closed(self) -> bool:
        return bool(self.emitter.closed)

    def _call(self, method: str, **params: Any) -> None:
        self._proc._require_open(self)
        fn: Callable[..., list[Any]] | None = getattr(self.emitter, method, None)
        if fn is None:
            raise ProcessorError(f"{self.type}: no transition {method!r}")
        self._proc.out.extend(fn(**params))

    def part(self, kind: str) -> None:
        """Open a part of ``kind``, closing the part that is open, if any."""
        if not any(kind in kinds for kinds in self.table["slots"].values()):
            raise ProcessorError(f"{self.type} has no part {kind!r}")
        self.close_part()
        self._call(f"{kind}_open")
        self.part_kind = kind

    def close_part(self) -> None:
        if self.part_kind is not None:
            kind, self.part_kind = self.part_kind, None
            self._call(f"{kind}_done")

    def text(self, delta: str, **params: Any) -> None:
        """A delta for the open part."""
        self._proc._require_open(self)
        if self.part_kind is None:
            raise ProcessorError(f"{self.type}: no open part for a text delta")
        self._call(f"{self.part_kind}_delta", delta=delta, **params)

    def part_phase(self, name: str, **params: Any) -> None:
        """Another transition of the open part, such as ``annotate``."""
        self._proc._require_open(self)
        if self.part_kind is None:
            raise ProcessorError(f"{self.type}: no open part for {name!r}")
        self._call(f"{self.part_kind}_{name}", **params)

    def delta(self, delta: str) -> None:
        """A delta for the item's own accumulator (arguments, code, input...)."""
        if self.table["delta"] is None:
            raise ProcessorError(f"{self.type} takes no item-level deltas")
        self._call("delta", delta=delta)

    def phase(self, name: str, **params: Any) -> None:
        """Any named transition of the item, e.g. ``searching`` or ``partial_image``."""
        if name not in self.table["transitions"] or name in ("open",):
            raise ProcessorError(f"{self.type}: no phase {name!r}")
        self._call(name, **params)

    def close(self, status: str = "completed", **params: Any) -> None:
        """Close with a terminal status, walking the machine to its closing transition."""
        goal = TERMINAL_TRANSITION.get(status)
        if goal is None or goal not in self.table["transitions"]:
            raise ProcessorError(f"{self.type} cannot close as {status!r}")
        if self.closed:
            raise ProcessorError(f"{self.type} {self.item_id} is already closed")
        if goal == "done":
            self.close_part()
        path = _path_to(self.table, self.emitter.state, goal)
        if path is None:
            raise TransitionError(self.type, goal, self.emitter.state, ())
        for name in path:
            self._call(name)
        self._call(goal, **params)
        self.part_kind = None
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
    ) -> None:
        self.dialect = get_dialect(dialect)
        fields = {"model": model} if model else {}
        self.response = self.dialect.emitter(
            id=response_id, created_at=created_at, request=dict(request or {}), ids=ids, **fields
        )
        self.out: list[Any] = []
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
        self.out += self.response.created() + self.response.in_progress()

    def _ensure_live(self) -> None:
        if self.ended:
            raise ProcessorError("the stream has ended; nothing more can be emitted")
        if not self.started:
            self.start()

    def _require_open(self, handle: ItemHandle) -> None:
        if self.ended:
            raise ProcessorError("the stream has ended; nothing more can be emitted")
        if handle.closed:
            raise ProcessorError(f"{handle.type} {handle.item_id} is already closed")

    def open(self, item_type: str, **fields: Any) -> ItemHandle:
        """Open an item of any spec'd type; the item that was open is completed first."""
        self._ensure_live()
        cls = self.dialect.item_emitters.get(item_type)
        if cls is None:
            raise ProcessorError(f"unknown item type {item_type!r}")
        try:
            emitter = cls(self.response, **fields)
        except TypeError as exc:
            raise ProcessorError(f"{item_type}: {exc}") from None
        self.close_current("completed")
        handle = ItemHandle(self, item_type, emitter)
        self.out += emitter.open()
        self.current = handle
        return handle

    def close_current(self, status: str = "completed", **params: Any) -> None:
        if self.current is not None and not self.current.closed:
            self.current.close(status, **params)
        self.current = None

    def finish(self, usage: Mapping[str, Any] | None = None) -> None:
        """Complete the open item and end with ``response.completed``."""
        self._ensure_live()
        self.close_current("completed")
        self.ended = True
        self.out += self.response.completed(**self._usage(usage))

    def truncate(self, reason: str, usage: Mapping[str, Any] | None = None) -> None:
        """Close the open item as incomplete and end with ``response.incomplete``."""
        if reason not in INCOMPLETE_REASONS:
            raise ProcessorError(f"incomplete reason must be one of {INCOMPLETE_REASONS}")
        self._ensure_live()
        self.close_current("incomplete")
        self.ended = True
        self.out += self.response.incomplete(reason=reason, **self._usage(usage))

    def fail(
        self, message: str, code: str = "server_error", usage: Mapping[str, Any] | None = None
    ) -> None:
        """Close the open item as incomplete, then ``error`` and ``response.failed``."""
        if self.ended:
            return
        if not self.started:
            self.start()
        self.close_current("incomplete")
        self.ended = True
        self.out += self.response.error(message=message, code=code)
        failed_code = code if code in RESPONSE_ERROR_CODES else "server_error"
        self.out += self.response.failed(message=message, code=failed_code, **self._usage(usage))

    def _usage(self, usage: Mapping[str, Any] | None) -> dict[str, Any]:
        if usage is None:
            return {}
        return {"usage": msgspec.convert(normalize_usage(usage), self.dialect.models.Usage)}

    def drain(self) -> list[Any]:
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
