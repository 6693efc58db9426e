"""``serve --config FILE``: two scripted upstreams on their own ports, requests routed by
model name (exact, glob, rename), ``/v1/models``, unrouted models, and broken files
named by file and line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import jsonschema
import openai
import pytest
import yaml
from gateway_support import ROOT, serve_process
from gateway_upstream import ModelUpstream
from http_support import serve

from responses_stream._runtime.gateway.asgi import create_app
from responses_stream._runtime.gateway.config_file import ConfigError, load_config, schema

KEY_ENV = "ROUTING_TEST_PROVIDER_KEY"
CONFIG = """\
upstreams:
  - name: local
    url: {local}/v1
  - name: provider
    url: {provider}/v1
    api_key_env: ROUTING_TEST_PROVIDER_KEY
    hosted_tools: refuse
    timeouts: {{connect: 5, read: 60}}
  - name: responses-only
    url: {provider}/v1
    dialect: responses
  - name: chat-only
    url: {local}/v1
    dialect: chat
models:
  - match: local-small
    upstream: local
  - match: "gpt-*"
    upstream: provider
  - match: fast
    upstream: local
    model: local-small
  - match: resp-model
    upstream: responses-only
  - match: chat-model
    upstream: chat-only
"""


class Pair:
    def __init__(self, local: ModelUpstream, provider: ModelUpstream, url: str) -> None:
        self.local, self.provider, self.url = local, provider, url

    def sdk(self) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=self.url + "/v1", api_key="client-key", _strict_response_validation=True
        )


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    local = ModelUpstream(models=["local-small", "local-big"])
    provider = ModelUpstream(models=["gpt-x1", "gpt-x2", "other"])
    path = tmp_path_factory.mktemp("routing") / "gateway.yaml"
    with local.serve() as a, provider.serve() as b:
        path.write_text(CONFIG.format(local=a, provider=b), encoding="utf-8")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(KEY_ENV, "provider-secret")
            app = create_app(config_file=str(path), store="memory:")
        with serve(app, lifespan="on") as url:
            yield Pair(local, provider, url)


@pytest.fixture
def fresh(pair: Pair) -> Pair:
    pair.local.clear()
    pair.provider.clear()
    return pair


def test_an_exact_name_goes_to_its_upstream(fresh: Pair) -> None:
    answer = fresh.sdk().responses.create(model="local-small", input="hi")
    assert answer.output_text == "Hello! You said: hi"
    [request] = fresh.local.requests
    assert (request.path, request.body["model"]) == ("/v1/chat/completions", "local-small")
    assert request.authorization == "Bearer client-key"  # no key configured: the client's
    assert fresh.provider.requests == []


def test_a_glob_goes_to_its_upstream_with_its_key(fresh: Pair) -> None:
    answer = fresh.sdk().responses.create(model="gpt-x2", input="hi", stream=False)
    assert answer.status == "completed"
    [request] = fresh.provider.requests
    assert request.body["model"] == "gpt-x2"
    assert request.authorization == "Bearer provider-secret"
    assert fresh.local.requests == []


def test_a_rename_sends_the_upstreams_name(fresh: Pair) -> None:
    with fresh.sdk().responses.stream(model="fast", input="hi") as stream:
        final = stream.get_final_response()
    assert final.output_text == "Hello! You said: hi"
    [request] = fresh.local.requests
    assert request.body["model"] == "local-small"


def test_chat_completions_are_routed_too(fresh: Pair) -> None:
    completion = fresh.sdk().chat.completions.create(
        model="gpt-x1", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content
    [request] = fresh.provider.requests
    assert (request.path, request.body["model"]) == ("/v1/responses", "gpt-x1")


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/chat/completions"])
def test_an_unrouted_model_is_404_model_not_found(fresh: Pair, path: str) -> None:
    body: dict[str, object] = {"model": "local-big", "input": "hi"}
    if path.endswith("completions"):
        body = {"model": "local-big", "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(fresh.url + path, json=body, timeout=10)
    assert r.status_code == 404
    error = r.json()["error"]
    assert (error["code"], error["param"], error["type"]) == (
        "model_not_found",
        "model",
        "invalid_request_error",
    )
    assert "local-big" in error["message"]
    assert fresh.local.requests == [] and fresh.provider.requests == []


def test_the_sdk_raises_not_found_for_an_unrouted_model(fresh: Pair) -> None:
    with pytest.raises(openai.NotFoundError):
        fresh.sdk().responses.create(model="nobody", input="hi")


def test_a_responses_upstream_serves_the_responses_route_itself(fresh: Pair) -> None:
    answer = fresh.sdk().responses.create(model="resp-model", input="hi")
    assert answer.status == "completed" and answer.output_text
    [request] = fresh.provider.requests
    assert request.path == "/v1/responses"  # its own, repaired: asked statelessly
    assert (request.body["store"], request.body["stream"]) == (False, True)
    assert fresh.local.requests == []


def test_a_model_on_an_upstream_that_speaks_the_other_api(fresh: Pair) -> None:
    body = {"model": "chat-model", "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(fresh.url + "/v1/chat/completions", json=body, timeout=10)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "unsupported_api"
    assert "/v1/responses" in r.json()["error"]["message"]
    assert fresh.local.requests == []


def test_each_upstream_has_its_own_hosted_tools_policy(fresh: Pair) -> None:
    body = {"input": "hi", "tools": [{"type": "web_search"}]}
    refused = httpx.post(fresh.url + "/v1/responses", json={"model": "gpt-x1", **body}, timeout=10)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "tools[0].type"
    dropped = httpx.post(
        fresh.url + "/v1/responses", json={"model": "local-small", **body}, timeout=10
    )
    assert dropped.status_code == 200
    assert dropped.headers["x-dropped-tools"] == "web_search"


def test_models_lists_the_routed_models(fresh: Pair) -> None:
    listed = fresh.sdk().models.list()
    ids = sorted(m.id for m in listed.data)
    # exact routes, and the provider's models that the glob takes (not "other")
    assert ids == ["chat-model", "fast", "gpt-x1", "gpt-x2", "local-small", "resp-model"]
    owners = {m.id: m.owned_by for m in listed.data}
    assert owners["local-small"] == "local" and owners["gpt-x1"] == "fake"


def test_one_model_is_described_under_its_routed_name(fresh: Pair) -> None:
    client = fresh.sdk()
    assert client.models.retrieve("fast").id == "fast"  # the upstream's local-small
    assert [r.path for r in fresh.local.requests] == ["/v1/models/local-small"]
    assert client.models.retrieve("gpt-x1").owned_by == "fake"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("local-big")


# -- broken files ---------------------------------------------------------------------------
GOOD_UPSTREAM = "upstreams:\n  - name: a\n    url: http://127.0.0.1:9/v1\n"
BROKEN = {
    "url not a string": (
        "upstreams:\n  - name: a\n    url: 42\n",
        3,
        "upstreams[0].url: Expected `str`, got `int`",
    ),
    "url not http": (
        "upstreams:\n  - name: a\n    url: ftp://x\n",
        3,
        "upstreams[0].url: Expected `str` matching regex",
    ),
    "unknown field": (
        GOOD_UPSTREAM + "    timout: 5\n",
        4,
        "upstreams[0].timout: Object contains unknown field `timout`",
    ),
    "bad dialect": (
        GOOD_UPSTREAM + "    dialect: grpc\n",
        4,
        "upstreams[0].dialect: Invalid enum value 'grpc'",
    ),
    "negative timeout": (
        GOOD_UPSTREAM + "    timeouts:\n      connect: -1\n",
        5,
        "upstreams[0].timeouts.connect: Expected `float` > 0.0",
    ),
    "no upstreams": ("models: []\n", 1, "the file: Object missing required field `upstreams`"),
    "route to nowhere": (
        GOOD_UPSTREAM + "models:\n  - match: m\n    upstream: b\n",
        6,
        "models[0].upstream: no upstream is named 'b'",
    ),
    "default to nowhere": (GOOD_UPSTREAM + "default: b\n", 4, "default: no upstream"),
    "key variable unset": (
        GOOD_UPSTREAM + "    api_key_env: ROUTING_TEST_UNSET_VARIABLE\n",
        4,
        "the environment variable ROUTING_TEST_UNSET_VARIABLE is not set",
    ),
    "gateway key variable unset": (
        GOOD_UPSTREAM + "gateway:\n  keys_env:\n    - ROUTING_TEST_UNSET_VARIABLE\n",
        6,
        "gateway.keys_env[0]: the environment variable",
    ),
    "upstream twice": (
        GOOD_UPSTREAM + "  - name: a\n    url: http://127.0.0.1:9/v1\n",
        4,
        "upstreams[1].name: upstream 'a' is defined twice",
    ),
    "key twice": (GOOD_UPSTREAM + "    url: http://x/v1\n", 4, "'url' is set twice"),
    "not YAML": ("upstreams:\n  - name: a\n   url: [\n", 3, "not YAML"),
    "empty": ("", 1, "the config file is empty"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_file_names_its_line(tmp_path: Path, case: str) -> None:
    text, line, message = BROKEN[case]
    path = tmp_path / "gateway.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path, environ={})
    assert str(raised.value).startswith(f"{path}:{line}: "), str(raised.value)
    assert message in str(raised.value)


def serve_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "responses_stream", "serve", *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, cwd=ROOT / "generated"
    )


def test_serve_does_not_start_on_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(BROKEN["bad dialect"][0], encoding="utf-8")
    done = serve_cli("--config", str(path))
    assert done.returncode == 2
    assert f"{path}:4: upstreams[0].dialect: Invalid enum value 'grpc'" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_takes_an_upstream_or_a_config_not_both() -> None:
    done = serve_cli("--upstream", "http://x/v1", "--config", "gateway.yaml")
    assert done.returncode == 2 and "not allowed with argument" in done.stderr


def test_the_gateway_keys_come_from_the_variables_named(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(GOOD_UPSTREAM + "gateway:\n  keys_env: [TEAM_A, TEAM_B]\n", encoding="utf-8")
    loaded = load_config(path, environ={"TEAM_A": "key-a", "TEAM_B": "key-b1,key-b2"})
    assert loaded.api_keys == ("key-a", "key-b1", "key-b2")


def test_the_json_schema_agrees_with_the_loader() -> None:
    validator = jsonschema.Draft202012Validator(schema())
    good = yaml.safe_load(CONFIG.format(local="http://a", provider="http://b"))
    assert list(validator.iter_errors(good)) == []
    for case in ("url not a string", "unknown field", "bad dialect", "negative timeout"):
        assert list(validator.iter_errors(yaml.safe_load(BROKEN[case][0]))) != [], case
    assert list(validator.iter_errors(yaml.safe_load(BROKEN["no upstreams"][0]))) != []


def test_serve_routes_by_the_file_it_was_given(tmp_path: Path) -> None:
    local, provider = ModelUpstream(), ModelUpstream(models=["gpt-x1"])
    path = tmp_path / "gateway.yaml"
    with local.serve() as a, provider.serve() as b:
        path.write_text(CONFIG.format(local=a, provider=b), encoding="utf-8")
        env = {KEY_ENV: "provider-secret"}
        with serve_process(None, "--config", str(path), "--store", "memory:", env=env) as (
            url,
            _,
        ):
            client = openai.OpenAI(base_url=url + "/v1", api_key="k")
            assert client.responses.create(model="fast", input="hi").status == "completed"
            assert client.responses.create(model="gpt-x1", input="hi").status == "completed"
            listed = sorted(m.id for m in client.models.list().data)
            assert listed[:3] == ["chat-model", "fast", "gpt-x1"]
    assert [r.body["model"] for r in local.requests] == ["local-small"]
    assert [r.authorization for r in provider.requests if r.method == "POST"] == [
        "Bearer provider-secret"
    ]
