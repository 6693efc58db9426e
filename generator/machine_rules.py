"""The spec checker's rules for state machines: states, transitions, their actions and
the events they emit, and where each emitted value comes from."""

from __future__ import annotations

from collections import deque

from . import spec_model as sm
from .catalog import ActionC, Binding, DialectC, EmitC, EventC, FieldC, MachineC, Param, TransitionC
from .errors import did_you_mean
from .loader import Source
from .reserved import FIXED_REFS, RESERVED_MEMBERS
from .spec_rules import Rules


class MachineRules(Rules):
    """A machine (an item's, a part's or the envelope's) checked and resolved."""

    def machine(
        self,
        src: Source,
        path: tuple[str | int, ...],
        name: str,
        spec: sm.Machine,
        scope: str,
        index: str,
        fields: list[FieldC],
    ) -> MachineC:
        """A machine checked and resolved: every state reachable, every transition taken."""
        states = spec.states
        if spec.initial not in states:
            self.err(
                src,
                path + ("initial",),
                f"unknown initial state {spec.initial!r}{did_you_mean(spec.initial, states)}",
            )
        transitions: dict[str, TransitionC] = {}
        for tname, tr in spec.transitions.items():
            tpath = path + ("transitions", tname)
            self.ident(src, tpath, tname, "transition")
            if tname in RESERVED_MEMBERS or tname.startswith("_"):
                self.err(src, tpath, f"transition {tname!r} clashes with a member of the emitter")
            transitions[tname] = self.transition(src, tpath, tname, tr, spec, scope, index, fields)
        self._wire(src, path, states, transitions)
        self._reachable(src, path, spec)
        finals = [s for s, st in states.items() if st.type == "final"]
        if not finals:
            self.err(src, path + ("states",), "no final state")
        return MachineC(name, spec.initial, dict(states), transitions, dict(spec.context), finals)

    def _wire(
        self,
        src: Source,
        path: tuple[str | int, ...],
        states: dict[str, sm.State],
        transitions: dict[str, TransitionC],
    ) -> None:
        """Each state's transitions: named, to a known target, one target each; every
        transition taken from some state, its emits' ``when`` among those states."""
        used: set[str] = set()
        for sname, state in states.items():
            spath = path + ("states", sname)
            self.ident(src, spath, sname, "state")
            if state.type == "final" and state.on:
                self.err(src, spath + ("on",), "a final state has no transitions")
            if state.type != "final" and not state.on:
                self.err(src, spath, "a state that is not final needs a transition out")
            for tname, target in state.on.items():
                if tname not in transitions:
                    self.err(
                        src,
                        spath + ("on", tname),
                        f"unknown transition {tname!r}{did_you_mean(tname, transitions)}",
                    )
                    continue
                used.add(tname)  # named here: a bad target is this line's fault alone
                if target not in states:
                    self.err(
                        src,
                        spath + ("on", tname),
                        f"unknown target state {target!r}{did_you_mean(target, states)}",
                    )
                    continue
                tr_c = transitions[tname]
                if tr_c.target and tr_c.target != target:
                    self.err(
                        src,
                        spath + ("on", tname),
                        f"transition {tname!r} goes to {tr_c.target!r} elsewhere; one target per transition",
                    )
                tr_c.target = target
                tr_c.sources.append(sname)
        for tname in transitions:
            if tname not in used:
                self.err(
                    src,
                    path + ("transitions", tname),
                    f"transition {tname!r} is never taken from any state",
                )
            for i, emit in enumerate(transitions[tname].emits):
                for when in emit.when or []:
                    if when not in transitions[tname].sources:
                        self.err(
                            src,
                            path + ("transitions", tname, "emit", i, "when"),
                            f"transition {tname!r} is not taken from state {when!r}",
                        )

    def _reachable(self, src: Source, path: tuple[str | int, ...], spec: sm.Machine) -> None:
        """Every state can be reached from the initial one."""
        states = spec.states
        if spec.initial in states:
            seen = {spec.initial}
            queue = deque([spec.initial])
            while queue:
                for target in states[queue.popleft()].on.values():
                    if target in states and target not in seen:
                        seen.add(target)
                        queue.append(target)
            for sname in states:
                if sname not in seen:
                    self.err(
                        src,
                        path + ("states", sname),
                        f"state {sname!r} cannot be reached from {spec.initial!r}",
                    )

    def transition(
        self,
        src: Source,
        path: tuple[str | int, ...],
        name: str,
        tr: sm.Transition,
        spec: sm.Machine,
        scope: str,
        index: str,
        fields: list[FieldC],
    ) -> TransitionC:
        """A transition checked and resolved: its parameters, actions and emitted events."""
        params = []
        for pname, decl in tr.params.items():
            ppath = path + ("params", pname)
            self.py_name(src, ppath, pname, "parameter")
            if isinstance(decl, str):
                params.append(Param(pname, self.typ(src, ppath, decl), True, None))
            else:
                params.append(
                    Param(
                        pname,
                        self.typ(src, ppath + ("type",), decl.type),
                        decl.required,
                        decl.default,
                        decl.example,
                    )
                )
        pnames = {p.name for p in params}
        field_names = {f.name for f in fields}
        actions = []
        for i, act in enumerate(tr.actions):
            apath = path + ("actions", i)
            set_keys = [k for k in ("append", "set", "status") if getattr(act, k) is not None]
            if len(set_keys) != 1:
                self.err(src, apath, "an action has exactly one of append, set, status")
                continue
            if act.append is not None:
                if act.append.acc not in spec.context:
                    self.err(
                        src,
                        apath + ("append", "acc"),
                        f"unknown accumulator {act.append.acc!r}"
                        + did_you_mean(act.append.acc, spec.context),
                    )
                self.ref(src, apath + ("append", "from"), act.append.source, pnames, spec, scope)
                actions.append(ActionC("append", act.append.acc, act.append.source))
            elif act.set is not None:
                if scope != "envelope" and act.set.field not in field_names:
                    self.err(
                        src,
                        apath + ("set", "field"),
                        f"unknown field {act.set.field!r}{did_you_mean(act.set.field, field_names)}",
                    )
                self.ref(src, apath + ("set", "from"), act.set.source, pnames, spec, scope)
                actions.append(ActionC("set", act.set.field, act.set.source))
            elif act.status is not None:
                if act.status.startswith("params."):
                    self.ref(src, apath + ("status",), act.status, pnames, spec, scope)
                actions.append(ActionC("status", value=act.status))
        emits = self._emits(src, path, tr, pnames, spec, scope, index)
        return TransitionC(name, tr.doc, params, actions, emits)

    def _emits(
        self,
        src: Source,
        path: tuple[str | int, ...],
        tr: sm.Transition,
        pnames: set[str],
        spec: sm.Machine,
        scope: str,
        index: str,
    ) -> list[EmitC]:
        """The events a transition emits, each field bound to a source the machine has."""
        emits = []
        for i, edecl in enumerate(tr.emit):
            epath = path + ("emit", i)
            emit = edecl if isinstance(edecl, sm.Emit) else sm.Emit(event=edecl)
            event = self.events.get(emit.event)
            if event is None:
                self.err(
                    src,
                    epath,
                    f"unknown event {emit.event!r}{did_you_mean(emit.event, self.events)}",
                )
                continue
            self.check_address(src, epath, event, scope, index)
            bindings = []
            for fname, (ftype, fsource) in event.fields.items():
                source: str | dict[str, str] | None = emit.with_.get(fname, fsource)
                if source is None:
                    source = f"params.{fname}"
                at = (src, epath)
                if fname not in emit.with_ and fsource is not None:
                    # the event's own ``from``: a bad name there is that line's fault
                    esrc, where = self.event_src[emit.event]
                    at = (esrc, (*where, "fields", fname, "from"))
                by = f"{src.name}:{src.line(epath)}" if at[0] is not src else ""
                self.ref(
                    at[0],
                    at[1],
                    source,
                    pnames,
                    spec,
                    scope,
                    event=emit.event,
                    field_name=fname,
                    by=by,
                )
                bindings.append(Binding(fname, ftype, source))
            for k in emit.with_:
                if k not in event.fields:
                    self.err(src, epath + ("with", k), f"event {emit.event!r} has no field {k!r}")
            if emit.when is not None and scope != "item":
                self.err(src, epath + ("when",), "'when' is only for item transitions")
            emits.append(EmitC(emit.event, bindings, emit.when))
        return emits

    def check_address(
        self, src: Source, path: tuple[str | int, ...], event: EventC, scope: str, index: str
    ) -> None:
        """An event is emitted only by a machine that can address it."""
        need = event.address
        ok = {
            "envelope": need == "none",
            "item": need in ("output", "item"),
            "part": (need == "content" and index == "content_index")
            or (need == "summary" and index == "summary_index"),
        }[scope]
        if not ok:
            self.err(
                src,
                path,
                f"event {event.name!r} (address {need!r}) cannot be emitted by a {scope}"
                + (f" indexed by {index}" if index else ""),
            )

    def ref(
        self,
        src: Source,
        path: tuple[str | int, ...],
        source: str | dict[str, str],
        pnames: set[str],
        spec: sm.Machine,
        scope: str,
        event: str = "",
        field_name: str = "",
        by: str = "",
    ) -> None:
        """A value source names a parameter, accumulator or fixed value the machine has;
        ``by`` is where the machine emitting the event is, when the source is the event's."""
        if isinstance(source, dict):
            for k, v in source.items():
                self.ref(src, path, v, pnames, spec, scope, event, k, by)
            return
        where = f" for field {field_name!r} of {event!r}" if event else ""
        if by:
            where += (
                f" (emitted at {by}, whose accumulators are {', '.join(spec.context) or 'none'})"
            )
        head, _, tail = source.partition(".")
        if source in FIXED_REFS:
            needed = {"item": "item", "part": "part", "response": "envelope"}.get(source)
            if needed and needed != scope:
                self.err(src, path, f"{source!r}{where} is only available in a {needed}")
        elif head == "params":
            if tail not in pnames:
                self.err(
                    src,
                    path,
                    f"no parameter {tail!r}{where}; declare it in params{did_you_mean(tail, pnames)}",
                )
        elif head in ("acc", "last"):
            acc = spec.context.get(tail)
            if acc is None:
                self.err(
                    src,
                    path,
                    f"unknown accumulator {tail!r}{where}{did_you_mean(tail, spec.context)}",
                )
            elif head == "last" and acc.kind != "list":
                self.err(src, path, f"last.{tail} needs a list accumulator{where}")
        elif head == "field":
            pass
        else:
            self.err(src, path, f"bad value source {source!r}{where}")

    def check_bindings(self, dialects: dict[str, DialectC]) -> None:
        """Dialect field overrides must still be fillable by every transition that emits
        the event."""
        for d in dialects.values():
            src = self.dialect_sources[d.name]
            for ev, fields in d.overrides.items():
                for owner in self._machines():
                    for tr in owner.transitions.values():
                        for emit in tr.emits:
                            if emit.event != ev:
                                continue
                            pnames = {p.name for p in tr.params}
                            for fname, (_, fsource) in fields.items():
                                sources = (
                                    fsource
                                    if isinstance(fsource, dict)
                                    else {fname: fsource or f"params.{fname}"}
                                )
                                for v in sources.values():
                                    head, _, param = v.partition(".")
                                    if head == "params" and param not in pnames:
                                        self.err(
                                            src,
                                            ("events", ev, "fields", fname),
                                            f"transition {owner.name}.{tr.name} has no "
                                            f"parameter {param!r}",
                                        )

    def _machines(self) -> list[MachineC]:
        return (
            [p.machine for p in self.parts.values()]
            + [i.machine for i in self.items.values()]
            + [self.envelope]
        )
