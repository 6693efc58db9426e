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
    MODEL,
    NOT_RUN,
    PASS,
    Outcome,
    Target,
    run_checks,
    selected,
)

pytest_plugins = ["pytester"]
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


def test_a_model_that_ignores_response_format_is_not_a_protocol_fault(gw: str) -> None:
    """The scripted model named ``freeform`` answers plain text under a strict schema
    through a compliant server: the verdict names the model, and the run passes."""
    [stream, json_form] = run_checks(Target(gw + "/v1", "fake-freeform"), ["json_schema"])
    for outcome in (stream, json_form):
        assert (outcome.verdict, outcome.rules) == (MODEL, ["JSON_SCHEMA_OUTPUT"])
    cmd = [sys.executable, "-m", "responses_stream", "check", gw + "/v1", "--model"]
    done = subprocess.run(
        [*cmd, "fake-freeform", "--only", "json_schema"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [tuple(line.split()[:3]) for line in done.stdout.splitlines()[2:4]]
    assert rows == [("json_schema", "stream", MODEL), ("json_schema", "json", MODEL)]
    assert done.stdout.rstrip().endswith(
        "0 passed, 0 failed, 0 not exercised, 2 where the model, not the protocol, fell short"
    )


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


# -- the pytest plugin -------------------------------------------------------------------


def test_the_pytest_plugin_runs_a_test_per_scenario_and_form(
    gw: str, faulty: str, pytester: pytest.Pytester
) -> None:
    passed = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--responses-url",
        gw + "/v1",
        "--responses-model",
        "fake-model",
        "-v",
        timeout=300,
    )
    # seven scenarios in two forms and bad_request; two calls at once are not exercised
    passed.assert_outcomes(passed=13, skipped=2)
    passed.stdout.fnmatch_lines(["responses-conformance::text?stream? PASSED*"])
    assert passed.ret == 0

    failed = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--responses-url",
        faulty,
        "--responses-model",
        "drop-done",
        "-k",
        "text or bad_request",
        timeout=300,
    )
    failed.assert_outcomes(passed=1, failed=2)
    failed.stdout.fnmatch_lines(["*MISSING_DONE*", "*ERROR_SHAPE*"])


def test_without_its_option_the_plugin_adds_no_test_and_imports_nothing(
    pytester: pytest.Pytester,
) -> None:
    # a project testing its own copy of the package must get its own on import
    pytester.makepyfile(
        "import sys\n"
        "def test_own():\n"
        "    assert 'responses_stream_pytest' in sys.modules\n"
        "    assert 'responses_stream' not in sys.modules\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "option,message",
    [
        (["--prompt", "no_such=hi"], "a prompt is NAME=TEXT"),
        (["--prompt", "text"], "a prompt is NAME=TEXT"),
        (["--extra-body", "{nope"], "--extra-body is not JSON"),
        (["--extra-body", "[1]"], "--extra-body must be a JSON object"),
        (["--max-output-tokens", "-1"], "--max-output-tokens must be 0"),
        (["--timeout", "0"], "--timeout must be a positive"),
    ],
)
def test_bad_kit_options_are_usage_errors(option: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "responses_stream", "check", "http://127.0.0.1:9/v1"]
        + ["--model", "m", *option],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_prompts_extra_fields_and_the_token_cap_reach_the_server() -> None:
    fake = ModelUpstream()
    with fake.serve() as url, gateway(url + "/v1") as base:
        target = Target(
            base + "/v1",
            "fake-model",
            max_output_tokens=40,
            prompts={"text": "Say only this."},
            extra_body={"temperature": 0},
        )
        [streamed, plain] = run_checks(target, ["text"])
        assert (streamed.verdict, plain.verdict) == (PASS, PASS)
        sent = fake.requests[-1].body  # the chat request the gateway made of the last one
        assert sent["temperature"] == 0 and sent["max_completion_tokens"] == 40
        assert sent["messages"][-1]["content"] == "Say only this."


def test_a_call_cut_by_the_token_limit_is_not_judged_but_an_earlier_one_is() -> None:
    from responses_stream._runtime.check.scenarios import BY_NAME

    def call(n: int, arguments: str) -> dict[str, str]:
        return {
            "type": "function_call",
            "call_id": f"call_{n}",
            "name": "get_weather",
            "arguments": arguments,
        }

    cut = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    parallel = BY_NAME["tool_parallel"].expect
    assert parallel({**cut, "output": [call(1, '{"city": "Paris"}'), call(2, '{"ci')]}) == []
    found = parallel({**cut, "output": [call(1, '{"ci'), call(2, '{"city": "Paris"}')]})
    assert [rule for rule, _ in found] == ["TOOL_ARGUMENTS"]
    glued = {"status": "completed", "output": [call(1, '{"city": "A"}{"city": "B"}')]}
    assert [rule for rule, _ in parallel(glued)] == ["TOOL_CALLS_GLUED"]


def test_a_rule_broken_many_times_is_reported_once_with_its_count() -> None:
    outcome = Outcome("text", "stream", FAIL, [("A", "first"), ("B", "b"), ("A", "second")])
    assert outcome.lines() == ["A: first (and 1 more)", "B: b"]
    assert outcome.to_dict()["findings"][0] == {"rule": "A", "count": 2, "first_message": "first"}


def test_every_rule_the_kit_reports_is_listed_and_documented() -> None:
    from responses_stream._runtime.check.rules import KIT_RULES
    from responses_stream._runtime.consumers.validate import RULES

    root = Path(__file__).resolve().parents[1]
    source = "".join(
        p.read_text(encoding="utf-8")
        for p in (root / "generated/responses_stream/_runtime/check").glob("*.py")
    )
    # a finding's rule: a tuple's first string, or chosen by a conditional
    found = re.findall(r'(?:\(\s*|rule = |else |rule == )"([A-Z][A-Z_]{3,})"', source)
    named = set(found) - {"POST", "OPENAI_API_KEY"} - set(RULES)
    assert named == set(KIT_RULES)
    readme = (root / "docs" / "conformance.md").read_text(encoding="utf-8")
    assert [rule for rule in KIT_RULES if f"| `{rule}` |" not in readme] == []
    done = subprocess.run(
        [sys.executable, "-m", "responses_stream", "check", "--rules"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert [line.split()[0] for line in done.stdout.splitlines()[: len(KIT_RULES)]] == list(
        KIT_RULES
    )
