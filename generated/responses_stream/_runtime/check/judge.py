"""Three readers judge each answer: the validator (``--strict``, rule ids), the official
openai SDK reading it as strictly as it can, and the accumulator, whose folded output
must be the terminal response's.

The SDK reads the very bytes the server sent: they are replayed to it through a
transport of its own HTTP client (``httpx2``), so it parses the SSE with its own
decoder, validates each event (``_strict_response_validation``) and folds them with
its stream state, which raises where a strict client breaks.  It reads the OpenAI dialect only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai

from ..consumers.accumulate import AccumulateError, ResponseAccumulator
from ..consumers.validate import ERROR, StreamValidator
from ..core.sse_parse import SSEParser
from .scenarios import Finding

TERMINAL = ("response.completed", "response.incomplete", "response.failed")
# the SDK's own parameters of responses.stream(); anything else goes in extra_body
SDK_PARAMS = (
    "input",
    "model",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_output_tokens",
    "reasoning",
    "text",
    "previous_response_id",
    "store",
    "instructions",
)


@dataclass
class Judged:
    """What the readers found in one answer: broken rules, where the first error is, and
    the final response (the terminal event's, or the JSON body)."""

    findings: list[Finding] = field(default_factory=list)
    first_failing: str = ""  # "#index type" of the first event in error
    response: dict[str, Any] | None = None
    events: int = 0


def judge_stream(raw: bytes, body: Mapping[str, Any], dialect: str) -> Judged:
    """Judge a streamed answer's bytes; ``body`` is the request that produced it."""
    judged = Judged()
    validator = StreamValidator(dialect, strict=True)
    validator.feed_sse([raw], input="sse")
    payloads = _payloads(raw)
    judged.events = len(payloads)
    errors = [v for v in validator.finish() if v.severity == ERROR]
    for violation in errors:
        judged.findings.append((violation.rule, violation.message))
    if errors:
        index = errors[0].index
        kind = payloads[index].get("type") if 0 <= index < len(payloads) else "end of stream"
        judged.first_failing = f"#{index} {kind}"
    terminal = next(
        (p for p in reversed(payloads) if p.get("type") in TERMINAL),
        None,
    )
    response = terminal.get("response") if terminal is not None else None
    judged.response = response if isinstance(response, dict) else None
    judged.findings += _accumulated(payloads, judged.response, dialect)
    if dialect == "openai":
        completed = terminal is not None and terminal.get("type") == "response.completed"
        judged.findings += sdk_stream(raw, body, final=completed)
    return judged


def judge_json(status: int, answer: Any, body: Mapping[str, Any], dialect: str) -> Judged:
    """Judge a JSON (not streamed) answer."""
    judged = Judged()
    if status != 200:
        judged.findings.append(("HTTP_STATUS", f"HTTP {status}: {str(answer)[:200]}"))
        return judged
    if not isinstance(answer, dict) or answer.get("object") != "response":
        judged.findings.append(
            ("NOT_A_RESPONSE", f"the body is not a Response: {str(answer)[:200]}")
        )
        return judged
    judged.response = answer
    if dialect == "openai":
        judged.findings += sdk_json(answer, body)
    return judged


def _payloads(raw: bytes) -> list[dict[str, Any]]:
    parser = SSEParser(max_line_bytes=None, max_event_bytes=None)
    out: list[dict[str, Any]] = []
    for message in [*parser.feed(raw), *parser.close()]:
        if message.is_done:
            continue
        try:
            payload = json.loads(message.data)
        except ValueError:
            continue
        if isinstance(payload, dict):
            out.append(payload)
    return out


def _accumulated(
    payloads: list[dict[str, Any]], response: Mapping[str, Any] | None, dialect: str
) -> list[Finding]:
    acc = ResponseAccumulator(dialect)
    for n, payload in enumerate(payloads):
        try:
            acc.feed(payload)
        except AccumulateError as exc:
            return [("ACCUMULATE", f"event #{n} ({payload.get('type')}) cannot be folded: {exc}")]
    if response is None or not isinstance(response.get("output"), list):
        return []
    folded = acc.snapshot.get("output")
    where = _first_difference(folded, response["output"], "output")
    if where is not None:
        return [
            (
                "ACCUMULATED_OUTPUT",
                f"the events fold to another output than the terminal response's, first at {where}",
            )
        ]
    return []


def _first_difference(a: Any, b: Any, path: str) -> str | None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            found = _first_difference(a.get(key), b.get(key), f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} ({len(a)} against {len(b)} entries)"
        for n, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{path}[{n}]")
            if found is not None:
                return found
        return None
    return None if a == b else path


def _client(raw: bytes, content_type: str) -> openai.OpenAI:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": content_type}, content=raw)

    http = httpx2.Client(transport=httpx2.MockTransport(answer))
    return openai.OpenAI(
        base_url="http://replay.invalid/v1",
        api_key="replay",
        http_client=http,
        max_retries=0,
        _strict_response_validation=True,
    )


def _sdk_kwargs(body: Mapping[str, Any]) -> dict[str, Any]:
    given = {k: v for k, v in body.items() if k in SDK_PARAMS}
    extra = {k: v for k, v in body.items() if k not in SDK_PARAMS and k != "stream"}
    return {**given, "extra_body": extra} if extra else given


def sdk_stream(raw: bytes, body: Mapping[str, Any], *, final: bool = True) -> list[Finding]:
    """The SDK's ``responses.stream()`` over ``raw``: each event validated and folded,
    and with ``final`` (the stream ended ``response.completed``, the one terminal event
    the SDK gives a final response for) its final response taken; what it raises is the
    finding."""

    def read(client: openai.OpenAI) -> None:
        with client.responses.stream(**_sdk_kwargs(body)) as stream:
            for _ in stream:
                pass
            if final:
                stream.get_final_response()

    return _sdk_reads(raw, "text/event-stream", read)


def sdk_json(answer: Mapping[str, Any], body: Mapping[str, Any]) -> list[Finding]:
    """The SDK's ``responses.create()`` reading the JSON answer strictly."""

    def read(client: openai.OpenAI) -> None:
        client.responses.create(**_sdk_kwargs(body))

    return _sdk_reads(json.dumps(answer).encode(), "application/json", read)


def _sdk_reads(
    raw: bytes, content_type: str, read: Callable[[openai.OpenAI], None]
) -> list[Finding]:
    """``read`` run with a client that is answered ``raw``; what the SDK raises is the
    finding (whatever it raises is what its user would see)."""
    client = _client(raw, content_type)
    try:
        read(client)
    except Exception as exc:
        return [("SDK_REJECTED", _raised(exc))]
    finally:
        client.close()
    return []


def _raised(exc: BaseException) -> str:
    """What the SDK raised; for a validation error, its first errors (field and what is
    wrong), leaving out the members of an event union whose ``type`` did not match."""
    text = f"{type(exc).__name__}: {str(exc)[:200]}"
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors):
        every = errors()
        # a union member whose ``type`` literal did not match is not the event's model
        others = {
            e["loc"][0]
            for e in every
            if e.get("type") == "literal_error" and e["loc"][1:] == ("type",)
        }
        found = [e for e in every if not e.get("loc") or e["loc"][0] not in others] or every
        shown = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in found]
        text += f" ({'; '.join(shown[:3])}{'; ...' if len(shown) > 3 else ''})"
    elif cause is not None:
        text += f" ({str(cause)[:200]})"
    return text
