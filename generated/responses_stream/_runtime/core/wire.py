"""Checks that a value handed to the direct API is one strict clients accept on the wire.

Every parameter of an emitter is checked against the type its signature
declares (from the generated models), strictly: no ``5`` for a string, no
``True`` for an integer.  Where the spec types a field loosely (``object``),
the shapes below say what the official openai SDK's models require of it; the
other loose fields must at least be plain JSON.  Strings are kept as given,
except lone surrogates (not encodable as UTF-8), which become U+FFFD.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec
from msgspec import Struct

from .errors import ProcessorError

REPLACEMENT = "\ufffd"


# -- the openai SDK's shapes of fields the spec types as ``object`` ------------------
class _Tagged(Struct, kw_only=True, tag_field="type"):
    pass


class _Plain(Struct, kw_only=True):
    pass


# A shape that is not in a union spells its ``type`` out as a required Literal field:
# msgspec would let a lone tagged struct's tag be absent, and the SDK requires it.


class UrlCitation(_Tagged, tag="url_citation"):
    url: str
    title: str
    start_index: int
    end_index: int


class UrlCitationOnly(_Plain):
    """``UrlCitation`` where it is the only annotation there is."""

    type: Literal["url_citation"]
    url: str
    title: str
    start_index: int
    end_index: int


class FileCitation(_Tagged, tag="file_citation"):
    file_id: str
    filename: str
    index: int


class ContainerFileCitation(_Tagged, tag="container_file_citation"):
    container_id: str
    file_id: str
    filename: str
    start_index: int
    end_index: int


class FilePath(_Tagged, tag="file_path"):
    file_id: str
    index: int


class SearchSource(_Plain):
    type: Literal["url"]
    url: str


class ActionSearch(_Tagged, tag="search"):
    query: str | None = None
    queries: list[str] | None = None
    sources: list[SearchSource] | None = None


class ActionOpenPage(_Tagged, tag="open_page"):
    url: str | None = None


class ActionFind(_Tagged, tag="find_in_page"):
    url: str
    pattern: str


class McpProtocolError(_Tagged, tag="mcp_protocol_error"):
    code: int
    message: str


class McpToolExecutionError(_Tagged, tag="mcp_tool_execution_error"):
    content: Any


class McpHttpError(_Tagged, tag="http_error"):
    code: int
    message: str


class OutputLogs(_Tagged, tag="logs"):
    logs: str


class OutputImage(_Tagged, tag="image"):
    url: str


class FileSearchResult(_Plain):
    attributes: dict[str, str | float | bool] | None = None
    file_id: str | None = None
    filename: str | None = None
    score: float | None = None
    text: str | None = None


class CreateFile(_Tagged, tag="create_file"):
    path: str
    diff: str


class DeleteFile(_Tagged, tag="delete_file"):
    path: str


class UpdateFile(_Tagged, tag="update_file"):
    path: str
    diff: str


class Point(_Plain):
    x: int
    y: int


class Click(_Tagged, tag="click"):
    button: Literal["left", "right", "wheel", "back", "forward"]
    x: int
    y: int
    keys: list[str] | None = None


class DoubleClick(_Tagged, tag="double_click"):
    x: int
    y: int
    keys: list[str] | None = None


class Drag(_Tagged, tag="drag"):
    path: list[Point]
    keys: list[str] | None = None


class Keypress(_Tagged, tag="keypress"):
    keys: list[str]


class Move(_Tagged, tag="move"):
    x: int
    y: int
    keys: list[str] | None = None


class Screenshot(_Tagged, tag="screenshot"):
    pass


class Scroll(_Tagged, tag="scroll"):
    scroll_x: int
    scroll_y: int
    x: int
    y: int
    keys: list[str] | None = None


class TypeText(_Tagged, tag="type"):
    text: str


class Wait(_Tagged, tag="wait"):
    pass


class PendingSafetyCheck(_Plain):
    id: str
    code: str | None = None
    message: str | None = None


class ComputerScreenshot(_Plain):
    type: Literal["computer_screenshot"]
    file_id: str | None = None
    image_url: str | None = None


class LocalShellAction(_Plain):
    type: Literal["exec"]
    command: list[str]
    env: dict[str, str]
    timeout_ms: int | None = None
    user: str | None = None
    working_directory: str | None = None


class ShellAction(_Plain):
    commands: list[str]
    max_output_length: int | None = None
    timeout_ms: int | None = None


class OutcomeTimeout(_Tagged, tag="timeout"):
    pass


class OutcomeExit(_Tagged, tag="exit"):
    exit_code: int


class ShellOutput(_Plain):
    outcome: OutcomeTimeout | OutcomeExit
    stdout: str
    stderr: str
    created_by: str | None = None


class InputText(_Tagged, tag="input_text"):
    text: str


class InputImage(_Tagged, tag="input_image"):
    detail: Literal["low", "high", "auto", "original"]
    file_id: str | None = None
    image_url: str | None = None


class InputFile(_Tagged, tag="input_file"):
    detail: Literal["auto", "low", "high"] | None = None
    file_data: str | None = None
    file_id: str | None = None
    file_url: str | None = None
    filename: str | None = None


class Tool(_Plain):
    """Only the discriminator: the SDK's tool union has too many members to restate."""

    type: str


ToolOutput = str | list[InputText | InputImage | InputFile]
Role = Literal[
    "unknown", "user", "assistant", "system", "critic", "discriminator", "developer", "tool"
]

# item type -> parameter -> the shape the openai SDK requires of it (beyond the spec's type)
OPENAI_SHAPES: dict[str, dict[str, Any]] = {
    "message": {"annotation": UrlCitation | FileCitation | ContainerFileCitation | FilePath},
    "web_search_call": {"action": ActionSearch | ActionOpenPage | ActionFind},
    "mcp_call": {"error": McpProtocolError | McpToolExecutionError | McpHttpError},
    "code_interpreter_call": {"outputs": list[OutputLogs | OutputImage]},
    "file_search_call": {"results": list[FileSearchResult]},
    "apply_patch_call": {"operation": CreateFile | DeleteFile | UpdateFile},
    "computer_call": {
        "action": Click
        | DoubleClick
        | Drag
        | Keypress
        | Move
        | Screenshot
        | Scroll
        | TypeText
        | Wait,
        "pending_safety_checks": list[PendingSafetyCheck],
    },
    "computer_call_output": {"output": ComputerScreenshot},
    "local_shell_call": {"action": LocalShellAction},
    "shell_call": {"action": ShellAction, "output": list[ShellOutput]},
    "shell_call_output": {"output": list[ShellOutput]},
    "function_call_output": {"output": ToolOutput},
    "custom_tool_call_output": {"output": ToolOutput},
    "additional_tools": {"role": Role, "tools": list[Tool]},
    "tool_search_output": {"tools": list[Tool]},
}
# The Open Responses schema admits URL citations only.
OPENRESPONSES_SHAPES: dict[str, dict[str, Any]] = {"message": {"annotation": UrlCitationOnly}}
SHAPES: dict[str, dict[str, dict[str, Any]]] = {
    "openai": OPENAI_SHAPES,
    "openresponses": OPENRESPONSES_SHAPES,
}


# -- signatures -------------------------------------------------------------------
class Signature:
    """The parameters of one emitter method: their types and which are required."""

    __slots__ = ("hints", "names", "required")

    def __init__(self, fn: Callable[..., Any], skip: int) -> None:
        params = list(inspect.signature(fn).parameters.values())[skip:]
        module = inspect.getmodule(fn)
        hints = typing.get_type_hints(fn, vars(module) if module else None)
        self.names: tuple[str, ...] = tuple(p.name for p in params)
        self.required = frozenset(p.name for p in params if p.default is inspect.Parameter.empty)
        self.hints: dict[str, Any] = {p.name: hints.get(p.name, Any) for p in params}


@functools.cache
def signature(cls: type, method: str) -> Signature:
    """``cls.method``'s parameters (``__init__`` without its ``stream``)."""
    fn = getattr(cls, method)
    return Signature(fn, 2 if method == "__init__" else 1)


def accepted(sig: Signature) -> str:
    return ", ".join(sig.names) if sig.names else "none"


# -- values -------------------------------------------------------------------------
class Fixes:
    """What checking changed: the number of lone surrogates replaced with U+FFFD."""

    __slots__ = ("surrogates",)

    def __init__(self) -> None:
        self.surrogates = 0


def fix_str(text: str, fixes: Fixes) -> str:
    """``text`` with lone surrogates replaced; a valid surrogate pair becomes its character."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        fixes.surrogates += joined.count(REPLACEMENT) - text.count(REPLACEMENT)
        return joined
    return text


def _json(value: Any, where: str, fixes: Fixes) -> Any:
    """``value`` as plain JSON (lone surrogates replaced), or ProcessorError."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return fix_str(value, fixes)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ProcessorError(f"{where}: {value!r} is not a JSON number")
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ProcessorError(f"{where}: object key {key!r} is not a string")
            out[fix_str(key, fixes)] = _json(item, f"{where}.{key}", fixes)
        return out
    if isinstance(value, (list, tuple)):
        return [_json(item, f"{where}[{n}]", fixes) for n, item in enumerate(value)]
    raise ProcessorError(f"{where}: a {type(value).__name__} is not a JSON value")


def check_value(value: Any, hint: Any, shape: Any, where: str, fixes: Fixes) -> Any:
    """``value`` if strict clients accept it where ``hint`` (and ``shape``) say; else raise.

    Returns the value to pass on: the same object, or a copy with lone
    surrogates replaced.
    """
    if type(value) is str:  # the common case: deltas, names, ids
        if not _admits_str(hint):
            _convert(value, hint, where)
        fixed = fix_str(value, fixes)
        if shape is not None:
            _convert(fixed, shape, where)
        return fixed
    _convert(value, hint, where)
    if value is None:
        return None
    try:
        plain = msgspec.to_builtins(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ProcessorError(f"{where}: not a JSON value ({exc})") from None
    before = fixes.surrogates
    try:
        checked = _json(plain, where, fixes)
    except RecursionError:
        raise ProcessorError(f"{where}: nested too deeply") from None
    if shape is not None:
        _convert(checked, shape, where)
    return value if fixes.surrogates == before else checked


def _convert(value: Any, hint: Any, where: str) -> None:
    if hint is Any:
        return
    try:
        msgspec.convert(value, type=hint, strict=True)
    except msgspec.ValidationError as exc:
        raise ProcessorError(
            f"{where}: {exc} (expected {_name(hint)}, got {value!r:.80})"
        ) from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise ProcessorError(f"{where}: {exc}") from None


@functools.cache
def _admits_str(hint: Any) -> bool:
    """Whether every str passes ``hint`` (a ``Literal`` does not: its values are checked)."""
    if hint is str or hint is Any:
        return True
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return False
    return any(_admits_str(arg) for arg in typing.get_args(hint))


def _name(hint: Any) -> str:
    """``hint`` as a reader would write it: ``str | None``, ``UrlCitation | FilePath``."""
    if isinstance(hint, type):
        return hint.__name__
    return re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", str(hint))
