"""Typed payload models: JSON Schema -> msgspec Structs, via datamodel-code-generator.

This is the one place that calls datamodel-code-generator; its options are
pinned here so that the output depends only on the schema.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

from datamodel_code_generator import generate
from datamodel_code_generator._format_types import PythonVersion
from datamodel_code_generator.enums import DataModelType, InputFileType
from datamodel_code_generator.format import Formatter

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
    "formatters": [Formatter.RUFF_FORMAT],
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
    return out
