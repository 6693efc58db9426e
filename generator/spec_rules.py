"""The base of the spec checker: what every rule reads and writes (the sources, the
problems found, what is resolved so far) and the checks of a single name or type."""

from __future__ import annotations

from . import spec_model as sm
from .catalog import EventC, ItemC, MachineC, PartC
from .errors import SpecError, did_you_mean
from .loader import Source
from .reserved import GENERATED_NAMES, HARD_KEYWORDS, IDENT, TYPE_NAME
from .types import BUILTIN_UNIONS, TypeRef, TypeSyntaxError, parse_type

Path = tuple[str | int, ...]


class Rules:
    """The checker's state, filled in as the spec files are read, and its small checks.

    Every problem is kept as a ``SpecError`` (``err``) so that all of them are reported
    at once; nothing here raises.
    """

    envelope: MachineC  # set once the envelope is read

    def __init__(self, sources: list[Source]) -> None:
        self.sources = sources
        self.errors: list[SpecError] = []
        self.types: dict[str, sm.TypeSpec] = {}
        self.type_names: set[str] = set()
        self.events: dict[str, EventC] = {}
        self.event_src: dict[str, tuple[Source, Path]] = {}
        self.parts: dict[str, PartC] = {}
        self.part_src: dict[str, Source] = {}
        self.items: dict[str, ItemC] = {}
        self.item_src: dict[str, Source] = {}
        self.dialect_sources: dict[str, Source] = {}

    def err(self, src: Source, path: tuple[str | int, ...], msg: str) -> None:
        """Keep a problem at ``path`` of ``src``."""
        self.errors.append(src.error(path, msg))

    def read_optional(
        self, src: Source, path: tuple[str | int, ...], names: list[str], known: list[str]
    ) -> None:
        """Each field a ``read_optional`` list names is a field the owner has."""
        for name in names:
            if name not in known:
                self.err(src, path + ("read_optional",), f"unknown field {name!r}")

    def typ(self, src: Source, path: tuple[str | int, ...], text: str) -> TypeRef:
        """A type expression parsed, naming only known types (``any`` if it does not parse)."""
        try:
            ref = parse_type(text)
        except TypeSyntaxError as exc:
            self.err(src, path, str(exc))
            return TypeRef("any")
        for name in ref.named_refs():
            if name not in self.type_names and name not in BUILTIN_UNIONS:
                self.err(src, path, f"unknown type {name!r}{did_you_mean(name, self.type_names)}")
        return ref

    def ident(self, src: Source, path: tuple[str | int, ...], name: str, what: str) -> bool:
        """Whether ``name`` is a safe identifier and not a keyword; a problem if not."""
        if name in HARD_KEYWORDS:
            self.err(src, path, f"{what} {name!r} is a Python keyword")
        elif not IDENT.match(name):
            self.err(src, path, f"{what} {name!r} is not a safe identifier ([a-z][a-z0-9_]*)")
        else:
            return True
        return False

    def py_name(
        self,
        src: Source,
        path: tuple[str | int, ...],
        name: str,
        what: str,
        reserved: frozenset[str] | set[str] = GENERATED_NAMES,
    ) -> None:
        """A name that becomes a Python identifier in generated code: safe and not shadowing."""
        if self.ident(src, path, name, what) and name in reserved:
            self.err(
                src,
                path,
                f"{what} {name!r} is reserved: the generated code uses that name itself",
            )

    def class_name(
        self, src: Source, path: tuple[str | int, ...], given: str | None, default: str
    ) -> str:
        """A model's class name: the spec's ``class``, checked, or the default rule's."""
        if given is None:
            return default
        if not TYPE_NAME.match(given) or given in HARD_KEYWORDS:
            self.err(src, path + ("class",), f"bad class name {given!r} (CamelCase)")
            return default
        return given
