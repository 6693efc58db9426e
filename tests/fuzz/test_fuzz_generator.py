"""Fuzz the generator with hostile item specs: it quotes every string, or refuses the spec.

Each example is an item spec built like ``spec/items/*.yaml`` whose names are
random identifiers (ASCII, unicode, keywords and names the generated code uses
itself) and whose strings (docs, defaults, init values, examples, list and
object literals, enum values) mix quotes, backslashes, every kind of line
break, NUL, triple quotes, Jinja syntax and code that would act if it ran.

Per example the spec is loaded and checked with the real specs, then rendered
in-process (every output file but the two model modules per dialect, whose
third-party renderer costs seconds per call); every Python file must compile,
carry each string as a constant equal to the spec's, and contain no code from
the spec.  A refused spec must be refused with ``file:line`` errors that point
into it.  ``tests/test_generator_safety.py`` runs the full CLI, the models,
the generated tests, ruff and ``mypy --strict`` on a batch of such specs.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import tempfile
from functools import cache
from pathlib import Path

from hostile_specs import FRAGMENTS, MARKER, HostileItem, constants, names
from hypothesis import event, given
from hypothesis import strategies as st

from generator.compile import build_catalog
from generator.errors import SpecErrors
from generator.loader import Source, load_dir, load_file
from generator.names import emitter_class
from generator.render import render_all
from generator.reserved import GENERATED_NAMES, HARD_KEYWORDS, ITEM_AUTO_FIELDS, RESERVED_MEMBERS

ROOT = Path(__file__).resolve().parents[2]
NAME = "spec/items/hostile.yaml"
FIXED_FIELDS = {"hostile_number", "hostile_integer", "hostile_text"}
TRANSITIONS = {"open", "delta", "done", "incomplete"}
COPIED = ("responses_stream/_runtime/", "tests/_support.py")
PLAIN = re.compile(r"[a-z][a-z0-9_]*\Z")
# Names that a correct checker may refuse in some position.
RISKY = (
    GENERATED_NAMES
    | HARD_KEYWORDS
    | RESERVED_MEMBERS
    | ITEM_AUTO_FIELDS
    | TRANSITIONS
    | FIXED_FIELDS
    | {"delta"}
)


@cache
def base_sources() -> tuple[Source, ...]:
    sources, errors = load_dir(ROOT / "spec")
    assert not errors, errors
    return tuple(sources)


plain_names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
unicode_names = st.text(
    alphabet=st.characters(categories=["Ll", "Lu", "Lo", "Nd", "Mn", "Pc"]),
    min_size=1,
    max_size=6,
).filter(str.isidentifier)
any_names = st.one_of(
    plain_names,
    plain_names,
    plain_names,
    st.sampled_from(sorted(RISKY)),
    unicode_names,
)
hostile = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=6),
    ),
    max_size=6,
).map("".join)
enum_values = st.lists(
    st.from_regex(r"[A-Za-z0-9_.:-]{1,8}", fullmatch=True), min_size=1, max_size=3, unique=True
)


safe_names = plain_names.filter(lambda n: n not in RISKY)


FIXED_TRANSITIONS = {"open", "delta", "done", "incomplete"}


@st.composite
def hostile_items(draw: st.DrawFn) -> HostileItem:
    # Four examples in five use only names the checker must accept, so that most
    # reach the render; the fifth mixes in keywords, reserved and unicode names.
    mixed = draw(st.integers(0, 4)) == 0
    idents = draw(
        st.lists(
            (any_names if mixed else safe_names).filter(lambda n: n not in FIXED_FIELDS),
            min_size=8,
            max_size=8,
            unique=True,
        )
    )
    return HostileItem(
        local=draw(st.one_of(plain_names, unicode_names) if mixed else safe_names),
        field_default=idents[0],
        field_init=idents[1],
        field_list=idents[2],
        field_object=idents[3],
        field_enum=idents[4],
        acc=idents[5],
        param=idents[6],
        # never one of the item's own transitions, which it would replace
        extra_transition=idents[7] if idents[7] not in FIXED_TRANSITIONS else f"{idents[7]}_x",
        doc=draw(hostile),
        open_doc=draw(hostile),
        delta_doc=draw(hostile),
        event_doc=draw(hostile),
        field_doc=draw(hostile),
        default_str=draw(hostile),
        init_str=draw(hostile),
        list_values=draw(st.lists(hostile, max_size=3)),
        object_value=draw(st.dictionaries(hostile, hostile, max_size=3)),
        enum_values=draw(enum_values),
        param_default=draw(hostile),
        example=draw(hostile),
        number=draw(st.floats(allow_nan=False, allow_infinity=False)),
        integer=draw(st.integers()),
    )


def plain(h: HostileItem) -> bool:
    """Whether every name of the spec is one the checker must accept."""
    idents = [*h.names(), h.param, h.extra_transition, h.local]
    return all(PLAIN.match(n) and n not in RISKY for n in idents)


def method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)


def check_emitters(h: HostileItem, tree: ast.Module) -> None:
    cls_name = emitter_class(h.type)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    assert ast.get_docstring(cls, clean=False) == h.doc
    delta = method(cls, "delta")
    # An empty transition doc means "none": the method gets a generated docstring.
    if h.open_doc:
        assert ast.get_docstring(method(cls, "open"), clean=False) == h.open_doc
    if h.delta_doc:
        assert ast.get_docstring(delta, clean=False) == h.delta_doc
    args = [a.arg for a in delta.args.args]
    assert args[:1] == ["self"] and h.param in args
    default = delta.args.defaults[args.index(h.param) - len(args)]
    assert ast.literal_eval(default) == h.param_default
    found = constants(tree)
    for value in h.strings():
        if value not in (h.example, h.doc, h.open_doc, h.delta_doc, ""):
            assert value in found, value
    init = method(cls, "__init__")
    kw = [a.arg for a in init.args.kwonlyargs]
    assert {h.field_default, h.field_list, h.field_object, h.field_enum} <= set(kw)


@given(h=hostile_items())
def test_hostile_item_specs_are_quoted_or_refused(h: HostileItem) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hostile.yaml"
        path.write_text(h.yaml_text(), encoding="utf-8")
        src, errors = load_file(path, NAME)
        assert not errors, errors  # yaml.safe_dump writes every string so that it loads back
        assert src is not None
        assert src.model.doc == h.doc and src.model.fields[h.field_init].init == h.init_str
        try:
            cat = build_catalog([*base_sources(), src])
        except SpecErrors as exc:
            event("refused")
            assert not plain(h), exc.errors
            assert exc.errors and all(e.file == NAME and e.line >= 1 for e in exc.errors)
            return
        event("rendered")
        item = cat.items[h.type]
        small = dataclasses.replace(
            cat, items={h.type: item}, chat_routes=None, harmony_routes=None
        )
        files = render_all(small, ROOT / "spec", with_models=False)
        for rel, text in files.items():
            if not rel.endswith(".py"):
                continue
            first, _, _ = text.partition("\n")
            assert first.startswith("# Generated by responses-stream from "), rel
            assert first.isprintable(), rel
            if rel.startswith(COPIED):
                continue  # copied verbatim from the generator; only the header is spec'd
            tree = ast.parse(text, rel)
            assert not [n for n in names(tree) if MARKER in n], rel
        check_emitters(h, ast.parse(files["responses_stream/_shared/emitters.py"]))
        for dialect in ("openai", "openresponses"):
            schema = json.loads(files[f"responses_stream/{dialect}/schema.json"])
            defs = schema["$defs"]
            assert defs[item.cls].get("description", "") == h.doc
            assert defs[cat.events[h.event].cls].get("description", "") == h.event_doc
            props = defs[item.cls]["properties"]
            assert props[h.field_enum]["enum"] == h.enum_values
        stem = h.type.replace(":", "_")
        tests = ast.parse(files[f"tests/test_item_{stem}.py"])
        assert h.example in constants(tests)
        assert not list(Path(tmp).glob(f"{MARKER}*"))
        assert not list(Path.cwd().glob(f"{MARKER}*"))
