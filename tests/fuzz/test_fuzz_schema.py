"""Schema fuzzing of ``python -m responses_stream serve`` with schemathesis.

Request bodies are generated from the vendored documents and sent over real HTTP to
``serve`` on 127.0.0.1, in front of the scripted upstream:

- the Open Responses document: ``/responses`` and ``/responses/compact`` on
  ``/openresponses/v1`` (the Open Responses dialect);
- OpenAI's request schemas (``spec/vendor/openai-openapi-*-requests.json``, which has
  no paths: they are added here): ``CreateResponse`` on ``/v1/responses``,
  ``CreateChatCompletionRequest`` on ``/v1/chat/completions`` and
  ``CompactResponseMethodPublicBody`` on ``/v1/responses/compact``.

``stream`` is whatever the generator drew, so both answers come.  Every answer is
checked: never a 5xx; a 4xx in the OpenAI error shape; a Responses stream valid under
the validator (``strict``), each event of an Open Responses stream valid against its
event schema; a JSON Response valid against ``ResponseResource`` (and the openai SDK's
``Response``); a chat answer read by the SDK's chat types.  ``model`` is set to the
scripted upstream's model, since a generated one names no model.  ``make test`` runs a
short version (the ``ci`` profile); ``make fuzz`` the long one, with the counts.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from _support import request_routes
from gateway_support import (
    event_errors,
    open_responses_view,
    schema_errors,
    serve_process,
)
from gateway_upstream import ModelUpstream
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response
from schemathesis.config import SchemathesisConfig

from responses_stream import parse_sse, validate_payloads

VENDOR = Path(__file__).resolve().parents[2] / "spec" / "vendor"
OPEN_RESPONSES = json.loads((VENDOR / "openresponses-openapi-2026-04-24.json").read_text())
OPENAI = json.loads((VENDOR / "openai-openapi-2026-08-21-requests.json").read_text())
OPENAI_PATHS = {
    "/responses": "CreateResponse",
    "/chat/completions": "CreateChatCompletionRequest",
    "/responses/compact": "CompactResponseMethodPublicBody",
}
COUNTS: Counter[str] = Counter()  # what came back, by route and kind (printed by conftest)


def _openai_document() -> dict[str, Any]:
    """OpenAI's request schemas as an API: one POST operation for each body."""
    paths = {
        path: {
            "post": {
                "operationId": name,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                    },
                },
                "responses": {"200": {"description": "the answer, checked by the test"}},
            }
        }
        for path, name in OPENAI_PATHS.items()
    }
    return {**OPENAI, "paths": paths}


# make test (the ci profile): bodies the schemas take, from the fuzzing phase; make fuzz:
# bodies they refuse too, and the coverage phase (every value and bound they name).
LONG = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
CONFIG = SchemathesisConfig.from_dict(
    {
        "generation": {"mode": "all" if LONG else "positive"},
        "phases": {"coverage": {"enabled": LONG}, "stateful": {"enabled": False}},
    }
)
open_responses = schemathesis.openapi.from_dict(OPEN_RESPONSES, config=CONFIG)
openai_requests = schemathesis.openapi.from_dict(_openai_document(), config=CONFIG)
ROUTES = {"/responses": "responses", "/chat/completions": "chat", "/responses/compact": "compact"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # every 400 is logged at warning level: more than the pipe serve_process reads at its
    # end holds, and a full pipe would stop the gateway
    store = tmp_path_factory.mktemp("store") / "fuzz.db"
    args = ("--log-level", "error", "--store", f"sqlite:///{store}")
    with ModelUpstream().serve() as upstream, serve_process(upstream + "/v1", *args) as (url, _):
        yield url


def _checked(case: Any, base: str, dialect: str) -> None:
    """The body as drawn, then (an object) as the gateway serves it, streamed and not."""
    if isinstance(case.body, dict):
        case.body["model"] = "fake-model"
    _answer(case, base, dialect, "drawn")
    if isinstance(case.body, dict) and case.media_type == "application/json":
        served = _served(case.body, ROUTES[case.path])
        for stream in (True, False):
            case.body = (
                {**served, "stream": stream} if case.path != "/responses/compact" else served
            )
            _answer(case, base, dialect, "served")


def _served(body: dict[str, Any], route: str) -> dict[str, Any]:
    """``body`` without what the gateway refuses (its table's refused fields, and fields
    the API does not define: the schemas let objects have any other key, the API answers
    "Unrecognized request argument") or looks up (a previous response), so that more of
    the drawn bodies reach the upstream."""
    fields = request_routes()[route]["fields"]
    return {
        name: value
        for name, value in body.items()
        if name in fields
        and name != "previous_response_id"
        and (fields[name]["fate"] != "refused" or value in fields[name].get("allow", []))
    }


def _answer(case: Any, base: str, dialect: str, kind: str) -> None:
    # sent by requests itself: schemathesis's own call reads an event stream only so far
    answer = requests.request(**case.as_transport_kwargs(base_url=base), timeout=60)
    route = f"{dialect} {case.path} ({kind})"
    assert answer.status_code < 500, (route, answer.status_code, answer.text[:500])
    if answer.status_code != 200:
        error = answer.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}, error
        COUNTS[f"{route}: {answer.status_code}"] += 1
        return
    if answer.headers["content-type"].startswith("text/event-stream"):
        COUNTS[f"{route}: 200 stream"] += 1
        _stream(case.path, answer.content, dialect)
    else:
        COUNTS[f"{route}: 200 json"] += 1
        _json(case.path, answer.json(), dialect)


def _stream(path: str, raw: bytes, dialect: str) -> None:
    payloads = [m.data for m in parse_sse([raw]) if m.data != "[DONE]"]
    events = [json.loads(data) for data in payloads]
    if path == "/chat/completions":
        for event in events:
            ChatCompletionChunk.model_validate(event, strict=True)
        return
    violations = [str(v) for v in validate_payloads(events, dialect, strict=True)]
    assert violations == [], violations[:5]
    if dialect == "openresponses":
        for event in events:
            assert event_errors(event) == [], (event["type"], event_errors(event)[:3])


def _json(path: str, body: dict[str, Any], dialect: str) -> None:
    if path == "/chat/completions":
        ChatCompletion.model_validate(body, strict=True)
    elif path == "/responses/compact":
        assert schema_errors("CompactResource", body) == []
    elif dialect == "openai":  # OpenAI's shape, judged by the SDK's own type
        Response.model_validate(body, strict=True)
    else:
        errors = schema_errors("ResponseResource", open_responses_view(body))
        assert errors == [], errors[:5]


@open_responses.parametrize()
def test_open_responses_document(case: Any, served: str) -> None:
    _checked(case, served + "/openresponses/v1", "openresponses")


@openai_requests.parametrize()
def test_openai_request_schemas(case: Any, served: str) -> None:
    _checked(case, served + "/v1", "openai")
