"""Running the gateway for tests: in a thread (uvicorn on 127.0.0.1) or as the real
``python -m responses_stream serve`` process; and the vendored Open Responses schema."""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from gateway_upstream import ModelUpstream
from http_support import serve
from openai import OpenAI
from starlette.applications import Starlette

from responses_stream._runtime.gateway.app import create_app
from responses_stream._runtime.gateway.config import GatewayConfig
from responses_stream._runtime.gateway.state import Gateway
from responses_stream._runtime.gateway.store import open_store
from responses_stream._runtime.gateway.upstream import Timeouts, Upstream

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "openresponses-openapi-2026-04-24.json"


def build(upstream: str, store: str = "memory:", **config: Any) -> Gateway:
    """A gateway for ``upstream`` (its ``/v1`` base URL)."""
    cfg = GatewayConfig(upstream=upstream, **config)
    return Gateway(
        config=cfg,
        upstream=Upstream(cfg.upstream, api_key=cfg.api_key, timeouts=cfg.timeouts),
        store=open_store(store),
    )


@contextmanager
def gateway(upstream: str, store: str = "memory:", **config: Any) -> Iterator[str]:
    """The gateway served in a thread; yields its base URL (no ``/v1``)."""
    yield from _serving(build(upstream, store, **config))


def _serving(gw: Gateway) -> Iterator[str]:
    with serve(create_app(gw)) as url:
        yield url


def ws_turn(ws: Any, frame: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Send one WebSocket client message; the events up to its terminal one (or an error)."""
    ws.send(json.dumps(frame))
    events = []
    while True:
        event = json.loads(ws.recv(timeout=30))
        events.append(event)
        if event["type"] in ("response.completed", "response.incomplete", "response.failed"):
            return events
        if event["type"] == "error" and "sequence_number" not in event:
            return events  # a WebSocketErrorEvent: the turn never started


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, ModelUpstream]]:
    """The scripted model upstream on a free port (a test module imports this fixture)."""
    fake = ModelUpstream()
    with fake.serve() as url:
        yield url, fake


@pytest.fixture(scope="module")
def gw(upstream: tuple[str, ModelUpstream]) -> Iterator[str]:
    """The gateway in front of ``upstream``, with a memory store."""
    with gateway(upstream[0] + "/v1") as url:
        yield url


def sdk(url: str, base: str = "/v1") -> OpenAI:
    """The strict openai client, without retries, for the gateway at ``url``."""
    return OpenAI(
        base_url=url + base, api_key="sk-client", max_retries=0, _strict_response_validation=True
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve_process(
    upstream: str | None,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 20.0,
    output: list[str] | None = None,
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``python -m responses_stream serve --upstream URL ARGS`` (no ``--upstream`` when
    ``upstream`` is None: ``ARGS`` hold ``--config``) on a free port; yields its base URL
    and the process, and stops it (SIGTERM) at the end, then adds what it wrote to
    ``output``, if given."""
    port = free_port()
    cmd = [sys.executable, "-m", "responses_stream", "serve"]
    cmd += ["--upstream", upstream] if upstream is not None else []
    cmd += ["--port", str(port), "--log-level", "warning", *args]
    proc = subprocess.Popen(
        cmd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                out = proc.stdout.read() if proc.stdout else ""
                raise RuntimeError(f"serve exited with {proc.returncode}: {out}")
            try:
                if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("serve did not start in time")
            time.sleep(0.05)
        yield url, proc
    finally:
        stop(proc)
        if proc.stdout:
            if output is not None:
                output.append(proc.stdout.read())
            proc.stdout.close()


def stop(proc: subprocess.Popen[Any]) -> None:
    """End a server process: SIGTERM, then SIGKILL after 10 seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@functools.cache
def _doc() -> dict[str, Any]:
    text = resources.files("responses_stream._vendor").joinpath(SCHEMA).read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


@functools.cache
def _validator(name: str) -> Any:
    doc = _doc()
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    )


def open_responses_view(instance: Any) -> Any:
    """``instance`` (a Response, or an event holding one) as the Open Responses document
    reads it: the document declares an echoed ``json_schema`` format's ``schema`` null
    (``JsonSchemaResponseFormat``), where OpenAI's API, and the gateway, echo the schema
    the request gave; that one key is set to null, the rest is judged as it is."""
    response = instance.get("response", instance) if isinstance(instance, dict) else None
    text = response.get("text") if isinstance(response, dict) else None
    fmt = text.get("format") if isinstance(text, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return instance
    seen = {**response, "text": {**response["text"], "format": {**fmt, "schema": None}}}
    return {**instance, "response": seen} if "response" in instance else seen


def schema_errors(name: str, instance: Any) -> list[str]:
    """Where ``instance`` breaks the Open Responses component ``name`` ([] when valid)."""
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _validator(name).iter_errors(instance)
    ]


@functools.cache
def event_schemas() -> dict[str, str]:
    """Open Responses event type -> its component name."""
    doc = _doc()
    stream = doc["paths"]["/responses"]["post"]["responses"]["200"]["content"]
    out = {}
    for ref in stream["text/event-stream"]["schema"]["oneOf"]:
        name = ref["$ref"].rsplit("/", 1)[1]
        out[doc["components"]["schemas"][name]["properties"]["type"]["enum"][0]] = name
    return out


def event_errors(event: Mapping[str, Any]) -> list[str]:
    """Where one streamed event breaks its Open Responses schema."""
    name = event_schemas().get(str(event.get("type")))
    if name is None:
        return [f"{event.get('type')}: not an Open Responses event"]
    return schema_errors(name, open_responses_view(event))


def proxy_app(
    upstream: str, *, connect_timeout: float = 10.0, read_timeout: float = 300.0
) -> Starlette:
    """The gateway's app for ``upstream`` with the given timeouts (a memory store)."""
    return create_app(
        build(upstream, timeouts=Timeouts(connect=connect_timeout, read=read_timeout))
    )
