"""Every public name of the dialect packages' modules, as they were before the dialects
shared one emitters module and one models module, still imports and is what it was.

``fixtures/dialect_public_names.json`` was written from the package as it stood before
(``describe`` applied to it): for each public name of ``responses_stream.<dialect>.models``,
``.reading`` and ``.emitters``, a model's wire tag and fields in order, a union's member
classes, an emitter class's public methods, a table's keys.  A name added since is added there
by the change that adds it (``ResponseEmitter.ECHO_FILLS``).
"""

from __future__ import annotations

import importlib
import inspect
import json
import types
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest

BEFORE = json.loads(
    (Path(__file__).parent / "fixtures" / "dialect_public_names.json").read_text("utf-8")
)


def describe(obj: Any) -> dict[str, Any]:
    """What a public name is, as far as a user of it can tell."""
    origin = typing.get_origin(obj)
    if isinstance(obj, types.UnionType) or origin in (typing.Union, typing.Annotated):
        members = typing.get_args(obj)
        if origin is typing.Annotated:
            members = typing.get_args(members[0]) or (members[0],)
        return {"kind": "union", "members": sorted(getattr(m, "__name__", str(m)) for m in members)}
    if isinstance(obj, type) and issubclass(obj, msgspec.Struct):
        tag = obj.__struct_config__.tag
        return {"kind": "struct", "tag": tag, "fields": list(obj.__struct_fields__)}
    if isinstance(obj, type):
        return {"kind": "class", "methods": sorted(n for n in dir(obj) if not n.startswith("_"))}
    if isinstance(obj, dict):
        return {"kind": "table", "keys": sorted(obj)}
    return {"kind": "alias"}


@pytest.mark.parametrize("module", sorted(BEFORE))
def test_every_public_name_of_a_dialect_module_is_what_it_was(module: str) -> None:
    mod = importlib.import_module(f"responses_stream.{module}")
    changed = {
        name: (was, describe(getattr(mod, name, None)))
        for name, was in BEFORE[module].items()
        if not hasattr(mod, name) or describe(getattr(mod, name)) != was
    }
    assert changed == {}


@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
def test_a_model_decodes_its_own_wire_and_refuses_the_other_dialects(dialect: str) -> None:
    """``Item`` of each dialect reads its own spelling of an extension item only."""
    models = importlib.import_module(f"responses_stream.{dialect}.reading")
    own, other = (
        ("mcp_list_tools", "openai:mcp_list_tools")
        if dialect == "openai"
        else ("openai:mcp_list_tools", "mcp_list_tools")
    )
    body = {"id": "mcpl_1", "server_label": "s", "tools": [], "status": "completed"}
    item = msgspec.convert({"type": own, **body}, models.Item)
    assert type(item) is models.McpListTools and item.type == own
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"type": other, **body}, models.Item)
    emitter = importlib.import_module(f"responses_stream.{dialect}").ResponseEmitter(model="m")
    snapshot = msgspec.to_builtins(emitter.snapshot())
    response = msgspec.convert({**snapshot, "output": [{"type": own, **body}]}, models.Response)
    assert type(response.output[0]) is models.McpListTools


def test_the_item_emitters_are_one_class_for_every_dialect() -> None:
    """The emitters are written once: a dialect's names are the shared classes."""
    from responses_stream.openai import emitters as oa
    from responses_stream.openresponses import emitters as orr

    for name in BEFORE["openai.emitters"]:
        if name.endswith("Emitter") and name != "ResponseEmitter":
            assert getattr(oa, name) is getattr(orr, name), name
    assert oa.ResponseEmitter is not orr.ResponseEmitter
    assert inspect.getmodule(oa.ResponseEmitter.message) is inspect.getmodule(orr.MessageEmitter)
