"""Drive the scenarios against a live Responses endpoint over HTTP and judge each answer.

Each scenario of :data:`~.scenarios.SCENARIOS` runs in two forms, streamed and not
(``stream`` and ``json``); ``bad_request`` sends an unknown tool type and expects the
OpenAI error shape; ``stateful`` (with ``stateful=True``) stores a response, reads it
back, continues it with ``previous_response_id`` and deletes it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2

from ..core.errors import BadValue
from .judge import Judged, judge_json, judge_stream
from .rules import MODEL_RULES
from .scenarios import (
    ALL_NAMES,
    BAD_REQUEST,
    BY_NAME,
    NOT_EXERCISED,
    SCENARIOS,
    STATEFUL,
    TOOL_RESULT,
    Finding,
    Scenario,
    arguments_object,
    output_items,
)

PASS, FAIL, NOT_RUN = "pass", "fail", NOT_EXERCISED
MODEL = "model"  # the protocol held; the model's answer broke only MODEL_RULES
FORMS = ("stream", "json")
# enough for any scenario's answer; a model that rambles on is cut here, not at its context
DEFAULT_MAX_OUTPUT_TOKENS = 256


@dataclass
class Outcome:
    """One scenario in one form: its verdict, the rules it broke, where it first broke."""

    scenario: str
    form: str
    verdict: str
    findings: list[Finding] = field(default_factory=list)
    first_failing: str = ""
    note: str = ""

    @property
    def rules(self) -> list[str]:
        return [rule for rule, _, _ in self.by_rule()]

    def by_rule(self) -> list[tuple[str, int, str]]:
        """Each rule broken: how often, and its first message (a server that leaves a
        field out of every delta breaks one rule a hundred times)."""
        counts: dict[str, int] = {}
        first: dict[str, str] = {}
        for rule, message in self.findings:
            counts[rule] = counts.get(rule, 0) + 1
            first.setdefault(rule, message)
        return [(rule, counts[rule], first[rule]) for rule in counts]

    def lines(self) -> list[str]:
        """One line a rule: ``RULE: first message (and N more)``."""
        return [
            f"{rule}: {message}" + (f" (and {count - 1} more)" if count > 1 else "")
            for rule, count, message in self.by_rule()
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "form": self.form,
            "verdict": self.verdict,
            "rules": self.rules,
            "findings": [
                {"rule": rule, "count": count, "first_message": message}
                for rule, count, message in self.by_rule()
            ],
            "first_failing_event": self.first_failing or None,
            "note": self.note or None,
        }


@dataclass(frozen=True)
class Target:
    """Where and how to reach the server under test."""

    base_url: str  # the dialect's base, ``.../v1``
    model: str
    api_key: str | None = None
    dialect: str = "openai"
    timeout: float = 120.0
    # each answer's max_output_tokens, where a scenario sets none (None: the server's own)
    max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS
    # scenario name -> the user prompt to send instead of the scenario's own (a small
    # model may need words of its own to call a tool or to reason)
    prompts: Mapping[str, str] = field(default_factory=dict)
    # fields added to every request body (sampling settings: {"temperature": 0})
    extra_body: Mapping[str, Any] = field(default_factory=dict)


def make_target(
    url: str,
    model: str,
    *,
    api_key: str | None = None,
    dialect: str = "openai",
    timeout: float = 120.0,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    prompts: Iterable[str] = (),
    extra_body: str | None = None,
) -> Target:
    """The target options describe (the command's and the pytest plugin's): the key
    defaults to ``OPENAI_API_KEY``, a token limit of 0 is none, ``prompts`` are
    ``NAME=TEXT`` and ``extra_body`` JSON; ValueError for a bad one."""
    return Target(
        base_url=url,
        model=model,
        api_key=api_key or os.environ.get("OPENAI_API_KEY") or None,
        dialect=dialect,
        timeout=timeout,
        max_output_tokens=max_output_tokens or None,
        prompts=parse_prompts(prompts),
        extra_body=parse_extra_body(extra_body),
    )


def parse_extra_body(given: str | None) -> dict[str, Any]:
    """``--extra-body``: a JSON object; ValueError saying what is wrong."""
    if not given:
        return {}
    try:
        value = json.loads(given)
    except ValueError as exc:
        raise BadValue(f"--extra-body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadValue("--extra-body must be a JSON object")
    return value


def parse_prompts(given: Iterable[str]) -> dict[str, str]:
    """``NAME=TEXT`` options as a prompt a scenario; ValueError naming a bad one."""
    out = {}
    for option in given:
        name, sep, text = option.partition("=")
        if not sep or name not in BY_NAME or not text:
            raise BadValue(
                f"a prompt is NAME=TEXT with NAME one of {', '.join(BY_NAME)}, not {option!r}"
            )
        out[name] = text
    return out


def forms_of(name: str) -> tuple[str, ...]:
    """The forms scenario ``name`` runs in: streamed and not, or one (``json``) for the
    two judged on their own terms."""
    return FORMS if name in BY_NAME else ("json",)


def selected(
    only: Iterable[str] = (), skip: Iterable[str] = (), stateful: bool = False
) -> list[str]:
    """The scenario names to run, in the kit's order; ValueError naming an unknown one."""
    only, skip = list(only), list(skip)
    for name in [*only, *skip]:
        if name not in ALL_NAMES:
            raise BadValue(f"no scenario {name!r} (scenarios: {', '.join(ALL_NAMES)})")
    names = [n for n in ALL_NAMES if n != STATEFUL or stateful or STATEFUL in only]
    return [n for n in names if (not only or n in only) and n not in skip]


class Checker:
    """Runs scenarios against one :class:`Target`, with a client of the SDK's HTTP
    library (``httpx2``) of its own."""

    def __init__(self, target: Target) -> None:
        self.target = target
        headers = {"authorization": f"Bearer {target.api_key}"} if target.api_key else {}
        self.http = httpx2.Client(
            base_url=target.base_url.rstrip("/"),
            headers=headers,
            timeout=target.timeout,
            trust_env=False,
            # a connection of its own for each request: a server that closes an idle
            # connection as the next request goes out (llama-server does) would
            # otherwise fail that request as unreachable
            limits=httpx2.Limits(max_keepalive_connections=0),
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Checker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, names: Iterable[str]) -> list[Outcome]:
        out: list[Outcome] = []
        for name in names:
            out += self.run_one(name)
        return out

    def run_one(self, name: str, forms: Iterable[str] | None = None) -> list[Outcome]:
        """The outcomes of scenario ``name``: one per form (by default each of
        :func:`forms_of`)."""
        try:
            if name == BAD_REQUEST:
                return [self._bad_request()]
            if name == STATEFUL:
                return [self._stateful()]
            return [self._scenario(BY_NAME[name], form) for form in forms or forms_of(name)]
        except httpx2.HTTPError as exc:
            finding = ("UNREACHABLE", f"{type(exc).__name__}: {exc}")
            return [Outcome(name, "-", FAIL, [finding])]

    # -- the scenarios ------------------------------------------------------------
    def _scenario(self, scenario: Scenario, form: str) -> Outcome:
        body = self._capped(scenario.body(self.target.model))
        if scenario.name in self.target.prompts:
            body["input"] = self.target.prompts[scenario.name]
        if scenario.needs_call:
            first = self._ask(
                {**body, "tool_choice": {"type": "function", "name": "get_weather"}}, form
            )
            failed = self._failed(scenario.name, form, first)
            if failed is not None:
                return failed
            assert first.response is not None
            # the calls a client could run: a call the token limit cut is not one
            calls = [
                c for c in output_items(first.response, "function_call") if arguments_object(c)
            ]
            if not calls:
                return Outcome(scenario.name, form, NOT_RUN, note="the first turn called no tool")
            body = {
                **body,
                "input": [
                    {"role": "user", "content": body["input"]},
                    *[dict(c) for c in calls],
                    *[
                        {
                            "type": "function_call_output",
                            "call_id": c.get("call_id"),
                            "output": TOOL_RESULT,
                        }
                        for c in calls
                    ],
                ],
            }
        judged = self._ask(body, form)
        failed = self._failed(scenario.name, form, judged)
        if failed is not None:
            return failed
        assert judged.response is not None
        expected = scenario.expect(judged.response)
        if isinstance(expected, str):
            return Outcome(scenario.name, form, NOT_RUN, note=expected)
        if expected and all(rule in MODEL_RULES for rule, _ in expected):
            note = "the model did not follow the request, the protocol held"
            return Outcome(scenario.name, form, MODEL, expected, note=note)
        if expected:
            return Outcome(scenario.name, form, FAIL, expected, first_failing="final response")
        return Outcome(
            scenario.name, form, PASS, note=f"{judged.events} events" if judged.events else ""
        )

    def _capped(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` with the target's output token limit, unless it sets its own, and
        the target's extra fields."""
        limit = self.target.max_output_tokens
        capped = body if limit is None else {"max_output_tokens": limit, **body}
        return {**capped, **self.target.extra_body}

    def _failed(self, name: str, form: str, judged: Judged) -> Outcome | None:
        """The failing outcome of an answer the readers rejected, or that has no response."""
        if judged.findings:
            return Outcome(name, form, FAIL, judged.findings, judged.first_failing)
        if judged.response is None:
            return Outcome(name, form, FAIL, [("NO_RESPONSE", "the answer holds no response")])
        return None

    def _ask(self, body: Mapping[str, Any], form: str) -> Judged:
        dialect = self.target.dialect
        if form == "json":
            answer = self.http.post("/responses", json={**body, "stream": False})
            try:
                parsed: Any = answer.json()
            except ValueError:
                parsed = answer.text
            return judge_json(answer.status_code, parsed, body, dialect)
        with self.http.stream("POST", "/responses", json={**body, "stream": True}) as answer:
            raw = answer.read()
            kind = answer.headers.get("content-type", "")
            status = answer.status_code
        if status != 200:
            return Judged([("HTTP_STATUS", f"HTTP {status}: {raw[:200]!r}")])
        if not kind.startswith("text/event-stream"):
            return Judged([("NOT_EVENT_STREAM", f"content-type {kind!r}")])
        return judge_stream(raw, body, dialect)

    def _bad_request(self) -> Outcome:
        body = {
            "model": self.target.model,
            "input": "hello",
            "tools": [{"type": "no_such_tool_type", "name": "x"}],
        }
        answer = self.http.post("/responses", json=body)
        findings = error_shape(answer.status_code, answer.content)
        return Outcome(BAD_REQUEST, "json", FAIL if findings else PASS, findings)

    def _stateful(self) -> Outcome:
        http, model = self.http, self.target.model
        findings: list[Finding] = []
        stored_body = {"model": model, "input": "Remember the word 'harbor'.", "store": True}
        first = self._ask(self._capped(stored_body), "json")
        failed = self._failed(STATEFUL, "json", first)
        if failed is not None:
            return failed
        assert first.response is not None
        rid = str(first.response.get("id"))
        got = http.get(f"/responses/{rid}")
        stored = _json(got.content)
        if got.status_code != 200 or not isinstance(stored, dict) or stored.get("id") != rid:
            findings.append(("STORED_GET", f"GET /responses/{rid}: HTTP {got.status_code}"))
        elif stored.get("output") != first.response.get("output"):
            findings.append(("STORED_GET", "the stored response's output is not the one answered"))
        body = self._capped(
            {"model": model, "input": "Which word was it?", "previous_response_id": rid}
        )
        follow = self._ask(body, "stream")
        findings += follow.findings
        if follow.response is not None and follow.response.get("previous_response_id") != rid:
            findings.append(
                ("PREVIOUS_RESPONSE_ID", "the continuation does not echo previous_response_id")
            )
        gone = http.delete(f"/responses/{rid}")
        deleted = _json(gone.content)
        if (
            gone.status_code != 200
            or not isinstance(deleted, dict)
            or deleted.get("deleted") is not True
        ):
            findings.append(("STORED_DELETE", f"DELETE /responses/{rid}: HTTP {gone.status_code}"))
        after = http.get(f"/responses/{rid}")
        if after.status_code != 404:
            findings.append(
                ("STORED_DELETE", f"GET after DELETE: HTTP {after.status_code}, not 404")
            )
        else:
            findings += error_shape(after.status_code, after.content)
        return Outcome(STATEFUL, "json", FAIL if findings else PASS, findings)


def error_shape(status: int, content: bytes) -> list[Finding]:
    """An error answer in the OpenAI shape: a 4xx whose body is ``{"error": {message,
    type, param, code}}``."""
    if not 400 <= status < 500:
        return [("ERROR_STATUS", f"HTTP {status}, expected a 4xx")]
    body = _json(content)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return [("ERROR_SHAPE", f'the body is not {{"error": {{...}}}}: {content[:200]!r}')]
    missing = [k for k in ("message", "type", "param", "code") if k not in error]
    if missing or not isinstance(error.get("message"), str):
        return [("ERROR_SHAPE", f"the error object lacks {', '.join(missing) or 'a message'}")]
    return []


def _json(content: bytes) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return None


def run_checks(target: Target, names: Iterable[str]) -> list[Outcome]:
    with Checker(target) as checker:
        return checker.run(names)


__all__ = [
    "FORMS",
    "SCENARIOS",
    "Checker",
    "Outcome",
    "Target",
    "forms_of",
    "make_target",
    "run_checks",
    "selected",
]
