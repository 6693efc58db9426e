"""The spec checker's rules for the route specs: the chat fields and tool calls, and the
Harmony channels, each naming an item (and part) that must exist and fit."""

from __future__ import annotations

from . import spec_model as sm
from .catalog import ItemC
from .errors import did_you_mean
from .loader import Source
from .reserved import HARMONY_SOURCES
from .spec_rules import Rules


class RouteRules(Rules):
    """The chat and Harmony route specs checked against the items they name."""

    def single(self, by_kind: dict[str, list[Source]], kind: str) -> Source | None:
        """The one spec file of ``kind``, if any; a second is an error."""
        found = by_kind.get(kind, [])
        for src in found[1:]:
            self.err(src, ("kind",), f"a second {kind} spec; there may be only one")
        return found[0] if found else None

    def check_item_part(
        self, src: Source, path: tuple[str | int, ...], item: str, part: str | None
    ) -> ItemC | None:
        """The item a route names, which must exist and hold the part it names."""
        it = self.items.get(item)
        if it is None:
            self.err(
                src, path + ("item",), f"unknown item type {item!r}{did_you_mean(item, self.items)}"
            )
            return None
        if part is not None and not any(part in kinds for kinds in it.slots.values()):
            self.err(src, path + ("part",), f"item {item!r} has no slot for part {part!r}")
        return it

    def check_chat(self, src: Source) -> None:
        """The chat routes: each field's item and part, and the tool calls' items."""
        spec: sm.ChatRoutesFile = src.model
        for key, route in spec.fields.items():
            self.check_item_part(src, ("fields", key), route.item, route.part)
        for kind in ("function", "custom"):
            it = self.check_item_part(src, ("tool_calls",), getattr(spec.tool_calls, kind), None)
            if it is not None:
                fields = {f.name for f in it.fields}
                if {"name", "call_id"} - fields or "delta" not in it.machine.transitions:
                    self.err(
                        src,
                        ("tool_calls", kind),
                        f"item {it.type!r} needs name and call_id fields and a delta transition",
                    )

        for kind, item in spec.tool_calls.client.items():
            self.check_item_part(src, ("tool_calls", "client", kind), item, None)

    def check_harmony(self, src: Source) -> None:
        """The Harmony routes: each channel's item, transitions and value sources."""
        spec: sm.HarmonyRoutesFile = src.model
        for i, route in enumerate(spec.routes):
            path: tuple[str | int, ...] = ("routes", i)
            it = self.check_item_part(src, path, route.item, route.part)
            if it is None:
                continue
            m = it.machine
            if route.part is None and not route.buffer and "delta" not in m.transitions:
                self.err(src, path, f"item {it.type!r} takes no deltas; set part or buffer: true")
            for j, name in enumerate(route.finish):
                if name not in m.transitions:
                    self.err(
                        src, path + ("finish", j), f"item {it.type!r} has no transition {name!r}"
                    )
            init = {f.name for f in it.fields if not (f.spec.acc or f.spec.slot)}
            for key, value in route.open.items():
                if key not in init:
                    self.err(src, path + ("open", key), f"item {it.type!r} has no field {key!r}")
                self.harmony_source(src, path + ("open", key), value)
            done = m.transitions.get("done")
            params = {p.name for p in done.params} if done else set()
            for key, value in route.close.items():
                if key not in params:
                    self.err(
                        src,
                        path + ("close", key),
                        f"'done' of {it.type!r} has no parameter {key!r}",
                    )
                self.harmony_source(src, path + ("close", key), value)

    def harmony_source(
        self, src: Source, path: tuple[str | int, ...], value: str | dict[str, str]
    ) -> None:
        """A Harmony value source is a constant, a known name or an argument."""
        if isinstance(value, dict):
            for k, v in value.items():
                self.harmony_source(src, path + (k,), v)
            return
        head = value.split("|", 1)[0]
        ok = (
            head.startswith("=")
            or head in HARMONY_SOURCES
            or (head.startswith("args.") and len(head) > 5)
        )
        if not ok:
            self.err(src, path, f"bad harmony source {value!r}")
