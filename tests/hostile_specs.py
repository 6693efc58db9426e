"""Item specs whose strings try to break out of the generated code.

``HostileItem`` holds the names and strings of one item spec; ``yaml_text``
writes it the way ``spec/items/*.yaml`` are written, and the expectations say
where each string must come back, exactly, in the generated output.  If any
string were pasted into code instead of quoted, the payloads would run:
``raise SystemExit(97)``, or create a file whose name starts with ``PWNED``
in the working folder, or reference a name containing ``PWNED``.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field
from typing import Any

import yaml

MARKER = "PWNED"
# Fragments that break naive code generation: quotes, escapes, line breaks of
# every kind, Jinja syntax, triple quotes, and code that acts if executed.
FRAGMENTS = [
    '"',
    "'",
    "\\",
    "\\n",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "\x00",
    "\x0b",
    "\x0c",
    "\x1b[31m",
    "\u2028",
    "\u2029",
    "\x85",
    '"""',
    "'''",
    '\\"""',
    "{{ x }}",
    "{{",
    "}}",
    "{% if true %}",
    "{% endif %}",
    "{# #}",
    "{%- raw %}",
    "${x}",
    "%s",
    "{0}",
    "#",
    "-->",
    "<!--",
    "`",
    "|",
    "\U0001f600",
    "é",
    "\u200b",
    "\ufeff",
    "\U0010ffff",
    'x"); raise SystemExit(97); ("',
    "x'); raise SystemExit(97); ('",
    '"""\nraise SystemExit(97)\n"""',
    "'''\nraise SystemExit(97)\n'''",
    "\nraise SystemExit(97)\n",
    f"\n{MARKER}_name = 1\n",
    f'"""; open("{MARKER}_marker", "w"); """',
    f"\\\n{MARKER}_continued",
    f'{{{{ open("{MARKER}_jinja", "w") }}}}',
    f"{{% set _ = cycler.__init__.__globals__.os.system('touch {MARKER}_ssti') %}}",
]


@dataclass
class HostileItem:
    """One item spec: names (identifiers) and strings (anything)."""

    local: str = "thing"
    field_default: str = "field_default"
    field_init: str = "field_init"
    field_list: str = "field_list"
    field_object: str = "field_object"
    field_enum: str = "field_enum"
    acc: str = "text"
    param: str = "extra"
    extra_transition: str = "note"
    doc: str = "A hostile item."
    open_doc: str = "Open it."
    delta_doc: str = "Add text."
    event_doc: str = "A delta of the hostile item."
    field_doc: str = "A field."
    default_str: str = "default"
    init_str: str = "init"
    list_values: list[str] = field(default_factory=lambda: ["a", "b"])
    object_value: dict[str, Any] = field(default_factory=lambda: {"k": "v"})
    enum_values: list[str] = field(default_factory=lambda: ["one", "two"])
    param_default: str = "param"
    example: str = "example"
    number: float = 1.5
    integer: int = 7

    @property
    def type(self) -> str:
        """A provider extension's slug-prefixed type, which the SDK check skips."""
        return f"hostile:{self.local}"

    @property
    def factory(self) -> str:
        return f"hostile_{self.local}"

    @property
    def event(self) -> str:
        return f"{self.type}.delta"

    def names(self) -> list[str]:
        return [
            self.field_default,
            self.field_init,
            self.field_list,
            self.field_object,
            self.field_enum,
            self.acc,
        ]

    def strings(self) -> list[str]:
        """Every string of the spec that must reach the Python output as a constant."""
        return [
            self.doc,
            self.open_doc,
            self.delta_doc,
            self.default_str,
            self.init_str,
            self.param_default,
            self.example,
            *self.list_values,
            *self.object_value,
            *[v for v in self.object_value.values() if isinstance(v, str)],
        ]

    def spec(self) -> dict[str, Any]:
        enum = "enum(" + ",".join(self.enum_values) + ")"
        return {
            "kind": "item",
            "type": self.type,
            "id_prefix": "hx_",
            "doc": self.doc,
            "statuses": ["in_progress", "completed", "incomplete"],
            "fields": {
                self.field_default: {
                    "type": "string",
                    "default": self.default_str,
                    "example": self.example,
                    "doc": self.field_doc,
                },
                self.field_init: {"type": "string", "init": self.init_str},
                self.field_list: {"type": "list[string]", "default": list(self.list_values)},
                self.field_object: {"type": "object", "default": dict(self.object_value)},
                self.field_enum: {"type": enum, "default": self.enum_values[0]},
                "hostile_number": {"type": "number", "default": self.number},
                "hostile_integer": {"type": "integer", "default": self.integer},
                "hostile_text": {"type": "string", "acc": self.acc},
            },
            "context": {self.acc: {"kind": "text"}},
            "events": {
                self.event: {
                    "address": "item",
                    "doc": self.event_doc,
                    "fields": {"delta": "string"},
                },
            },
            "initial": "pending",
            "states": {
                "pending": {"on": {"open": "streaming"}},
                "streaming": {
                    "on": {
                        "delta": "streaming",
                        self.extra_transition: "streaming",
                        "done": "closed",
                        "incomplete": "closed",
                    }
                },
                "closed": {"type": "final"},
            },
            "transitions": {
                "open": {"doc": self.open_doc, "emit": ["response.output_item.added"]},
                "delta": {
                    "doc": self.delta_doc,
                    "params": {
                        "delta": "string",
                        self.param: {
                            "type": "string",
                            "required": False,
                            "default": self.param_default,
                            "example": self.example,
                        },
                    },
                    "actions": [{"append": {"acc": self.acc, "from": "params.delta"}}],
                    "emit": [self.event],
                },
                self.extra_transition: {
                    "params": {"delta": "string"},
                    "actions": [{"append": {"acc": self.acc, "from": "params.delta"}}],
                    "emit": [self.event],
                },
                "done": {
                    "actions": [{"status": "completed"}],
                    "emit": ["response.output_item.done"],
                },
                "incomplete": {
                    "actions": [{"status": "incomplete"}],
                    "emit": ["response.output_item.done"],
                },
            },
        }

    def yaml_text(self) -> str:
        """The spec as YAML: unicode as is where YAML keeps it, else escaped."""
        spec = self.spec()
        body = yaml.safe_dump(spec, allow_unicode=True, sort_keys=False, width=1_000_000)
        if yaml.safe_load(body) != spec:  # a raw character YAML treats as a line break
            body = yaml.safe_dump(spec, allow_unicode=False, sort_keys=False, width=1_000_000)
        return "# yaml-language-server: $schema=../spec.schema.json\n" + body


def hostile_text(rng: random.Random, n: int = 4) -> str:
    """A string of random fragments and random characters (never a lone surrogate)."""
    parts = []
    for _ in range(n):
        if rng.random() < 0.7:
            parts.append(rng.choice(FRAGMENTS))
        else:
            parts.append(
                chr(rng.choice([rng.randrange(32, 0xD800), rng.randrange(0xE000, 0x110000)]))
            )
    return "".join(parts)


def constants(tree: ast.AST) -> set[Any]:
    """Every constant of a module, including the string keys and values of its literals."""
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}


def names(tree: ast.AST) -> set[str]:
    """Every name, attribute and argument of a module: code, not data."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name)
    return out
