"""Fold a Responses event stream into a snapshot of its Response, driven by the tables.

``ResponseAccumulator`` takes event payloads (plain dicts, as parsed from the
SSE ``data:`` JSON) one at a time and keeps the Response they describe so far.
Nothing here is written per event type; the generated tables say what each
event means:

* the envelope machine (``ENVELOPE``) orders the lifecycle events; those
  carrying a ``response`` replace the snapshot, and the ones that reach a
  final state are terminal;
* the event that opens an item (the first one emitted from an item machine's
  initial state) puts its ``item`` at ``output[output_index]``; the event that
  closes it (the last one emitted on the way into a final state) replaces it;
* the events that open and close parts do the same inside the item's slot
  list (the item field that holds the slot taking that part kind), addressed
  by the part kind's index key (``content_index`` / ``summary_index``);
* an accumulator's ``deltas`` append their payload field to the item or part
  field that holds the accumulator (``text``: string concatenation, ``list``:
  extend with a list, append anything else); its ``totals`` set that field;
* the spec's ``status`` actions are not in the tables, so an item's status is
  set from a phase event only where the tables show it: the event's transition
  moves the item into a non-final state whose name is one of the item's statuses
  (``searching``, ``generating``, ``interpreting``, ``calling``).  Statuses set
  by transitions into a final state (``completed``, ``failed``, ...) arrive with
  the item-closing event instead.

Accumulators that no field holds (an image call's ``partial_images``) and the
events of thin items (a shell call's commands) are checked but change nothing.

The accumulator is a tolerant consumer, like the official SDK's
``ResponseStreamState``: an event type the dialect does not know passes
through (it changes nothing); an item of a type the spec does not know is
taken from its opening event and replaced by its closing one as sent, and the
events in between change nothing; a stream may skip ``response.in_progress``;
``output_index`` may have gaps (items are kept in the order they open); an
opening event without its item is ignored; an ``item_id`` on an item's events
and the response id on lifecycle events are not checked (a gateway that hands
out fresh ids on every event is followed by ``output_index``).  What stays an
``AccumulateError`` is what no reading can fold: events before the response
is created or after the terminal event, sequence numbers that go back, events
for items or parts that were never opened or are already closed, indexes out
of order, payload fields of the wrong type, a closing item of another type;
and what contradicts itself: an item that closes
``in_progress`` (but a ``function_call`` made by a program, which stays
``in_progress`` until the program ends), a terminal output (not failed) that lacks an item
that was streamed or puts another type in its place.  Items still open when the
response completes are a repair, as in the SDK: the terminal response's own output is
taken (OpenAI leaves ``mcp_list_tools`` items unclosed), and a done text (a ``*.done``
event, a closing part or item) that differs from the deltas streamed for it is taken, as
the SDK takes it.  Each repair is a warning in ``warnings`` and on this module's logger
(``check_texts=False``, or sequence numbers that skip, which say events were lost, let
done texts stand without one); without an output to take, unclosed items are an error.
Opaque fields (``encrypted_content``, ``fingerprint``) are never compared, and a
surrogate pair split over two deltas counts as the character it encodes.

A stream resumed with ``starting_after`` begins past sequence_number 0 without
``response.created``.  When its first event carries the response (``response.queued``,
``response.in_progress``) it is folded from there, with a warning; otherwise the events
before it made a Response it lacks, an ``AccumulateError`` that says so.
``ResponseAccumulator.resume`` goes on from the earlier accumulator or a snapshot of it,
skipping the events it already folded, as the SDK does.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeGuard

from ..core.dialect import Dialect
from ..core.errors import MissingArgument, ResponsesStreamError
from ..core.processor import TERMINAL_TRANSITION, get_dialect
from ..core.sse_parse import has_surrogate, join_surrogates

_log = logging.getLogger(__name__)

__all__ = ["AccumulateError", "ResponseAccumulator"]

# (holder field, payload field, accumulator kind), for deltas and for totals
Delta = tuple[str, str, str]
Total = tuple[str, str, str]
# where a text was streamed: (part index key or None for the item, part index, holder field)
Place = tuple[str | None, int, str]
OPAQUE_FIELDS = frozenset({"encrypted_content", "fingerprint"})


class AccumulateError(ResponsesStreamError, ValueError):
    """The stream cannot be folded into a Response: it breaks the protocol."""


def _transitions_from(table: Mapping[str, Any], states: Iterable[str]) -> list[dict[str, Any]]:
    return [table["transitions"][name] for s in states for name in table["states"][s]]


def _opening(table: Mapping[str, Any]) -> set[str]:
    """The first event emitted from a machine's initial state."""
    return {tr["emits"][0] for tr in _transitions_from(table, [table["initial"]]) if tr["emits"]}


def _closing(table: Mapping[str, Any]) -> set[str]:
    """The last event emitted by each transition into a final state."""
    finals = set(table["finals"])
    return {
        tr["emits"][-1]
        for tr in table["transitions"].values()
        if tr["to"] in finals and tr["emits"]
    }


def _emits(table: Mapping[str, Any]) -> set[str]:
    return {e for tr in table["transitions"].values() for e in tr["emits"]}


def _union(sets: Iterable[set[str]]) -> set[str]:
    out: set[str] = set()
    for s in sets:
        out |= s
    return out


def _folds(
    table: Mapping[str, Any], holders: Mapping[str, str]
) -> tuple[dict[str, list[Delta]], dict[str, list[Total]]]:
    """Per event: the deltas and totals it folds into the fields in ``holders`` (acc -> field)."""
    deltas: dict[str, list[Delta]] = {}
    totals: dict[str, list[Total]] = {}
    for acc, spec in table["accumulators"].items():
        held = holders.get(acc)
        if held is None:
            continue  # no field of the item or part holds it
        for event, pfield in spec["deltas"].items():
            deltas.setdefault(event, []).append((held, pfield, spec["kind"]))
        for event, pfield in spec["totals"].items():
            totals.setdefault(event, []).append((held, pfield, spec["kind"]))
    return deltas, totals


class _ItemPlan:
    """What each event means for one item type."""

    def __init__(self, table: Mapping[str, Any], parts: Mapping[str, Any]) -> None:
        fields: Mapping[str, Mapping[str, Any]] = table["fields"]
        holders = {f["acc"]: name for name, f in fields.items() if "acc" in f}
        self.deltas, self.totals = _folds(table, holders)
        self.events = _emits(table)
        slot_fields = {f["slot"]: name for name, f in fields.items() if "slot" in f}
        # part kind -> the item field whose list holds it
        self.slots: dict[str, str] = {
            kind: slot_fields.get(slot, slot)
            for slot, kinds in table["slots"].items()
            for kind in kinds
            if kind in parts
        }
        statuses = set(table["statuses"])
        finals = set(table["finals"])
        targets: dict[str, set[str]] = {}
        for tr in table["transitions"].values():
            if tr["to"] in finals:
                continue  # output_item.done carries the final status
            for event in tr["emits"]:
                # a self-loop (a partial image while generating) leaves the status as it is
                targets.setdefault(event, set()).add("" if tr["to"] in tr["from"] else tr["to"])
        # event -> the status its transition sets, where the tables show it
        self.status: dict[str, str] = {}
        for event, tos in targets.items():
            if len(tos) == 1:
                (to,) = tos
                if to in statuses and to not in finals:
                    self.status[event] = to


class _PartPlan:
    def __init__(self, table: Mapping[str, Any]) -> None:
        fields: Mapping[str, Mapping[str, Any]] | None = table.get("fields")
        if fields is None:  # tables without part fields: a part accumulator is its field
            holders = {acc: acc for acc in table["accumulators"]}
        else:
            holders = {f["acc"]: name for name, f in fields.items() if "acc" in f}
        self.deltas, self.totals = _folds(table, holders)
        self.events = _emits(table)
        self.index: str = table["index"]


class _Plan:
    """The tables of one dialect, indexed by event."""

    def __init__(self, dialect: Dialect) -> None:
        t = dialect.tables
        self.wire = dialect.wire_types
        self.item_kinds = {wire: spec for spec, wire in dialect.item_types.items()}
        self.part_kinds: dict[str, str] = {p["wire"]: k for k, p in t.PARTS.items()}
        self.events: Mapping[str, Mapping[str, Any]] = t.EVENTS
        env: Mapping[str, Any] = t.ENVELOPE
        self.envelope = env
        self.items_in: str | None = env.get("items_in")
        self.envelope_events = _emits(env)
        self.items = {name: _ItemPlan(table, t.PARTS) for name, table in t.ITEMS.items()}
        self.parts = {name: _PartPlan(table) for name, table in t.PARTS.items()}
        self.item_open = _union(_opening(x) for x in t.ITEMS.values())
        self.item_close = _union(_closing(x) for x in t.ITEMS.values())
        self.part_open = _union(_opening(x) for x in t.PARTS.values())
        self.part_close = _union(_closing(x) for x in t.PARTS.values())
        # event -> the part kinds whose machines emit it
        self.part_events: dict[str, set[str]] = {}
        for kind, part in self.parts.items():
            for event in part.events:
                self.part_events.setdefault(event, set()).add(kind)

    def field(self, event: str) -> str:
        """The payload field carrying the item or part of an opening or closing event."""
        fields = self.events[event]["fields"]
        if len(fields) != 1:
            raise AccumulateError(f"{event}: expected one object field, the tables list {fields}")
        return str(fields[0])


def _text(value: Any) -> Any:
    """A text as compared with its deltas: surrogate pairs split over deltas joined."""
    return join_surrogates(value) if isinstance(value, str) else value


def _fold(
    target: dict[str, Any],
    deltas: Iterable[Delta],
    totals: Iterable[Total],
    payload: Mapping[str, Any],
    wire: str,
    streamed: set[str],
    warn: Callable[[str], None] | None = None,
) -> None:
    """Apply an event's deltas and totals to an item or part (all checked before any is applied).

    ``streamed`` holds the target's text fields that deltas have appended to; a total for
    one of them that differs from the text the deltas made is taken, as the SDK takes it,
    and ``warn`` is told (None: not compared); a delta adds its field to ``streamed``.
    """
    deltas = [d for d in deltas if d[1] in payload or d[2] == "text"]
    for held, pfield, kind in totals:
        if warn and kind == "text" and held in streamed and pfield in payload:
            if _text(payload[pfield]) != _text(target.get(held)):
                warn(f"{wire}: {pfield!r} differs from the text its deltas streamed; taken")
    for held, pfield, kind in deltas:
        if pfield not in payload:
            raise AccumulateError(f"{wire}: missing {pfield!r}")
        current = target.get(held)
        if kind == "text":
            if not isinstance(payload[pfield], str):
                raise AccumulateError(f"{wire}: {pfield!r} must be a string")
            if not isinstance(current, str | None):
                raise AccumulateError(f"{wire}: the {held!r} it appends to is not a string")
        elif not isinstance(current, list | None):
            raise AccumulateError(f"{wire}: the {held!r} it appends to is not a list")
    for held, pfield, kind in deltas:
        value = payload[pfield]
        if kind == "text":
            text = (target.get(held) or "") + value
            target[held] = join_surrogates(text) if has_surrogate(value) else text
            streamed.add(held)
        else:
            if target.get(held) is None:
                target[held] = []
            if value != []:
                target[held].extend(copy.deepcopy(value if isinstance(value, list) else [value]))
    for held, pfield, _ in totals:
        if pfield in payload:
            target[held] = copy.deepcopy(payload[pfield])


def _number(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _index(payload: Mapping[str, Any], key: str, wire: str) -> int:
    value = payload.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise AccumulateError(f"{wire}: {key!r} must be a non-negative integer, got {value!r}")
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _object(payload: Mapping[str, Any], key: str, wire: str) -> dict[str, Any]:
    value = payload.get(key)
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise AccumulateError(f"{wire}: {key!r} must be an object with a string 'type'")
    return copy.deepcopy(dict(value))


class ResponseAccumulator:
    """Folds event payloads into the Response they describe, one event at a time.

    ``feed`` returns the snapshot after each event.  The snapshot is one live
    dict, updated in place by later events (like the SDK's), so deep-copy it to
    keep a version.  Payloads are never modified; what the snapshot takes from
    them is copied.  After an ``AccumulateError`` the event had no effect, but
    the stream is broken: the snapshot no longer describes it.
    """

    def __init__(self, dialect: Dialect | str = "openai", *, check_texts: bool = True) -> None:
        self.dialect = get_dialect(dialect)
        self.check_texts = check_texts
        self._plan = _Plan(self.dialect)
        self._state: str = self._plan.envelope["initial"]
        self._snapshot: dict[str, Any] = {}
        self._output: list[dict[str, Any]] = []
        self._types: list[str | None] = []  # spec item type per output position
        self._pos: dict[int, int] = {}  # output_index -> position in the output list
        self._closed: set[int] = set()  # closed output positions
        self._closed_parts: set[tuple[int, str, int]] = set()  # (output position, key, index)
        # output position -> where deltas streamed text -> the slot of that part (None: item)
        self._streamed: dict[int, dict[Place, str | None]] = {}
        self._final: dict[str, Any] | None = None
        self._terminal: str | None = None
        self._last_seq: int | None = None
        self.warnings: list[str] = []  # each repair made to fold the stream, in order
        self._lost = False  # sequence numbers skipped: deltas may be missing
        self._after: int | None = None  # resumed: events numbered up to here are folded
        # resumed from a snapshot: items taken to be open that no event has touched since
        self._assumed_open: set[int] = set()

    @classmethod
    def resume(
        cls,
        earlier: ResponseAccumulator | Mapping[str, Any],
        *,
        after: int | None = None,
        dialect: Dialect | str = "openai",
        check_texts: bool = True,
    ) -> ResponseAccumulator:
        """An accumulator that goes on from an earlier point of a stream, for a stream
        resumed with ``starting_after``.

        ``earlier`` is the accumulator that read the stream so far (copied; the copy
        goes on), or a Response snapshot as of sequence_number ``after`` (a ``snapshot``
        kept from an earlier read, or the Response retrieved while it ran).  From a
        snapshot, the last item is open and so is an earlier one whose status is not a
        final one (an item that never gets another event is not reported unclosed), and so is the last part of each of its part lists.  Events
        numbered up to ``after`` (by default, the last one ``earlier`` read) are already
        folded and are skipped, as the SDK skips them.
        """
        if isinstance(earlier, ResponseAccumulator):
            acc = cls(earlier.dialect, check_texts=earlier.check_texts)
            state = {k: v for k, v in vars(earlier).items() if k not in ("dialect", "_plan")}
            vars(acc).update(copy.deepcopy(state))  # one copy: the output list stays shared
            acc._after = earlier._last_seq if after is None else after
            return acc
        if after is None:
            raise MissingArgument(
                "resume from a snapshot needs after=, the sequence_number it reflects"
            )
        acc = cls(dialect, check_texts=check_texts)
        acc._adopt(earlier, after)
        return acc

    def _adopt(self, snapshot: Mapping[str, Any], after: int) -> None:
        """Take a Response snapshot as the state after event number ``after``."""
        if not isinstance(snapshot, Mapping) or not isinstance(snapshot.get("output"), list):
            raise AccumulateError("a snapshot must be a Response object with an output list")
        status = snapshot.get("status")
        if status not in ("queued", "in_progress", None):
            raise AccumulateError(f"the snapshot is {status!r}: nothing follows its end")
        output = snapshot["output"]
        if not all(isinstance(i, Mapping) and isinstance(i.get("type"), str) for i in output):
            raise AccumulateError("the snapshot's output items must be objects with a type")
        self._snapshot = copy.deepcopy(dict(snapshot))
        self._output = self._snapshot["output"]
        self._types = [self._plan.item_kinds.get(i["type"]) for i in self._output]
        self._pos = {i: i for i in range(len(self._output))}
        last = len(self._output) - 1
        for at, item in enumerate(self._output):
            # the last item may still get events (OpenAI adds some items completed and
            # closes them later); an earlier one unless its status is a final one
            if at != last and item.get("status") in TERMINAL_TRANSITION:
                self._closed.add(at)
                continue
            self._assumed_open.add(at)
            spec = self._types[at]
            if spec is None:
                continue
            for slot in set(self._plan.items[spec].slots.values()):
                parts = item.get(slot)
                key = self._slot_key(spec, slot)
                if isinstance(parts, list) and key is not None:
                    self._closed_parts.update((at, key, n) for n in range(len(parts) - 1))
        self._state = self._created_state()
        self._last_seq = after
        self._after = after

    def _slot_key(self, spec: str, slot: str) -> str | None:
        """The index key that addresses the parts in an item's ``slot``."""
        ip = self._plan.items[spec]
        keys = {self._plan.parts[k].index for k, held in ip.slots.items() if held == slot}
        return str(keys.pop()) if len(keys) == 1 else None

    def _created_state(self) -> str:
        """The envelope state ``response.created`` leads to."""
        env = self._plan.envelope
        return next(
            str(target)
            for tr, target in env["states"][env["initial"]].items()
            if "response.created" in env["transitions"][tr]["emits"]
        )

    # -- results ----------------------------------------------------------------
    @property
    def snapshot(self) -> dict[str, Any]:
        """The Response so far ({} until the first lifecycle event)."""
        return self._snapshot

    @property
    def final(self) -> dict[str, Any] | None:
        """The terminal event's response as sent (None until it arrives).

        Like the SDK's final response, a terminal response without ``output``
        gets the accumulated output.
        """
        return self._final

    @property
    def done(self) -> bool:
        """Whether the terminal event has arrived."""
        return self._final is not None

    # -- input ------------------------------------------------------------------
    def feed_all(self, payloads: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Feed every payload; the snapshot after the last."""
        for payload in payloads:
            self.feed(payload)
        return self._snapshot

    def feed(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Fold one event payload; the snapshot after it.

        Raises ``AccumulateError``, and nothing else, on any JSON value.
        """
        try:
            return self._feed(payload)
        except RecursionError:
            raise AccumulateError("the payload is nested too deeply to fold") from None

    def _feed(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(payload, Mapping) or not isinstance(payload.get("type"), str):
            raise AccumulateError("an event must be a JSON object with a string 'type'")
        wire: str = payload["type"]
        if self._terminal is not None:
            raise AccumulateError(f"{wire} after the terminal event {self._terminal}")
        name = self._plan.wire.get(wire)
        seq = payload.get("sequence_number")
        if self._after is not None and _number(seq) and seq <= self._after:
            return self._snapshot  # folded already, before the stream was resumed
        if not self._snapshot and _number(seq) and seq > 0 and name != "response.created":
            self._resumed_without_snapshot(name, wire, seq, payload)
        if seq is not None:
            if not isinstance(seq, int) or isinstance(seq, bool):
                raise AccumulateError(f"{wire}: sequence_number must be an integer")
            if self._last_seq is not None and seq <= self._last_seq:
                raise AccumulateError(
                    f"{wire}: sequence_number {seq} does not follow {self._last_seq}"
                )
            if self._last_seq is not None and seq > self._last_seq + 1:
                self._lost = True
        if name is None:  # an event type the dialect does not know passes through
            if not self._snapshot:
                raise AccumulateError(f"{wire} before the response was created")
        elif name in self._plan.envelope_events:
            self._envelope(name, wire, payload)
        else:
            self._item_event(name, wire, payload)
        if seq is not None:
            self._last_seq = seq
        return self._snapshot

    def _resumed_without_snapshot(
        self, name: str | None, wire: str, seq: int, payload: Mapping[str, Any]
    ) -> None:
        """A first event numbered past 0: a resumed stream.  Its first event's response
        stands for what came before, or it cannot be folded alone."""
        fields = self._plan.events[name]["fields"] if name is not None else []
        if "response" in fields and isinstance(payload.get("response"), Mapping):
            self._state = self._created_state()
            if not self._moves(str(name)) and self._plan.items_in is not None:
                self._state = self._plan.items_in  # it ends a response that was running
            self._warn(
                f"{wire} (sequence_number {seq}) resumes a stream: "
                "folded from the response it carries"
            )
            return
        raise AccumulateError(
            f"{wire} (sequence_number {seq}) resumes a stream whose first {seq} events are "
            "not here, and the Response they made is missing: fold it with "
            f"ResponseAccumulator.resume(snapshot, after={seq - 1})"
        )

    @property
    def _checking(self) -> bool:
        """Whether done texts must match their deltas: asked for, and no event was lost."""
        return self.check_texts and not self._lost

    # -- envelope ---------------------------------------------------------------
    def _moves(self, name: str) -> list[str]:
        env = self._plan.envelope
        return [
            target
            for tr, target in env["states"][self._state].items()
            if name in env["transitions"][tr]["emits"]
        ]

    def _skip_to_items(self) -> bool:
        """Move from ``created`` to the state items go in, as if ``in_progress`` had come."""
        env = self._plan.envelope
        items_in = self._plan.items_in
        if items_in is None or self._state == env["initial"] or not self._snapshot:
            return False
        if items_in not in env["states"][self._state].values():
            return False
        self._state = items_in
        return True

    def _envelope(self, name: str, wire: str, payload: Mapping[str, Any]) -> None:
        env = self._plan.envelope
        moves = self._moves(name)
        if not moves and self._snapshot:  # a stream may skip response.in_progress
            before = self._state
            if self._skip_to_items():
                moves = self._moves(name)
                if not moves:
                    self._state = before
        if not moves:
            if self._state == env["initial"]:
                raise AccumulateError(f"{wire} before the response was created")
            raise AccumulateError(f"{wire} is not allowed while the response is {self._state!r}")
        target = moves[0]
        terminal = target in env["finals"]
        if "response" in self._plan.events[name]["fields"]:
            response = payload.get("response")
            if not isinstance(response, Mapping):
                raise AccumulateError(f"{wire}: 'response' must be an object")
            output = response.get("output")
            if output is not None and not isinstance(output, list):
                raise AccumulateError(f"{wire}: 'output' must be a list")
            new = copy.deepcopy(dict(response))
            if terminal:
                still_open = [
                    i
                    for i in range(len(self._output))
                    if i not in self._closed and i not in self._assumed_open
                ]
                if still_open and new.get("status") == "completed":
                    if output is None:
                        raise AccumulateError(
                            f"{wire}: output items {still_open} were never closed"
                        )
                    self._warn(
                        f"{wire}: output items {still_open} were never closed; "
                        "the response's own output is taken"
                    )
                if output is not None and new.get("status") != "failed":
                    # a failed response may leave out what it had streamed
                    self._check_terminal_output(wire, output)
                if output is None:
                    new["output"] = copy.deepcopy(self._output)
                self._final = new
                self._terminal = wire
            elif output:  # the server's output replaces what was accumulated
                if not all(isinstance(i, Mapping) for i in output):
                    raise AccumulateError(f"{wire}: output items must be objects")
                self._output = new["output"]
                self._types = [self._plan.item_kinds.get(str(i.get("type"))) for i in output]
                self._pos = {i: i for i in range(len(output))}
                self._streamed = {}
                self._closed = {i for i in self._closed if i < len(output)} | {
                    i for i, item in enumerate(output) if item.get("status") in TERMINAL_TRANSITION
                }
                self._closed_parts = {p for p in self._closed_parts if p[0] < len(output)}
            else:
                new["output"] = self._output
            self._snapshot = new
        elif not self._snapshot:
            raise AccumulateError(f"{wire}: the first event must carry the response")
        elif terminal:  # a terminal event without a response: keep what we have
            self._final = self._snapshot
            self._terminal = wire
        self._state = target

    @property
    def _warning(self) -> Callable[[str], None] | None:
        """Where a done text that differs from its deltas is reported (None: not compared)."""
        return self._warn if self._checking else None

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        _log.warning("%s", message)

    def _check_terminal_output(self, wire: str, output: list[Any]) -> None:
        """The terminal output holds every item streamed, each at its place, of its type."""
        if len(output) < len(self._output):
            raise AccumulateError(
                f"{wire}: the output has {len(output)} items, but {len(self._output)} were streamed"
            )
        for i, item in enumerate(self._output):
            final = output[i]
            if not isinstance(final, Mapping) or final.get("type") != item.get("type"):
                got = final.get("type") if isinstance(final, Mapping) else type(final).__name__
                raise AccumulateError(
                    f"{wire}: output[{i}] is {got!r}, but a {item.get('type')!r} was streamed there"
                )

    # -- items ------------------------------------------------------------------
    def _item_event(self, name: str, wire: str, payload: Mapping[str, Any]) -> None:
        plan = self._plan
        items_in = plan.items_in
        env = plan.envelope
        if items_in is not None and self._state != items_in:
            self._skip_to_items()  # a stream may skip response.in_progress
        if (items_in is not None and self._state != items_in) or (
            items_in is None and self._state == env["initial"]
        ):
            if self._state == env["initial"]:
                raise AccumulateError(f"{wire} before the response was created")
            raise AccumulateError(f"{wire} while the response is {self._state!r}, not {items_in!r}")
        output_index = _index(payload, "output_index", wire)
        if name in plan.item_open:
            self._open_item(name, wire, output_index, payload)
            return
        index, item = self._item(wire, output_index)
        if name in plan.item_close:
            self._close_item(name, wire, index, item, payload)
            return
        item_type = self._types[index]
        if item_type is None:
            return  # an item the spec does not know: its events pass through, as in the SDK
        ip = plan.items[item_type]
        kinds = plan.part_events.get(name, set()) & ip.slots.keys()
        if kinds:
            self._part_event(name, wire, index, item, item_type, kinds, payload)
            return
        if name not in ip.events:
            raise AccumulateError(f"{wire} does not apply to a {item.get('type')} item")
        places = self._streamed.setdefault(index, {})
        streamed = {held for (key, _, held) in places if key is None}
        deltas, totals = ip.deltas.get(name, ()), ip.totals.get(name, ())
        _fold(item, deltas, totals, payload, wire, streamed, self._warning)
        for held in streamed:
            places.setdefault((None, 0, held), None)
        status = ip.status.get(name)
        if status is not None:
            item["status"] = status

    def _item(self, wire: str, output_index: int) -> tuple[int, dict[str, Any]]:
        """The position and item of an output_index (item_id is not checked, as in the SDK)."""
        index = self._pos.get(output_index)
        if index is None:
            raise AccumulateError(f"{wire}: no output item at output_index {output_index}")
        if index in self._closed:
            raise AccumulateError(f"{wire}: output item {output_index} is already done")
        self._assumed_open.discard(index)
        return index, self._output[index]

    def _open_item(
        self, name: str, wire: str, output_index: int, payload: Mapping[str, Any]
    ) -> None:
        field = self._plan.field(name)
        if payload.get(field) is None:
            return  # an opening event without its item changes nothing, as in the SDK
        item = _object(payload, field, wire)
        following = max(self._pos, default=-1) + 1
        if output_index < following:
            raise AccumulateError(
                f"{wire}: output_index {output_index}, but the next item's index is {following}"
            )
        self._pos[output_index] = len(self._output)
        self._output.append(item)
        self._types.append(self._plan.item_kinds.get(item["type"]))

    def _close_item(
        self, name: str, wire: str, index: int, item: dict[str, Any], payload: Mapping[str, Any]
    ) -> None:
        done = _object(payload, self._plan.field(name), wire)
        # the type must match; the id may not (a gateway may hand out fresh ids on every event)
        if done["type"] != item.get("type"):
            raise AccumulateError(
                f"{wire}: {done['type']} {done.get('id')!r} does not match the "
                f"{item.get('type')} {item.get('id')!r} at output_index {index}"
            )
        if self._types[index] is not None and done.get("status") == "in_progress":
            caller = done.get("caller")
            if not (isinstance(caller, Mapping) and caller.get("type") == "program"):
                # only a call made by a program stays in_progress until the program ends
                raise AccumulateError(f"{wire}: {done['type']} {done.get('id')!r} is in_progress")
        self._check_streamed(wire, index, item, done)
        self._output[index] = done
        self._closed.add(index)

    def _check_streamed(
        self, wire: str, index: int, item: Mapping[str, Any], done: Mapping[str, Any]
    ) -> None:
        """Every text that deltas streamed into the item is the same in its closing item."""
        if not self._checking:
            return
        for (_key, at, held), slot in self._streamed.get(index, {}).items():
            if held in OPAQUE_FIELDS:
                continue
            if slot is None:
                want, got = item.get(held), done.get(held)
                where = repr(held)
            else:
                parts, final = item.get(slot), done.get(slot)
                where = f"{slot}[{at}].{held}"
                if not isinstance(final, list) or len(final) <= at:
                    raise AccumulateError(f"{wire}: the closing item lacks {where}, which streamed")
                if not isinstance(final[at], Mapping) or not isinstance(parts, list):
                    raise AccumulateError(f"{wire}: {where} is not an object")
                held_part = _mapping(parts[at]) if at < len(parts) else {}
                want, got = held_part.get(held), final[at].get(held)
            if _text(got) != _text(want):
                self._warn(f"{wire}: {where} differs from the text its deltas streamed; taken")

    # -- parts ------------------------------------------------------------------
    def _part_event(
        self,
        name: str,
        wire: str,
        index: int,
        item: dict[str, Any],
        item_type: str,
        kinds: set[str],
        payload: Mapping[str, Any],
    ) -> None:
        plan = self._plan
        ip = plan.items[item_type]
        keys = {plan.parts[k].index for k in kinds}
        if len(keys) != 1:
            raise AccumulateError(f"{wire}: the tables address its parts by {sorted(keys)}")
        (key,) = keys
        at = _index(payload, key, wire)
        if name in plan.part_open:
            part = _object(payload, plan.field(name), wire)
            kind = plan.part_kinds.get(part["type"])
            if kind not in kinds:
                raise AccumulateError(
                    f"{wire}: a {part['type']} part cannot go in a {item.get('type')}"
                )
            slot = ip.slots[kind]
            parts = item.get(slot)
            if parts is None:
                parts = item[slot] = []
            if not isinstance(parts, list):
                raise AccumulateError(f"{wire}: the item's {slot!r} is not a list")
            if at != len(parts):
                raise AccumulateError(f"{wire}: {key} {at}, but the next part's is {len(parts)}")
            parts.append(part)
            return
        slots = {ip.slots[k] for k in kinds}
        if len(slots) != 1:
            raise AccumulateError(f"{wire}: its parts may be in any of {sorted(slots)}")
        (slot,) = slots
        parts = item.get(slot)
        if not isinstance(parts, list):
            parts = []
        if at >= len(parts):
            raise AccumulateError(
                f"{wire}: {key} {at} is out of range (the item has {len(parts)} {slot} parts)"
            )
        part = parts[at]
        if not isinstance(part, dict):
            raise AccumulateError(f"{wire}: the part at {key} {at} is not an object")
        kind = plan.part_kinds.get(str(part.get("type")))
        if kind not in kinds:
            raise AccumulateError(f"{wire} does not apply to the {part.get('type')} part at {at}")
        if (index, key, at) in self._closed_parts:
            raise AccumulateError(f"{wire}: part {key}={at} of output item {index} is done")
        places = self._streamed.setdefault(index, {})
        if name in plan.part_close:
            done = _object(payload, plan.field(name), wire)
            if done["type"] != part.get("type"):
                raise AccumulateError(f"{wire}: a {done['type']} part closes a {part.get('type')}")
            for k, i, held in places if self._checking else ():
                if k == key and i == at and _text(done.get(held)) != _text(part.get(held)):
                    self._warn(
                        f"{wire}: the part's {held!r} differs from the text its deltas "
                        "streamed; taken"
                    )
            parts[at] = done
            self._closed_parts.add((index, key, at))
            return
        pp = plan.parts[kind]
        streamed = {held for (k, i, held) in places if k == key and i == at}
        deltas, totals = pp.deltas.get(name, ()), pp.totals.get(name, ())
        _fold(part, deltas, totals, payload, wire, streamed, self._warning)
        for held in streamed:
            places.setdefault((key, at, held), slot)
