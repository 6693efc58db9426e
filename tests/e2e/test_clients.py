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
from gateway_support import free_port
from gateway_upstream import ModelUpstream
from http_support import serve

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
def serve_logged(upstream: str, log: Path) -> Iterator[str]:
    """``serve`` as a process on a free port, its log (access lines too) in ``log``."""
    port = free_port()
    cmd = [sys.executable, "-m", "responses_stream", "serve", "--upstream", upstream]
    cmd += ["--port", str(port), "--store", "memory:", "--log-level", "info"]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT / "generated", stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    log = tmp_path_factory.mktemp("e2e") / "serve.log"
    with serve(ModelUpstream().app) as upstream, serve_logged(upstream + "/v1", log) as url:
        yield url, log


def run_client(script: str, *args: str) -> dict[str, Any]:
    env = {**os.environ, **OFFLINE}
    if script.endswith(".mjs"):  # beside its packages, so that its imports resolve
        shutil.copyfile(HERE / "node" / script, E2E_NODE / script)
        cmd = ["node", str(E2E_NODE / script), *args]
    else:
        cmd = [E2E_PYTHON, str(HERE / "clients" / script), *args]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        env=env,
    )
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
