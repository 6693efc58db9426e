"""Client-run typed tools (``shell``, ``local_shell``, ``apply_patch``, ``computer``) as
the chat upstream sees them, and their items in a turn's context.

Each typed tool of a request goes to the chat model as a function whose parameters are
the shape of its action (``spec/requests/responses.yaml``), under the name the model
calls it by (``typed_name``: its kind, unless a function of the request has that name).
A typed call in the context goes back as that function's call, its action as the
arguments; its output, as the tool message that answers it (a screenshot as an image, in
a user message once the run of tool messages ends: chat tool messages hold text only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...tables import CHAT_ROUTES
from ..core.convert import TYPED_TOOLS

# a typed call item -> the kind of tool that makes it (the chat routes say the item of each)
CALLS = {item: kind for kind, item in CHAT_ROUTES["tool_calls"]["client"].items()}
OUTPUTS = tuple(f"{item}_output" for item in CALLS)  # the items that answer them
SCREENSHOT = "The screenshot the action returned follows."


def typed_function(tool: Mapping[str, Any], row: Mapping[str, Any], wire: str) -> dict[str, Any]:
    """The chat function offered for the typed ``tool``, whose table row is ``row``."""
    function = {**row["function"], "name": wire}
    if TYPED_TOOLS[tool["type"]] == "computer" and tool.get("display_width"):
        screen = f" The display is {tool['display_width']}x{tool.get('display_height')} pixels"
        where = f", in a {tool['environment']} environment." if tool.get("environment") else "."
        function["description"] = function["description"] + screen + where
    return {"type": "function", "function": function}


def call_arguments(item: Mapping[str, Any]) -> str:
    """A typed call's action, as the arguments of the function call that made it."""
    kind = item["type"]
    if kind == "shell_call":
        action = dict(item.get("action") or {})
        value = {k: v for k, v in action.items() if v is not None}
    elif kind == "local_shell_call":
        action = dict(item.get("action") or {})
        value = {k: v for k, v in action.items() if k != "type" and v is not None}
    elif kind == "apply_patch_call":
        value = dict(item.get("operation") or {})
    else:
        value = dict(item.get("action") or {})
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def output_content(item: Mapping[str, Any]) -> tuple[str, str | None]:
    """A typed output as the tool message's text, and a screenshot's URL if it has one."""
    kind, output = item["type"], item.get("output")
    if kind == "computer_call_output":
        shot = output if isinstance(output, Mapping) else {}
        url = shot.get("image_url") if isinstance(shot.get("image_url"), str) else None
        return (SCREENSHOT if url else "The action was performed."), url
    if kind == "apply_patch_call_output":
        status = item.get("status") or "completed"
        said = output if isinstance(output, str) and output else ""
        return (f"{status}: {said}" if said else status), None
    if kind == "shell_call_output":
        return _shell_output(output if isinstance(output, list) else []), None
    return (output if isinstance(output, str) else json.dumps(output)), None


def _shell_output(results: list[Any]) -> str:
    """Each command's stdout, stderr and outcome, one after another."""
    out = []
    for result in results:
        if not isinstance(result, Mapping):
            continue
        found = result.get("outcome")
        outcome: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if outcome.get("type") == "timeout":
            ended = "timed out"
        else:
            ended = f"exit code {outcome.get('exit_code')}"
        parts = [str(result.get("stdout") or "")]
        if result.get("stderr"):
            parts.append(f"stderr:\n{result['stderr']}")
        parts.append(f"({ended})")
        out.append("\n".join(p for p in parts if p))
    return "\n\n".join(out)
