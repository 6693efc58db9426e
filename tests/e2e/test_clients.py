"""``make e2e``: the real clients, pinned, against ``serve`` on 127.0.0.1.

``serve`` runs as its own process in front of the scripted upstream
(``tests/gateway_upstream.py``, a Chat Completions server whose ``scripted`` models also
answer on ``/v1/responses``).  Each client runs in its own process, from the e2e
environment that ``make e2e`` builds from ``requirements-e2e.txt``
(``RESPONSES_STREAM_E2E_PYTHON``), under a timeout, with no network but 127.0.0.1.
Every prompt carries a fresh token that the upstream echoes, so an answer that holds it
proves the turn went through the gateway and back.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_support import free_port, stop
from gateway_upstream import ModelUpstream
from http_support import serve
from redis_server import RedisServer, redis_server

__all__ = ["redis_server"]  # a fixture used here
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLIENT_TIMEOUT = 120  # seconds for one client process
E2E_PYTHON = os.environ.get("RESPONSES_STREAM_E2E_PYTHON", "")
# a folder with tests/e2e/node's packages installed (npm ci of its lock)
E2E_NODE = Path(os.environ.get("RESPONSES_STREAM_E2E_NODE", HERE / "node"))
OFFLINE = {
    "NO_PROXY": "127.0.0.1,localhost",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "HF_HUB_OFFLINE": "1",
    "LANGCHAIN_TRACING_V2": "false",
}


@contextmanager
def serve_logged(upstream: str, log: Path, store: str = "memory:") -> Iterator[str]:
    """``serve`` as a process on a free port, its log (access lines too) in ``log``."""
    port = free_port()
    cmd = [sys.executable, "-m", "responses_stream", "serve", "--upstream", upstream]
    cmd += ["--port", str(port), "--store", store, "--log-level", "info"]
    with running(cmd, log, port, 30, cwd=ROOT / "generated") as url:
        yield url


@contextmanager
def running(cmd: list[str], log: Path, port: int, seconds: float, **kw: Any) -> Iterator[str]:
    """A server process, its output in ``log``, once its ``/health`` answers 200 (within
    ``seconds``); stopped at the end."""
    with started(cmd, log, port, seconds, **kw) as (url, _):
        yield url


@contextmanager
def started(
    cmd: list[str], log: Path, port: int, seconds: float, **kw: Any
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """As :func:`running`, with the process."""
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, **kw)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + seconds
        while True:  # llama-server answers 503 while its model loads
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"{Path(cmd[0]).name} did not come up"
            time.sleep(0.1)
        yield url, proc
    finally:
        stop(proc)


UPSTREAM = ModelUpstream()  # its requests are read by the Codex tests


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    log = tmp_path_factory.mktemp("e2e") / "serve.log"
    with serve(UPSTREAM.app) as upstream, serve_logged(upstream + "/v1", log) as url:
        yield url, log


def client_process(cmd: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """A client run offline, under the timeout, with no stdin."""
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        env={**os.environ, **OFFLINE, **env},
        stdin=subprocess.DEVNULL,
    )


def run_client(script: str, *args: str) -> dict[str, Any]:
    if script.endswith(".mjs"):  # beside its packages, so that its imports resolve
        shutil.copyfile(HERE / "node" / script, E2E_NODE / script)
        cmd = ["node", str(E2E_NODE / script), *args]
    else:
        cmd = [E2E_PYTHON, str(HERE / "clients" / script), *args]
    proc = client_process(cmd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# scenario -> (answers it ends with, whether a tool ran)
PYTHON = {
    "openai-responses": (2, False),
    "openai-chat": (2, False),
    "agents-http": (1, True),
    "agents-http-streamed": (1, True),
    "agents-websocket": (1, True),
    "agents-websocket-streamed": (1, True),
    "pydantic-ai-run": (1, True),
    "pydantic-ai-stream": (1, True),
    "langchain-responses": (3, True),
    "langchain-chat": (3, True),
}


@pytest.mark.parametrize("scenario", sorted(PYTHON))
def test_a_python_client(gateway: tuple[str, Path], scenario: str) -> None:
    url, log = gateway
    token = f"tok{secrets.token_hex(4)}"
    before = log.read_text().count('"WebSocket /v1/responses" [accepted]')
    result = run_client("py_clients.py", url + "/v1", scenario, token)
    answers, tool = PYTHON[scenario]
    assert len(result["texts"]) == answers
    for text in result["texts"]:
        assert text.startswith("Hello! You said: ") and token in text, result
    assert bool(result["calls"]) == tool, result
    if tool:
        assert all(call["name"] == "weather" for call in result["calls"])
    opened = log.read_text().count('"WebSocket /v1/responses" [accepted]') - before
    assert (opened > 0) == ("websocket" in scenario), "the transport was not the one asked"


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
def test_an_agent_keeps_its_memory_in_a_conversation(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """openai-agents' ``OpenAIConversationsSession``: three turns of an agent with a
    function tool; the conversation holds the agent's whole history afterwards, each turn's
    prompt, tool call, tool output, reasoning and answer, in order, on every store."""
    store = {"memory": "memory:", "sqlite": f"sqlite:///{tmp_path / 'store.db'}"}.get(kind)
    if store is None:
        server: RedisServer = request.getfixturevalue("redis_server")
        store = server.url + "?prefix=e2e-conversation:"
    token = f"tok{secrets.token_hex(4)}"
    with (
        serve(UPSTREAM.app) as upstream,
        serve_logged(upstream + "/v1", tmp_path / "serve.log", store) as url,
    ):
        result = run_client("py_clients.py", url + "/v1", "agents-conversation", token)
        conversation = result["conversation"]
        page = httpx.get(
            f"{url}/v1/conversations/{conversation}/items",
            params={"order": "asc", "limit": 100},
            headers={"authorization": "Bearer e2e-key"},
        ).json()
    assert len(result["texts"]) == 3
    for text in result["texts"]:
        assert text.startswith("Hello! You said: ") and token in text, result
    assert [c["name"] for c in result["calls"]] == ["weather"] * 3  # one call a turn
    kinds = [item["type"] for item in page["data"]]
    turn = ["message", "function_call", "function_call_output", "reasoning", "message"]
    assert kinds == turn * 3, kinds  # the scripted model reasons before it answers
    said = [
        part["text"]
        for item in page["data"]
        if item["type"] == "message" and item["role"] == "user"
        for part in item["content"]
    ]
    assert said == result["prompts"]
    answers = [i for i in page["data"] if i["type"] == "message" and i["role"] == "assistant"]
    assert [a["content"][0]["text"] for a in answers] == result["texts"]
    # what the session reads back is that history, item for item
    assert result["history"] == [{"type": i["type"], "id": i["id"]} for i in page["data"]]


def test_an_agent_runs_its_shell_editor_and_computer(gateway: tuple[str, Path]) -> None:
    """openai-agents' ``ShellTool`` (a local executor), ``ApplyPatchTool`` (an editor that
    records its operations) and ``ComputerTool`` (a fake computer) through the gateway in
    front of a chat model: the scripted model calls each once, with the run's token, and
    the agent ends with the answer; the model saw each result as a tool message."""
    url, _ = gateway
    token = f"tok{secrets.token_hex(4)}"
    result = run_client("py_clients.py", url + "/v1", "agents-typed-tools", token)
    calls = result["calls"]
    assert [c["name"] for c in calls] == ["shell", "apply_patch", "computer"], calls
    shell, patch, computer = calls
    assert shell["commands"] == [f"echo {token}"] and shell["out"] == [token]
    assert (patch["type"], patch["path"], patch["diff"]) == (
        "create_file",
        "e2e-typed.md",
        f"+{token}\n",
    )
    assert (computer["action"], computer["x"], computer["y"], computer["button"]) == (
        "click",
        10,
        20,
        "left",
    )
    assert result["items"] == [
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "computer_call",
        "computer_call_output",
        "reasoning",  # the scripted model thinks before it answers
        "message",
    ], result
    [text] = result["texts"]
    assert text.startswith(f"Done {token}: ") and token in text.split(": ", 1)[1]
    assert "create_file e2e-typed.md" in text  # the editor's result came back to the model
    # what the chat model got: the three functions, and the screenshot as an image
    last = [r for r in UPSTREAM.requests if r.body.get("model") == "e2e-scripted-typed"][-1]
    names = [t["function"]["name"] for t in last.body["tools"]]
    assert sorted(names) == ["apply_patch", "computer", "shell"]
    images = [
        part
        for m in last.body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for part in m["content"]
        if part.get("type") == "image_url"
    ]
    assert images and images[0]["image_url"]["url"].startswith("data:image/png;base64,")


# scenario -> (answers it ends with, tool calls it carries out, steps of its tool loop)
AI_SDK = {
    "text": (2, 0, None),
    "tool-loop": (1, 1, 2),
    "tool-loop-streamed": (1, 1, 2),
    "history": (2, 0, None),
    "structured": (0, 0, None),
}


@pytest.mark.parametrize("scenario", sorted(AI_SDK))
def test_the_ai_sdk(gateway: tuple[str, Path], scenario: str) -> None:
    url, _ = gateway
    token = f"tok{secrets.token_hex(4)}"
    result = run_client("aisdk.mjs", url + "/v1", scenario, token)
    answers, calls, steps = AI_SDK[scenario]
    assert len(result["texts"]) == answers
    for text in result["texts"]:
        assert text.startswith("Hello! You said: ") and token in text, result
    assert len(result["calls"]) == calls, result
    if steps is not None:
        assert result["steps"] == steps  # the call, then the answer to its result
    if scenario == "structured":
        assert result["object"] == {"answer": "ok"}  # parsed and checked by the SDK's schema


# -- Codex CLI ---------------------------------------------------------------------------
# Its default configuration but for the provider entry, and the switches that keep it
# offline (no update check, analytics, feedback, telemetry or plugins).
CODEX_CONFIG = """\
model = "{model}"
model_provider = "gw"
check_for_update_on_startup = false

[model_providers.gw]
name = "gateway"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "RESPONSES_STREAM_E2E_KEY"
supports_websockets = {websockets}

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[features]
plugins = false
apps = false
remote_plugin = false
"""


class Codex:
    """``codex exec`` in a home and a work folder of its own (outside /tmp, where it
    refuses to put its helper binaries)."""

    def __init__(self, url: str, model: str, websockets: bool = False) -> None:
        root = E2E_NODE.parent / "codex-runs" / secrets.token_hex(6)
        self.home, self.work = root / "home", root / "work"
        self.home.mkdir(parents=True)
        self.work.mkdir()
        config = CODEX_CONFIG.format(model=model, url=url, websockets=str(websockets).lower())
        (self.home / "config.toml").write_text(config)
        self.root = root

    def run(self, *args: str) -> list[dict[str, Any]]:
        """One ``codex exec`` (``args`` after its options); its JSON events."""
        binary = E2E_NODE / "node_modules" / ".bin" / "codex"
        cmd = [str(binary), "exec", "--skip-git-repo-check", "--json"]
        cmd += ["--dangerously-bypass-approvals-and-sandbox", "-C", str(self.work), *args]
        proc = client_process(cmd, CODEX_HOME=str(self.home), RESPONSES_STREAM_E2E_KEY="e2e-key")
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        assert proc.returncode == 0, (proc.stderr[-3000:], events[-3:])
        assert events and events[-1]["type"] == "turn.completed", events[-3:]
        return events

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def said(events: list[dict[str, Any]]) -> list[str]:
    """What the agent answered in a turn."""
    return [
        e["item"]["text"]
        for e in events
        if e["type"] == "item.completed" and e["item"]["type"] == "agent_message"
    ]


@contextmanager
def codex(url: str, model: str, websockets: bool = False) -> Iterator[Codex]:
    runner = Codex(url, model, websockets)
    try:
        yield runner
    finally:
        runner.close()


def test_codex_answers_a_text_turn(gateway: tuple[str, Path]) -> None:
    url, log = gateway
    token = f"tok{secrets.token_hex(4)}"
    before = log.read_text().count('"WebSocket /v1/responses" [accepted]')
    with codex(url, "e2e-scripted-text") as cli:
        answers = said(cli.run(f"say {token}"))
    assert len(answers) == 1 and token in answers[0], answers
    assert log.read_text().count('"WebSocket /v1/responses" [accepted]') == before


def test_codex_over_websocket(gateway: tuple[str, Path]) -> None:
    url, log = gateway
    token = f"tok{secrets.token_hex(4)}"
    before = log.read_text().count('"WebSocket /v1/responses" [accepted]')
    with codex(url, "e2e-scripted-text", websockets=True) as cli:
        answers = said(cli.run(f"say {token}"))
    assert len(answers) == 1 and token in answers[0], answers
    assert log.read_text().count('"WebSocket /v1/responses" [accepted]') > before, (
        "the turn did not use the WebSocket"
    )


@pytest.mark.parametrize(
    ("model", "ask", "written"),
    [
        ("e2e-agent", "[shell]", "e2e-shell.txt"),
        # a catalog name: Codex sends apply_patch (custom, freeform), tool_search, web_search
        ("gpt-5.5", "[patch]", "e2e-patch.txt"),
    ],
)
def test_codex_runs_its_tools(
    gateway: tuple[str, Path], model: str, ask: str, written: str
) -> None:
    """The shell tool (a function call) and apply_patch (a custom tool, freeform): the
    call reaches Codex, Codex carries it out, and its result comes back for the answer."""
    url, _ = gateway
    token = f"tok{secrets.token_hex(4)}"
    with codex(url, model) as cli:
        events = cli.run(f"{ask} write {token} to a file")
        content = (cli.work / written).read_text()
    assert content.strip() == token
    answers = said(events)
    assert len(answers) == 1 and token in answers[0], answers
    if model == "gpt-5.5":
        sent = UPSTREAM.requests[-1].body
        names = {(t.get("function") or t.get("custom") or {}).get("name") for t in sent["tools"]}
        assert {"apply_patch", "tool_search"} <= names  # client-run tool_search: a function
        assert "web_search" not in names  # a hosted tool, dropped


def test_codex_exec_resume_sends_the_earlier_turn(gateway: tuple[str, Path]) -> None:
    url, _ = gateway
    first, second = (f"tok{secrets.token_hex(4)}" for _ in range(2))
    with codex(url, "e2e-scripted-text") as cli:
        cli.run(f"remember {first}")
        answers = said(cli.run("resume", "--last", f"and now {second}"))
    assert len(answers) == 1 and second in answers[0], answers
    last = json.dumps(UPSTREAM.requests[-1].body)
    assert first in last and second in last, "the resumed turn lacks the first one"
