"""``tag_class_vars``: each tagged Struct of the model source states its tag as ``type``."""

from __future__ import annotations

import ast
import itertools
import sys
import types
from typing import Any

import msgspec

from generator.models import tag_class_vars

_count = itertools.count()

SOURCE = '''\
# header
from __future__ import annotations

from typing import Any, TypeAlias

from msgspec import Struct


class Plain(Struct, kw_only=True):
    type: str


class Documented(Struct, kw_only=True, tag_field="type", tag="response.output_text.delta"):
    """
    A doc with a line separator \u2028 and a form feed \x0c, which are not line breaks.
    """

    delta: str


class Wrapped(
    Struct, kw_only=True, tag_field="type", tag="openai:response.web_search_call.searching"
):
    item_id: str


class DocOnly(Struct, tag_field="type", tag="empty"):
    """Nothing but a doc."""


Union: TypeAlias = Documented | Wrapped | DocOnly
'''


def _load(source: str) -> dict[str, Any]:
    """The module's names, run as a module of its own: msgspec resolves annotations there."""
    module = types.ModuleType(f"_tag_class_vars_{next(_count)}")
    sys.modules[module.__name__] = module
    exec(compile(source, "models.py", "exec"), module.__dict__)
    return module.__dict__


def test_each_tagged_class_gets_its_tag_as_a_class_variable() -> None:
    out = tag_class_vars(SOURCE)
    tree = ast.parse(out)
    found = {
        node.name: [ast.unparse(s) for s in node.body if isinstance(s, ast.AnnAssign)][0]
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }
    assert found == {
        "Plain": "type: str",
        "Documented": "type: ClassVar[Literal['response.output_text.delta']] = "
        "'response.output_text.delta'",
        "Wrapped": "type: ClassVar[Literal['openai:response.web_search_call.searching']] = "
        "'openai:response.web_search_call.searching'",
        "DocOnly": "type: ClassVar[Literal['empty']] = 'empty'",
    }
    assert "from typing import Any, ClassVar, Literal, TypeAlias\n" in out
    # Only lines were added (and a name imported): the rest is as it was.
    added = [x for x in out.split("\n") if "ClassVar" not in x and x]
    assert added == [x for x in SOURCE.split("\n") if "from typing" not in x and x]
    ns = _load(out)
    doc = ns["Documented"]
    assert doc.__doc__ == _load(SOURCE)["Documented"].__doc__
    assert doc.type == "response.output_text.delta" == doc(delta="x").type
    assert doc.__struct_fields__ == ("delta",)


def test_the_wire_format_is_unchanged() -> None:
    before, after = _load(SOURCE), _load(tag_class_vars(SOURCE))
    for name, args in (("Documented", {"delta": "x"}), ("Wrapped", {"item_id": "i"})):
        old, new = before[name](**args), after[name](**args)
        assert msgspec.json.encode(new) == msgspec.json.encode(old)
        data = msgspec.json.encode(old)
        assert msgspec.json.decode(data, type=after["Union"]) == new


def test_a_source_without_tags_or_typing_import() -> None:
    plain = (
        "from __future__ import annotations\n\n"
        "from msgspec import Struct\n\n\n"
        "class A(Struct):\n    x: int\n"
    )
    assert tag_class_vars(plain) == plain
    tagged = plain.replace("class A(Struct):", 'class A(Struct, tag_field="kind", tag="a"):')
    out = tag_class_vars(tagged)
    assert "from typing import ClassVar, Literal\n\nfrom msgspec import Struct\n" in out
    assert _load(out)["A"].kind == "a"


def test_a_tag_after_characters_of_several_bytes_is_read_whole() -> None:
    """The parser's column offsets count UTF-8 bytes: a name of several bytes before the
    tag on its line must not shift it."""
    source = (
        "from __future__ import annotations\n\n"
        "from msgspec import Struct\n\n\n"
        'class Événement(Struct, tag_field="type", tag="réponse.créée"):\n    x: int\n'
    )
    out = tag_class_vars(source)
    assert '    type: ClassVar[Literal["réponse.créée"]] = "réponse.créée"\n' in out
    assert _load(out)["Événement"].type == "réponse.créée"
