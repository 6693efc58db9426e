"""The accumulator: events in, the Response they describe so far out; resumed from an
earlier accumulator or a snapshot of it."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ...core.dialect import Dialect
from ...core.errors import MissingArgument
from ...core.processor import TERMINAL_TRANSITION
from .folds import _Folds
from .plan import AccumulateError, _number


class ResponseAccumulator(_Folds):
    """Folds event payloads into the Response they describe, one event at a time.

    ``feed`` returns the snapshot after each event.  The snapshot is one live
    dict, updated in place by later events (like the SDK's), so deep-copy it to
    keep a version.  Payloads are never modified; what the snapshot takes from
    them is copied.  After an ``AccumulateError`` the event had no effect, but
    the stream is broken: the snapshot no longer describes it.
    """

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

    def _moves(self, name: str) -> list[str]:
        env = self._plan.envelope
        return [
            target
            for tr, target in env["states"][self._state].items()
            if name in env["transitions"][tr]["emits"]
        ]

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
                if output is not None and new.get("status") not in ("failed", "cancelled"):
                    # a failed response may leave out what it had streamed, and a
                    # cancelled one keeps nothing of it
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
