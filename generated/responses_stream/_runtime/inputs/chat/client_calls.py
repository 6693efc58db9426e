"""A chat model's call of a client-run typed tool, as the typed item the client runs.

The gateway offers a chat model each typed tool of a request as a function whose
arguments are the item's action (``spec/requests/responses.yaml``); the chat routes name
the item a call of each kind becomes.  Here the call's whole arguments become that item,
streamed with its own events as OpenAI's API streams it: a ``shell_call`` with each
command's ``shell_call_command`` events, an ``apply_patch_call`` with its operation's diff
events, a ``local_shell_call`` and a ``computer_call`` whole.

Arguments that are not a JSON object of the action's shape are the model's error: the
item ends incomplete, with the action as far as it could be read, and the converter ends
the response failed (``MODEL_ERROR``), as OpenAI's API answers invalid model output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ...core.errors import ResponsesStreamError
from ...core.processor import StreamProcessor

MODEL_ERROR = "model_error"
# The computer actions and the keys each one needs (besides its type).
COMPUTER_ACTIONS: dict[str, tuple[str, ...]] = {
    "click": ("x", "y"),
    "double_click": ("x", "y"),
    "drag": ("path",),
    "keypress": ("keys",),
    "move": ("x", "y"),
    "screenshot": (),
    "scroll": ("x", "y", "scroll_x", "scroll_y"),
    "type": ("text",),
    "wait": (),
}
PATCH_OPERATIONS = ("create_file", "update_file", "delete_file")


class BadArguments(ResponsesStreamError, ValueError):
    """What is wrong with a typed call's arguments (its message names it)."""


def _int(args: Mapping[str, Any], key: str, required: bool = False) -> int | None:
    value = args.get(key)
    if value is None and not required:
        return None
    if type(value) is not int:
        raise BadArguments(f"'{key}' must be an integer, got {value!r:.60}")
    return value


def _strings(args: Mapping[str, Any], key: str) -> list[str]:
    value = args.get(key)
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadArguments(f"'{key}' must be a list of strings, got {value!r:.60}")
    return value


def shell_action(args: Mapping[str, Any]) -> dict[str, Any]:
    commands = _strings(args, "commands" if "commands" in args else "command")
    return {
        "commands": commands,
        "timeout_ms": _int(args, "timeout_ms"),
        "max_output_length": _int(args, "max_output_length"),
    }


def local_shell_action(args: Mapping[str, Any]) -> dict[str, Any]:
    env = args.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise BadArguments(f"'env' must be an object of strings, got {env!r:.60}")
    action: dict[str, Any] = {"type": "exec", "command": _strings(args, "command"), "env": env}
    for key in ("working_directory", "user"):
        if isinstance(args.get(key), str):
            action[key] = args[key]
    timeout = _int(args, "timeout_ms")
    if timeout is not None:
        action["timeout_ms"] = timeout
    return action


def patch_operation(args: Mapping[str, Any]) -> dict[str, Any]:
    kind, path = args.get("type"), args.get("path")
    if kind not in PATCH_OPERATIONS:
        raise BadArguments(f"'type' must be one of {', '.join(PATCH_OPERATIONS)}, got {kind!r:.60}")
    if not isinstance(path, str) or not path:
        raise BadArguments(f"'path' must be a file's path, got {path!r:.60}")
    if kind == "delete_file":
        return {"type": kind, "path": path}
    diff = args.get("diff", "")
    if not isinstance(diff, str):
        raise BadArguments(f"'diff' must be a string, got {diff!r:.60}")
    return {"type": kind, "path": path, "diff": diff}


def computer_action(args: Mapping[str, Any]) -> dict[str, Any]:
    kind = args.get("type")
    if kind not in COMPUTER_ACTIONS:
        raise BadArguments(f"'type' must be one of {', '.join(COMPUTER_ACTIONS)}, got {kind!r:.60}")
    action: dict[str, Any] = {"type": kind}
    for key in COMPUTER_ACTIONS[kind]:
        if key in ("x", "y", "scroll_x", "scroll_y"):
            action[key] = _int(args, key, required=True)
        elif key == "keys":
            action[key] = _strings(args, key)
        elif key == "text":
            if not isinstance(args.get("text"), str):
                raise BadArguments(f"'text' must be a string, got {args.get('text')!r:.60}")
            action[key] = args["text"]
        else:  # a drag's path
            action[key] = _path(args.get("path"))
    if kind == "click":
        button = args.get("button", "left")
        if button not in ("left", "right", "wheel", "back", "forward"):
            raise BadArguments(f"'button' must be a mouse button, got {button!r:.60}")
        action["button"] = button
    return action


def _path(value: Any) -> list[dict[str, int]]:
    if not isinstance(value, list) or not value:
        raise BadArguments(f"'path' must be a list of points, got {value!r:.60}")
    points = []
    for point in value:
        if not isinstance(point, Mapping):
            raise BadArguments(f"a point of 'path' must be an object, got {point!r:.60}")
        points.append({"x": _int(point, "x", True), "y": _int(point, "y", True)})
    return points  # type: ignore[return-value]


# item type -> (what reads the arguments, the empty action it opens with, its field)
_SHAPES: dict[str, tuple[Callable[[Mapping[str, Any]], dict[str, Any]], Any, str]] = {
    "shell_call": (
        shell_action,
        {"commands": [], "timeout_ms": None, "max_output_length": None},
        "action",
    ),
    "local_shell_call": (local_shell_action, {"type": "exec", "command": [], "env": {}}, "action"),
    "apply_patch_call": (patch_operation, None, "operation"),
    "computer_call": (computer_action, None, "action"),
}


def stream_typed_call(
    proc: StreamProcessor, item_type: str, call_id: str, text: str, status: str
) -> str | None:
    """Stream the typed item a call with arguments ``text`` makes, closed ``status``;
    returns what was wrong with the arguments (the item then ends incomplete), or None."""
    read, empty, key = _SHAPES[item_type]
    try:
        args = json.loads(text) if text.strip() else {}
        if not isinstance(args, dict):
            raise BadArguments(f"the arguments must be a JSON object, got {text!r:.60}")
        value = read(args)
    except (ValueError, RecursionError) as exc:
        handle = proc.open(item_type, call_id=call_id, **({key: empty} if empty else {}))
        handle.close("incomplete")
        what = exc if isinstance(exc, BadArguments) else f"the arguments are not JSON ({exc})"
        return f"The model produced invalid content: its {item_type} has bad arguments: {what}"
    if item_type == "shell_call":
        handle = proc.open(item_type, call_id=call_id, action=empty)
        for at, command in enumerate(value["commands"]):
            handle.phase("command_added", command_index=at, command="")
            if command:
                handle.phase("command_delta", command_index=at, delta=command)
            handle.phase("command_done", command_index=at, command=command)
        handle.close(status, action=value)
    elif item_type == "apply_patch_call":
        handle = proc.open(
            item_type,
            call_id=call_id,
            operation={**value, "diff": ""} if "diff" in value else value,
        )
        if "diff" in value:
            if value["diff"]:
                handle.phase("diff_delta", delta=value["diff"])
            handle.phase("diff_done", diff=value["diff"])
        handle.close(status, operation=value)
    elif item_type == "local_shell_call":
        handle = proc.open(item_type, call_id=call_id, action=empty)
        handle.close(status, action=value)
    else:
        handle = proc.open(item_type, call_id=call_id, action=value)
        handle.close(status)
    return None
