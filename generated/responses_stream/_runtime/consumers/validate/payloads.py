"""The validator's rules for payloads and for the response."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec

from ...core.sse_parse import (
    MAX_NESTING,
    nesting_exceeds,
)
from .items import _ItemChecks
from .machines import _is_index, _is_mapping, _opaque, _other_dialect, _scrub
from .rules import INCOMPLETE_REASONS, KNOWN_NON_STANDARD, TERMINALS


class _PayloadChecks(_ItemChecks):
    """The rules of each payload and of the response: numbering, event types and shapes,
    the envelope's machine and the terminal event's output."""

    def _sequence(self, seq: Any) -> None:
        if not isinstance(seq, int) or isinstance(seq, bool):
            self._add("SEQ_MISSING", "sequence_number is missing or not an integer")
            return
        if self.last_seq is None:
            if seq != 0 and not self.resumed:
                hint = "" if self.may_resume else " (a stream resumed with starting_after: say so)"
                self._add("SEQ_NOT_FROM_ZERO", f"sequence_number starts at {seq}, not 0{hint}")
        elif seq <= self.last_seq:
            self._add("SEQ_NOT_INCREASING", f"sequence_number {seq} after {self.last_seq}")
        self.last_seq = seq

    def _unknown(self, kind: str, payload: Mapping[str, Any]) -> None:
        if kind in KNOWN_NON_STANDARD:
            self._add(
                "NON_STANDARD_EVENT",
                f"{kind} is not in the {self.dialect.name} protocol ({KNOWN_NON_STANDARD[kind]})",
            )
            return
        other = _other_dialect(self.dialect, kind)
        if other is not None:
            self._add(
                "NON_STANDARD_EVENT",
                f"{kind} is the {other} dialect's name; the {self.dialect.name} dialect "
                "does not define it",
            )
        elif ":" in kind and self.dialect.name == "openai":
            self._add("EXTENSION_EVENT", f"{kind} is an extension event; openai clients reject it")
        elif ":" in kind:
            self._once(
                "UNKNOWN_EXTENSION_EVENT",
                kind,
                f"{kind} is a provider extension the spec does not describe; not checked",
            )
        else:
            self._once(
                "NEWER_EVENT", kind, f"{kind} is not in the spec (a newer API?); not checked"
            )
        # The envelope invariants still hold for an event the spec does not know.
        if self.pending_error:
            self._add(
                "ERROR_WITHOUT_FAILED", "an 'error' event must be followed by response.failed"
            )
            self.pending_error = False
        oi = payload.get("output_index")
        if _is_index(oi):
            self._in_items_state(kind)
            self._find(payload, oi)

    def _schema(self, payload: Mapping[str, Any], kind: str) -> None:
        known = self._known_items(payload)
        if known is None:
            return
        if self.unsequenced and "sequence_number" not in known:  # checked as if numbered
            known = {**known, "sequence_number": self.index}
        if known is payload and self._raw is not None:
            text = self._raw  # the payload's own JSON, its nesting already checked
        else:
            try:
                text = json.dumps(known)
            except (TypeError, ValueError) as exc:  # a payload given as objects, not JSON
                self._add("MALFORMED_EVENT", f"{kind}: not a JSON value ({exc})")
                return
            if nesting_exceeds(text):
                self._add("MALFORMED_EVENT", f"{kind}: nests deeper than {MAX_NESTING} levels")
                return
        try:
            decoded = self.event_type.decode(text)
        except msgspec.ValidationError as exc:
            self._add("SCHEMA_INVALID", f"{kind}: {exc}")
            return
        except msgspec.DecodeError:
            # what json accepts and msgspec does not: a number beyond the double range
            # (NaN, Infinity), or a lone surrogate
            decoded = self._odd_values(known, kind)
            if decoded is None:
                return
        if self.legacy:
            self._legacy(decoded, "$")

    def _odd_values(self, payload: Mapping[str, Any], kind: str) -> Any:
        """Report non-finite numbers and lone surrogates; the payload decoded without them."""
        found: dict[str, str] = {}
        clean = _scrub(payload, "$", found)
        if "number" in found:
            self._add(
                "MALFORMED_JSON",
                f"{kind}: {found['number']} is NaN, Infinity or beyond the range of a double",
            )
        if "surrogate" in found:
            self._once(
                "LONE_SURROGATE",
                "",
                f"{kind}: {found['surrogate']} holds a surrogate without its pair (read as U+FFFD)",
            )
        try:
            return self.event_type.decode(json.dumps(clean))
        except msgspec.ValidationError as exc:
            self._add("SCHEMA_INVALID", f"{kind}: {exc}")
        except msgspec.DecodeError as exc:
            self._add("MALFORMED_EVENT", f"{kind}: cannot be checked ({exc})")
        return None

    def _known(self, item: Any) -> bool:
        """Whether the schema check covers ``item``: anything but an item whose type is a
        string the spec lacks (a type that is not a string is a schema error)."""
        if not _is_mapping(item):
            return True
        kind = item.get("type")
        return not isinstance(kind, str) or kind in self.item_kinds

    def _known_items(self, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The payload without items of types the spec lacks (they are warned about).

        None for an event that carries such an item: its payload is not checked.
        """
        if not self._known(payload.get("item")):
            return None
        response = payload.get("response")
        if _is_mapping(response) and isinstance(response.get("output"), list):
            output = response["output"]
            if not all(self._known(i) for i in output):
                kept = [i for i in output if self._known(i)]
                payload = {**payload, "response": {**response, "output": kept}}
        return payload

    def _legacy(self, value: Any, path: str) -> None:
        if isinstance(value, msgspec.Struct):
            cls = type(value)
            fields = self._legacy_fields
            for fname in fields.own(cls):
                if getattr(value, fname, None) is msgspec.UNSET:
                    self._once(
                        "LEGACY_FIELD",
                        f"{cls.__name__}.{fname}",
                        f"{path}.{fname} is missing: older streams leave it out, "
                        "the newest SDK requires it",
                    )
            for fname in fields.walk(cls):
                self._legacy(getattr(value, fname), f"{path}.{fname}")
        elif isinstance(value, list):
            for i, v in enumerate(value[:64]):
                self._legacy(v, f"{path}[{i}]")

    def _envelope(self, name: str, payload: Mapping[str, Any]) -> None:
        first = self.index == 0 and not self.resumed
        if first and name not in ("response.created", "response.queued"):
            self._add(
                "CREATED_NOT_FIRST", f"the first event is {payload['type']}, not response.created"
            )
        if not self.envelope.step(name):
            self._add(
                "ENVELOPE_ORDER",
                f"{payload['type']} is not allowed in envelope state "
                f"{sorted(self.envelope.states)}",
            )
        if name in TERMINALS:
            self.terminal = payload["type"]
            self._terminal(name, payload)

    def _terminal(self, name: str, payload: Mapping[str, Any]) -> None:
        response = payload.get("response")
        if not isinstance(response, Mapping):
            return
        if name == "response.failed" and response.get("status") == "cancelled":
            # a background response cancelled: its stream ends with response.failed, the
            # Response cancelled and its output cleared, the open items cut where they were
            # (as OpenAI's API ends one)
            if response.get("output") not in ([], None):
                self._add("OUTPUT_MISMATCH", "a cancelled response keeps no output")
            return
        for item in self.items.values():
            if item.done is None:
                self._add(
                    "MISSING_DONE",
                    f"item {item.item_id} (output_index "
                    f"{item.output_index}) is still open at {payload['type']}",
                )
            for part in item.open_parts():
                self._add(
                    "MISSING_DONE",
                    f"a {part.kind} part of {item.item_id} is still open at {payload['type']}",
                )
        output = response.get("output")
        if self._output_differs(output):
            got = len(output) if isinstance(output, list) else output
            self._add(
                "OUTPUT_MISMATCH",
                f"the final Response's output ({got} items) differs "
                f"from the {len(self.items)} streamed items",
            )
        expected = {
            "response.completed": "completed",
            "response.incomplete": "incomplete",
            "response.failed": "failed",
        }[name]
        if response.get("status") != expected:
            self._add(
                "STATUS_MISMATCH", f"{payload['type']} carries status {response.get('status')!r}"
            )
        if name == "response.completed":
            cut = [
                i.item_id
                for i in self.items.values()
                if isinstance(i.done, Mapping) and i.done.get("status") == "incomplete"
            ]
            if cut:
                self._add(
                    "TRUNCATED_BUT_COMPLETED",
                    f"items {cut} are incomplete but the "
                    "response says completed; send response.incomplete",
                )
        if name == "response.incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, Mapping) else None
            if reason not in INCOMPLETE_REASONS:
                self._add("INCOMPLETE_WITHOUT_REASON", f"incomplete_details.reason is {reason!r}")
        usage = response.get("usage")
        if not isinstance(usage, Mapping):
            self._add("USAGE_MISSING", "the terminal Response has no usage")

    def _output_differs(self, output: Any) -> bool:
        """Whether the terminal output differs from the items streamed and closed.

        Items left open were reported (MISSING_DONE), and a continuation's items opened
        before it are unseen: neither is compared.  A continuation's output may hold
        items from before it, so its items are compared by output_index.
        """
        if not isinstance(output, list):
            return True
        if self.resumed:
            placed = [(i, it) for i, it in self.items.items() if not it.earlier]
        else:
            if len(output) != len(self.items):
                return True
            placed = [(n, self.items[i]) for n, i in enumerate(sorted(self.items))]
        for at, item in placed:
            if item.done is None:
                continue
            if at >= len(output) or _opaque(output[at]) != _opaque(item.done):
                return True
        return False
