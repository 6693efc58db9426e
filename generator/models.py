"""Typed payload models: JSON Schema -> msgspec Structs, via datamodel-code-generator.

This is the one place that calls datamodel-code-generator; its options are
pinned here so that the output depends only on the schema.  Its output gets
one addition (``tag_class_vars``): each tagged Struct states its tag.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from datamodel_code_generator import generate
from datamodel_code_generator._format_types import PythonVersion
from datamodel_code_generator.enums import DataModelType, InputFileType

OPTIONS: dict[str, Any] = {
    "input_file_type": InputFileType.JsonSchema,
    "output_model_type": DataModelType.MsgspecStruct,
    "target_python_version": PythonVersion.PY_311,
    "disable_timestamp": True,
    "use_standard_collections": True,
    "use_union_operator": True,
    "use_schema_description": True,
    "enum_field_as_literal": "all",
    "use_msgspec_tagged_unions": True,
    "keyword_only": True,
    # no formatter here: the writer formats every file with ruff and a fixed config,
    # so the output does not depend on the folder the generator runs in
    "formatters": [],
}


def render_models(schema: dict[str, Any], header: str) -> str:
    """The Python source of msgspec models for every definition in ``schema``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = generate(
            json.dumps(schema),
            custom_file_header=header,
            **OPTIONS,
        )
    assert isinstance(out, str)
    return tag_class_vars(out)


def _segment(lines: list[str], node: ast.expr) -> str:
    """The source text of a one-line ``node`` (``ast.get_source_segment`` splits the
    whole source on every call: quadratic over a module of hundreds of classes)."""
    end = node.end_lineno
    assert end == node.lineno and node.end_col_offset is not None, "a one-line expression"
    raw = lines[node.lineno - 1].encode()  # the offsets count UTF-8 bytes
    return raw[node.col_offset : node.end_col_offset].decode()


def tag_class_vars(source: str) -> str:
    """Give each tagged Struct of ``source`` its tag as a typed class attribute.

    ``class E(Struct, tag_field="type", tag="x")`` gets the first field
    ``type: ClassVar[Literal["x"]] = "x"``: msgspec ignores class variables, so
    the wire format stays the same, while ``event.type`` reads the tag and type
    checkers narrow a union on it.  ``ClassVar`` and ``Literal`` are imported.
    """
    tree = ast.parse(source)
    # Lines as Python counts them: str.splitlines would also break at U+2028,
    # form feeds and the like, which a docstring may hold.
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", source)
    inserts: list[tuple[int, str]] = []  # (0-based line to insert before, text)
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        if "tag_field" not in kw or "tag" not in kw:
            continue
        field = ast.literal_eval(kw["tag_field"])
        tag = _segment(lines, kw["tag"])
        body = node.body
        if any(isinstance(s, ast.AnnAssign) and ast.unparse(s.target) == field for s in body):
            continue
        indent = " " * body[0].col_offset
        line = f"{indent}{field}: ClassVar[Literal[{tag}]] = {tag}\n"
        has_doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        rest = body[1:] if has_doc else body
        if rest:
            inserts.append((rest[0].lineno - 1, line))
        else:  # a docstring only: the attribute goes after it, a blank line between
            inserts.append((body[0].end_lineno or body[0].lineno, "\n" + line))
    if not inserts:
        return source
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "typing"]
    if imports:
        start, end = imports[0].lineno - 1, imports[0].end_lineno or imports[0].lineno
        names = {a.name for a in imports[0].names} | {"ClassVar", "Literal"}
    else:
        first = next(
            n
            for n in tree.body
            if isinstance(n, ast.Import)
            or (isinstance(n, ast.ImportFrom) and n.module != "__future__")
        )
        start = end = first.lineno - 1
        names = {"ClassVar", "Literal"}
    one_line = f"from typing import {', '.join(sorted(names))}\n"
    if len(one_line) > 100:
        one_line = "from typing import (\n" + "".join(f"    {n},\n" for n in sorted(names)) + ")\n"
    if not imports:
        one_line += "\n"  # a section of its own, before the third-party imports
    for at, text in sorted(inserts, reverse=True):
        lines.insert(at, text)
    lines[start:end] = [one_line]
    return "".join(lines)
