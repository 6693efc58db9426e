"""Check the loaded spec files together and resolve them into one ``Catalog``.

Every problem is collected as a ``SpecError`` with the file and line of the key at
fault; the catalog is only built when there are none.  The rules live by what they
check: ``item_rules`` (types, events, parts, items), ``machine_rules`` (state machines),
``route_rules`` (the chat and Harmony routes); this module reads the files in order and
checks what spans them (the envelope, the item factories, the dialects).
"""

from __future__ import annotations

from .catalog import Catalog, DialectC, ResponseFieldC
from .errors import SpecError, SpecErrors, did_you_mean
from .item_rules import ItemRules
from .loader import Source
from .reserved import ENVELOPE_INIT_NAMES, EVENT_NAME, PACKAGE_NAMES, RESERVED_ENVELOPE
from .route_rules import RouteRules

REQUIRED_KINDS = ("envelope", "events", "parts", "types", "dialect")


class _Builder(ItemRules, RouteRules):
    """Reads every spec file, in the order one kind needs another, into a ``Catalog``."""

    def build(self) -> Catalog:
        """The catalog of ``self.sources``; ``SpecErrors`` with every problem found."""
        by_kind = self._by_kind()
        type_src = self.add_types(by_kind["types"])
        for src in by_kind["events"] + by_kind.get("item", []):
            self.add_events(src, ("events",), src.model.events)
        for src in by_kind["parts"]:
            self.add_parts(src)
        for src in by_kind.get("item", []):
            self.add_item(src)
        env_src = by_kind["envelope"][0]
        rfields = self._envelope(env_src)
        self._factories()
        self.check_class_names(type_src)
        stored = {f.name for f in rfields}
        self._envelope_sets(env_src, stored)
        dialects = self._dialects(by_kind["dialect"], stored)
        self.check_bindings(dialects)
        chat = self.single(by_kind, "chat_routes")
        harmony = self.single(by_kind, "harmony_routes")
        requests = self._requests(by_kind)
        if chat is not None:
            self.check_chat(chat)
        if harmony is not None:
            self.check_harmony(harmony)
        if self.errors:
            raise SpecErrors(self.errors)
        return Catalog(
            self.types,
            self.type_fields,
            self.events,
            self.parts,
            self.items,
            self.envelope,
            rfields,
            dialects,
            [s.name for s in self.sources],
            self.items_in,
            chat.model if chat else None,
            harmony.model if harmony else None,
            list(env_src.model.read_optional),
            requests,
        )

    def _by_kind(self) -> dict[str, list[Source]]:
        """The sources by kind; ``SpecErrors`` at once if a required kind is missing."""
        by_kind: dict[str, list[Source]] = {}
        for src in self.sources:
            by_kind.setdefault(src.model.kind, []).append(src)
        for kind in REQUIRED_KINDS:
            if not by_kind.get(kind):
                self.errors.append(SpecError("spec", 1, "-", f"no spec file of kind {kind!r}"))
        if len(by_kind.get("envelope", [])) > 1:
            for src in by_kind["envelope"][1:]:
                self.err(src, ("kind",), "a second envelope spec; there must be exactly one")
        if self.errors:
            raise SpecErrors(self.errors)
        return by_kind

    def _envelope(self, env_src: Source) -> list[ResponseFieldC]:
        """The response's fields and the envelope's machine (``self.envelope``)."""
        env = env_src.model
        rfields = []
        for name, rf in env.response.items():
            self.py_name(env_src, ("response", name), name, "field", ENVELOPE_INIT_NAMES)
            ref = self.typ(env_src, ("response", name), rf.type)
            rfields.append(ResponseFieldC(name, ref, rf))
            if rf.fill is not None and (not rf.echo or ref.kind != "object"):
                self.err(env_src, ("response", name, "fill"), "fill is for an echoed object field")
        self.read_optional(env_src, (), env.read_optional, list(env.response))
        envelope = self.machine(env_src, (), "envelope", env, "envelope", "", [])
        self.envelope = envelope
        if env.items_in not in env.states:
            self.err(env_src, ("items_in",), f"unknown state {env.items_in!r}")
        self.items_in = env.items_in
        for tname in envelope.transitions:
            if tname in RESERVED_ENVELOPE:
                self.err(
                    env_src,
                    ("transitions", tname),
                    f"transition {tname!r} clashes with a member of the emitter",
                )
        return rfields

    def _envelope_sets(self, env_src: Source, stored: set[str]) -> None:
        """Each response field an envelope transition sets is one the response has."""
        for tr in self.envelope.transitions.values():
            for i, act in enumerate(tr.actions):
                if act.op == "set" and act.target not in stored:
                    self.err(
                        env_src,
                        ("transitions", tr.name, "actions", i),
                        f"unknown response field {act.target!r}",
                    )

    def _factories(self) -> None:
        """Each item type's factory method on the response emitter: one name each, none
        taken by the emitter itself."""
        factories: dict[str, str] = {}
        for item in self.items.values():
            factory = item.type.replace(":", "_").replace("-", "_")
            isrc = self.item_src[item.type]
            if factory in self.envelope.transitions or factory in RESERVED_ENVELOPE:
                self.err(
                    isrc,
                    ("type",),
                    f"item type {item.type!r} clashes with a member of the response emitter",
                )
            elif factory in factories:
                self.err(
                    isrc,
                    ("type",),
                    f"item type {item.type!r} has the same factory name {factory!r} "
                    f"as {factories[factory]!r}",
                )
            factories.setdefault(factory, item.type)

    def _dialects(self, sources: list[Source], stored: set[str]) -> dict[str, DialectC]:
        """Each dialect: its standard events and items, renames and field overrides."""
        dialects: dict[str, DialectC] = {}
        for src in sources:
            d = src.model
            if d.name in dialects:
                self.err(src, ("name",), f"dialect {d.name!r} is declared twice")
                continue
            self.py_name(src, ("name",), d.name, "dialect name", PACKAGE_NAMES)
            std_events = set(self.events) if d.standard_events == "all" else set(d.standard_events)
            for i, ev in enumerate([] if d.standard_events == "all" else d.standard_events):
                if ev not in self.events:
                    self.err(
                        src,
                        ("standard_events", i),
                        f"unknown event {ev!r}{did_you_mean(ev, self.events)}",
                    )
            std_items = set(self.items) if d.standard_items == "all" else set(d.standard_items)
            for i, it in enumerate([] if d.standard_items == "all" else d.standard_items):
                if it not in self.items:
                    self.err(
                        src,
                        ("standard_items", i),
                        f"unknown item type {it!r}{did_you_mean(it, self.items)}",
                    )
            if not d.extension_prefix:
                self._unknown_to_clients(d.name, std_items)
            renames: dict[str, str] = {}
            overrides = {}
            for ev, spec in d.events.items():
                if ev not in self.events:
                    self.err(
                        src, ("events", ev), f"unknown event {ev!r}{did_you_mean(ev, self.events)}"
                    )
                    continue
                if spec.type is not None:
                    if not EVENT_NAME.match(spec.type):
                        self.err(src, ("events", ev, "type"), f"bad event name {spec.type!r}")
                    renames[ev] = spec.type
                if spec.fields is not None:
                    overrides[ev] = self.event_fields(src, ("events", ev, "fields"), spec.fields)
            required = stored if d.response_required == "all" else set(d.response_required)
            self.dialect_sources[d.name] = src
            dialects[d.name] = DialectC(
                d.name,
                d.doc,
                d.extension_prefix,
                d.framing.done_sentinel,
                std_events,
                std_items,
                renames,
                overrides,
                required,
                d.echo_tools,
            )
        if "openai" not in dialects:
            self.errors.append(SpecError("spec", 1, "-", "the 'openai' dialect is required"))
        return dialects

    def _unknown_to_clients(self, dialect: str, known: set[str]) -> None:
        """An item type a dialect without an extension prefix does not list among its
        standard items reaches its clients under its bare name, which their closed item
        unions refuse; a vendor prefix marks it as an extension they can skip."""
        for name in sorted(set(self.items) - known):
            if ":" not in name:
                self.err(
                    self.item_src[name],
                    ("type",),
                    f"item type {name!r} is not one the {dialect} dialect's clients know "
                    f"(its standard_items), so their strict validation refuses it: give it "
                    f"a vendor prefix, as in 'acme:{name}', or, if the {dialect} SDK has "
                    f"added the type, list it in the dialect's standard_items",
                )

    def _requests(self, by_kind: dict[str, list[Source]]) -> list[Source]:
        """The request_document files, then the request_fields files (one a route),
        each name once; they are read against their vendored documents at render."""
        routes: dict[str, Source] = {}
        for src in by_kind.get("request_fields", []):
            if src.model.route in routes:
                self.err(
                    src, ("route",), f"a second request_fields spec of route {src.model.route!r}"
                )
            routes[src.model.route] = src
        documents: dict[str, Source] = {}
        for src in by_kind.get("request_document", []):
            if src.model.name in documents:
                self.err(src, ("name",), f"a second request_document named {src.model.name!r}")
            documents[src.model.name] = src
        return [documents[d] for d in sorted(documents)] + [routes[r] for r in sorted(routes)]


def build_catalog(sources: list[Source]) -> Catalog:
    """Resolve and check the loaded specs; raise ``SpecErrors`` with every problem."""
    return _Builder(sources).build()
