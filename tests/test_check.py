"""The conformance kit (``responses-stream check``) over real HTTP on 127.0.0.1.

Against the gateway in front of the scripted chat upstream, in both dialects, every
scenario the model exercises passes.  Against a server that breaks the protocol the
way real servers do (a proxy in front of that gateway that rewrites its answers), the
kit names each fault by rule id and exits 1.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gateway_support import gateway
from gateway_upstream import ModelUpstream
from http_support import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from responses_stream._runtime.check.run import (
    FAIL,
    NOT_RUN,
    PASS,
    Outcome,
    Target,
    run_checks,
    selected,
)

EVERY = selected(stateful=True)


@pytest.fixture(scope="module")
def gw() -> Iterator[str]:
    fake = ModelUpstream()
    with fake.serve() as url, gateway(url + "/v1") as base:
        yield base


def verdicts(outcomes: list[Outcome]) -> dict[tuple[str, str], str]:
    return {(o.scenario, o.form): o.verdict for o in outcomes}


@pytest.mark.parametrize(
    "dialect,base", [("openai", "/v1"), ("openresponses", "/openresponses/v1")]
)
def test_every_scenario_passes_through_the_gateway(gw: str, dialect: str, base: str) -> None:
    outcomes = run_checks(Target(gw + base, "fake-parallel", dialect=dialect), EVERY)
    failed = [(o.scenario, o.form, o.findings) for o in outcomes if o.verdict != PASS]
    assert failed == []
    # each scenario in both forms, bad_request and stateful once each
    assert len(outcomes) == 2 * (len(EVERY) - 2) + 2


def test_a_scenario_the_model_skips_is_not_exercised_never_passed(gw: str) -> None:
    # the scripted model makes one tool call unless its name asks for two
    outcomes = run_checks(Target(gw + "/v1", "fake-model"), ["tool_parallel", "tool_forced"])
    assert verdicts(outcomes) == {
        ("tool_parallel", "stream"): NOT_RUN,
        ("tool_parallel", "json"): NOT_RUN,
        ("tool_forced", "stream"): PASS,
        ("tool_forced", "json"): PASS,
    }
    # a model that ignores tools exercises neither
    outcomes = run_checks(Target(gw + "/v1", "fake-text"), ["tool_forced", "tool_result"])
    assert set(verdicts(outcomes).values()) == {NOT_RUN}


# -- a server with faults ----------------------------------------------------------------
TERMINAL_LINE = re.compile(r"^event: response\.incomplete$", re.MULTILINE)


def _fault(model: str, sse: str) -> str:
    """The gateway's stream, broken as ``model`` names."""
    if model == "drop-done":  # done events missing at the end of the stream
        blocks = sse.split("\n\n")
        kept = [b for b in blocks if "event: response.output_text.done" not in b]
        return "\n\n".join(kept)
    if model == "length-completed":  # a truncated answer reported as completed
        sse = TERMINAL_LINE.sub("event: response.completed", sse)
        return sse.replace('"type":"response.incomplete"', '"type":"response.completed"').replace(
            '"status":"incomplete"', '"status":"completed"'
        )
    if model == "delta-first":  # text deltas before their content part opens
        blocks = sse.split("\n\n")
        part = next(n for n, b in enumerate(blocks) if "response.content_part.added" in b)
        delta = next(n for n, b in enumerate(blocks) if "response.output_text.delta" in b)
        blocks[part], blocks[delta] = blocks[delta], blocks[part]
        return "\n\n".join(blocks)
    return sse


def faulty_app(gw: str) -> Starlette:
    """Answers as the gateway does, with the fault the posted model names."""

    async def responses(request: Request) -> Response:
        body = await request.json()
        model = body["model"]
        if body.get("tools") and any(t.get("type") == "no_such_tool_type" for t in body["tools"]):
            return JSONResponse({"detail": "unknown tool"}, 422)  # not the OpenAI shape
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(gw + "/v1/responses", json={**body, "model": "fake-model"})
        if not body.get("stream"):
            return Response(answer.content, answer.status_code, media_type="application/json")
        sse = _fault(model, answer.text)
        return Response(sse, answer.status_code, media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])


@pytest.fixture(scope="module")
def faulty(gw: str) -> Iterator[str]:
    with serve(faulty_app(gw)) as url:
        yield url + "/v1"


@pytest.mark.parametrize(
    "model,scenario,rules",
    [
        ("drop-done", "text", {"MISSING_DONE"}),  # the SDK reads on
        ("delta-first", "text", {"SDK_REJECTED"}),
        ("length-completed", "length", {"LENGTH_REPORTED_COMPLETED"}),
    ],
)
def test_the_faults_of_a_server_are_named_by_rule(
    faulty: str, model: str, scenario: str, rules: set[str]
) -> None:
    [streamed, plain] = run_checks(Target(faulty, model), [scenario])
    assert streamed.verdict == FAIL, streamed
    assert rules <= set(streamed.rules), streamed.findings
    assert streamed.first_failing
    assert plain.verdict == PASS  # the JSON answer is untouched


def test_an_error_not_in_the_openai_shape_fails_bad_request(faulty: str) -> None:
    [outcome] = run_checks(Target(faulty, "m"), ["bad_request"])
    assert outcome.verdict == FAIL and outcome.rules == ["ERROR_SHAPE"]


def test_the_command_prints_a_table_writes_junit_and_exits_1_on_a_fault(
    faulty: str, gw: str, tmp_path: Path
) -> None:
    report = tmp_path / "check.xml"
    cmd = [sys.executable, "-m", "responses_stream", "check", faulty, "--model", "drop-done"]
    done = subprocess.run(
        [*cmd, "--only", "text,bad_request", "--junit", str(report)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    rows = [tuple(line.split()[:3]) for line in done.stdout.splitlines()[2:5]]
    assert rows == [
        ("text", "stream", "FAIL"),
        ("text", "json", "pass"),
        ("bad_request", "json", "FAIL"),
    ]
    assert "MISSING_DONE" in done.stdout
    suite = ET.parse(report).getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("3", "2")

    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "responses_stream",
            "check",
            gw + "/v1",
            "--model",
            "fake-model",
            "--only",
            "text",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    parsed = json.loads(ok.stdout)
    assert parsed["passed"] is True
    assert [o["verdict"] for o in parsed["outcomes"]] == [PASS, PASS]


def test_a_bad_option_is_a_usage_error() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "responses_stream",
            "check",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--only",
            "no_such",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "no scenario 'no_such'" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unreachable_server_fails_each_scenario_in_one_line() -> None:
    outcomes = run_checks(Target("http://127.0.0.1:9/v1", "m", timeout=5), ["text"])
    assert [(o.verdict, o.rules) for o in outcomes] == [(FAIL, ["UNREACHABLE"])]
