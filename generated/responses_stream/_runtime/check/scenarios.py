"""The conformance scenarios: what each asks a Responses server, and what it expects.

A scenario builds the request body of its last turn (``body``) and judges the final
response of that turn (``expect``).  Every answer may end at the token limit the kit
sets (``incomplete``, ``max_output_tokens``); what a cut answer cannot show (whole
JSON, any text at all) is then not exercised.  ``expect`` returns the broken rules (id,
message), or a sentence saying why the scenario was not exercised when the model did not
do what it needs (it answered without calling the tool, it stopped before the token
limit): the kit judges the server's protocol, never the model's choices.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Finding = tuple[str, str]  # (rule id, message)
NOT_EXERCISED = "not exercised"


def _city_tool(name: str, description: str) -> dict[str, Any]:
    """A strict function tool that takes a city."""
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
    }


WEATHER_TOOL = _city_tool("get_weather", "The current weather in a city.")
TIME_TOOL = _city_tool("get_time", "The local time in a city.")
ANSWER_SCHEMA = {
    "type": "json_schema",
    "name": "answer",
    "schema": {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    },
    "strict": True,
}
LENGTH_LIMIT = 16  # the smallest max_output_tokens OpenAI's server takes
TOOL_RESULT = '{"temperature_c": 21, "sky": "clear"}'


def output_items(response: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    output = response.get("output")
    if not isinstance(output, list):
        return []
    return [item for item in output if isinstance(item, Mapping) and item.get("type") == kind]


def output_text(response: Mapping[str, Any]) -> str:
    return "".join(
        str(part.get("text", ""))
        for item in output_items(response, "message")
        for part in item.get("content") or []
        if isinstance(part, Mapping) and part.get("type") == "output_text"
    )


def _incomplete_reason(response: Mapping[str, Any]) -> Any:
    details = response.get("incomplete_details")
    return details.get("reason") if isinstance(details, Mapping) else None


def truncated(response: Mapping[str, Any]) -> bool:
    """Whether the response ended at the output token limit (``incomplete``, for
    ``max_output_tokens``)."""
    return response.get("status") == "incomplete" and (
        _incomplete_reason(response) == "max_output_tokens"
    )


def arguments_object(call: Mapping[str, Any]) -> dict[str, Any] | None:
    """A function call's arguments, when they are one JSON object (a call a client can
    run); else None."""
    arguments = call.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _ended(response: Mapping[str, Any]) -> list[Finding]:
    """A response that ended as an answer does: ``completed``, or ``incomplete`` at the
    token limit (the kit caps every answer, see ``Target.max_output_tokens``)."""
    status = response.get("status")
    if status == "completed" or truncated(response):
        return []
    error = response.get("error")
    detail = f" ({error.get('message')})" if isinstance(error, Mapping) else ""
    return [("RESPONSE_STATUS", f"status {status!r}, expected completed{detail}")]


def _calls(response: Mapping[str, Any]) -> list[Finding]:
    """Each function call well formed: a call id of its own, a name, JSON object arguments
    (but for the last item of a response cut at the token limit: the limit cut it)."""
    found: list[Finding] = []
    ids: set[str] = set()
    output = response.get("output")
    cut = output[-1] if truncated(response) and isinstance(output, list) and output else None
    for call in output_items(response, "function_call"):
        call_id, name = call.get("call_id"), call.get("name")
        if not isinstance(call_id, str) or not call_id:
            found.append(("TOOL_CALL_ID", f"function call {name!r} has no call_id"))
        elif call_id in ids:
            found.append(("TOOL_CALL_ID", f"two function calls share call_id {call_id!r}"))
        else:
            ids.add(call_id)
        arguments = call.get("arguments")
        if arguments_object(call) is None and call is not cut:
            glued = isinstance(arguments, str) and "}{" in arguments.replace(" ", "")
            rule = "TOOL_CALLS_GLUED" if glued else "TOOL_ARGUMENTS"
            message = f"function call {name!r}: arguments are not one JSON object"
            found.append((rule, f"{message}: {str(arguments)[:120]!r}"))
    return found


def _text(response: Mapping[str, Any]) -> list[Finding] | str:
    found = _ended(response)
    if not found and not output_text(response):
        if truncated(response):
            return "the token limit came before any text"
        found.append(("EMPTY_ANSWER", "a completed response with no output_text"))
    return found


def _length(response: Mapping[str, Any]) -> list[Finding] | str:
    status = response.get("status")
    if status == "incomplete":
        if truncated(response):
            return []
        reason = _incomplete_reason(response)
        return [
            (
                "INCOMPLETE_REASON",
                f"incomplete_details.reason {reason!r}, expected 'max_output_tokens'",
            )
        ]
    usage = response.get("usage")
    used = usage.get("output_tokens") if isinstance(usage, Mapping) else None
    if status == "completed" and isinstance(used, int) and used >= LENGTH_LIMIT:
        return [
            (
                "LENGTH_REPORTED_COMPLETED",
                f"{used} output tokens against max_output_tokens "
                f"{LENGTH_LIMIT}, reported 'completed' instead of 'incomplete'",
            )
        ]
    if status == "completed":
        return "the model stopped on its own before the token limit"
    return _ended(response)


def _forced(response: Mapping[str, Any]) -> list[Finding] | str:
    found = _ended(response)
    calls = output_items(response, "function_call")
    if not calls:
        return found or "the model called no tool"
    names = [call.get("name") for call in calls]
    if "get_weather" not in names:
        found.append(("TOOL_CHOICE", f"tool_choice named get_weather; called {names}"))
    return found + _calls(response)


def _parallel(response: Mapping[str, Any]) -> list[Finding] | str:
    found = _ended(response) + _calls(response)
    calls = output_items(response, "function_call")
    if len(calls) < 2 and not any(rule == "TOOL_CALLS_GLUED" for rule, _ in found):
        return found or "the model made fewer than two calls"
    return found


def _tool_result(response: Mapping[str, Any]) -> list[Finding] | str:
    return _ended(response) + _calls(response)


def _json_schema(response: Mapping[str, Any]) -> list[Finding] | str:
    found = _ended(response)
    if found:
        return found
    if truncated(response):
        return "the token limit cut the JSON"
    text = output_text(response)
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("answer"), str):
        return [("JSON_SCHEMA_OUTPUT", f"the text does not fit the strict schema: {text[:120]!r}")]
    return []


def _reasoning(response: Mapping[str, Any]) -> list[Finding] | str:
    found = _ended(response)
    if not output_items(response, "reasoning"):
        return found or "the model gave no reasoning"
    return found


@dataclass(frozen=True)
class Scenario:
    """One scenario: ``body(model)`` the request of its (last) turn; ``needs_call``: a
    first turn that must call ``get_weather`` comes before it (a tool result follows)."""

    name: str
    summary: str
    body: Callable[[str], dict[str, Any]]
    expect: Callable[[Mapping[str, Any]], list[Finding] | str]  # str: not exercised, why
    needs_call: bool = False


def _ask(prompt: str, **fields: Any) -> Callable[[str], dict[str, Any]]:
    def body(model: str) -> dict[str, Any]:
        return {"model": model, "input": prompt, **fields}

    return body


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("text", "a plain text answer", _ask("Say hello in one short sentence."), _text),
    Scenario(
        "length",
        f"a length stop (max_output_tokens {LENGTH_LIMIT}) ends incomplete",
        _ask(
            "Write a long story about the sea, at least 300 words.", max_output_tokens=LENGTH_LIMIT
        ),
        _length,
    ),
    Scenario(
        "tool_forced",
        "a tool call forced by tool_choice",
        _ask(
            "What is the weather in Paris?",
            tools=[WEATHER_TOOL],
            tool_choice={"type": "function", "name": "get_weather"},
        ),
        _forced,
    ),
    Scenario(
        "tool_parallel",
        "two tool calls in one answer, each an item of its own",
        _ask(
            "Call get_weather for Paris and get_time for Tokyo, both at once.",
            tools=[WEATHER_TOOL, TIME_TOOL],
            parallel_tool_calls=True,
        ),
        _parallel,
    ),
    Scenario(
        "tool_result",
        "the answer to a tool result sent on the next turn",
        _ask("What is the weather in Paris?", tools=[WEATHER_TOOL]),
        _tool_result,
        needs_call=True,
    ),
    Scenario(
        "json_schema",
        "output under a strict JSON schema",
        _ask("What is the capital of France? Answer in JSON.", text={"format": ANSWER_SCHEMA}),
        _json_schema,
    ),
    Scenario(
        "reasoning",
        "reasoning items, where the model gives any",
        _ask(
            "What is 17 times 23? Think it through.", reasoning={"effort": "low", "summary": "auto"}
        ),
        _reasoning,
    ),
)
BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}
# scenarios judged on their own terms (no stream/JSON forms)
BAD_REQUEST = "bad_request"
STATEFUL = "stateful"
ALL_NAMES = (*BY_NAME, BAD_REQUEST, STATEFUL)
