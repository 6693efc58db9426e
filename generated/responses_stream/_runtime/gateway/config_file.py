"""``serve --config FILE``: the gateway's upstreams and model routes, from YAML.

The file's shape is the typed schema below (msgspec structs, unknown fields refused);
every fault is a :class:`ConfigError` naming the file and line, and the gateway does
not start.  Keys are never in the file: an upstream names the environment variable
that holds its key, and ``gateway.keys_env`` the variables holding the gateway's own
keys (each one key, or several separated by commas)::

    upstreams:
      - name: local
        url: http://127.0.0.1:8000/v1
      - name: provider
        url: https://api.example.com/v1
        api_key_env: PROVIDER_API_KEY
        dialect: chat
        timeouts: {connect: 5, read: 120}
      - name: vllm                 # its own /v1/responses, repaired on the way
        url: http://127.0.0.1:8001/v1
        dialect: responses
        responses: repair            # or pass: its stream as it is, its faults counted
      - name: internal
        url: https://llm.internal.example/v1
        proxy: http://proxy.internal.example:3128   # else HTTPS_PROXY / NO_PROXY decide
        ca_file: certs/internal-ca.pem               # paths relative to this file
        client_cert: certs/gateway.pem
        client_key: certs/gateway.key
        max_connections: 64
    models:
      - match: gemma-3-270m          # an exact name
        upstream: local
      - match: "gpt-*"               # a glob
        upstream: provider
      - match: fast                  # a rename: "fast" is sent as "gemma-3-270m"
        upstream: local
        model: gemma-3-270m
    default: local                   # every other model (without it: 404)
    gateway:
      keys_env: [TEAM_A_KEY, TEAM_B_KEY]
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import yaml

from ..core.errors import ResponsesStreamError
from .routing import ModelRoute, Router, UpstreamSettings
from .tenancy import gateway_keys
from .transport import Transport, TransportError
from .upstream import Timeouts, Upstream

Name = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")]
EnvName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Url = Annotated[str, msgspec.Meta(pattern=r"^https?://[^\s]+$")]
Model = Annotated[str, msgspec.Meta(min_length=1)]
Seconds = Annotated[float, msgspec.Meta(gt=0)]
File = Annotated[str, msgspec.Meta(min_length=1)]


class TimeoutsSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    connect: Seconds = 10.0
    read: Seconds = 300.0


class UpstreamSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: Name
    url: Url
    api_key_env: EnvName | None = None
    dialect: Literal["both", "chat", "responses"] = "both"
    responses: Literal["repair", "pass"] | None = None
    reasoning_field: Literal["reasoning_content", "reasoning"] = "reasoning_content"
    hosted_tools: Literal["drop", "refuse"] = "drop"
    timeouts: TimeoutsSpec = msgspec.field(default_factory=TimeoutsSpec)
    proxy: Url | None = None
    ca_file: File | None = None
    client_cert: File | None = None
    client_key: File | None = None
    verify: bool = True
    max_connections: Annotated[int, msgspec.Meta(ge=1)] | None = None


class RouteSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    match: Model
    upstream: Name
    model: Model | None = None


class GatewaySpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    keys_env: list[EnvName] = msgspec.field(default_factory=list)


class ConfigFile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    upstreams: Annotated[list[UpstreamSpec], msgspec.Meta(min_length=1)]
    models: list[RouteSpec] = msgspec.field(default_factory=list)
    default: Name | None = None
    gateway: GatewaySpec = msgspec.field(default_factory=GatewaySpec)


class ConfigError(ResponsesStreamError, ValueError):
    """A config file fault: ``FILE:LINE: what``."""


@dataclass(frozen=True)
class GatewayFile:
    """What a config file sets up: its router and the gateway's own keys."""

    router: Router
    api_keys: tuple[str, ...]


def schema() -> dict[str, Any]:
    """The config file's JSON Schema."""
    value: dict[str, Any] = msgspec.json.schema(ConfigFile)
    return value


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> GatewayFile:
    """Read, check and set up the config file at ``path`` (:class:`ConfigError`)."""
    env = os.environ if environ is None else environ
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read the config file: {exc}") from None
    node, data = _parse(text, where)
    try:
        spec = msgspec.convert(data, ConfigFile)
    except msgspec.ValidationError as exc:
        message, _, at = str(exc).partition(" - at `")
        steps = _steps(at.rstrip("`"))
        unknown = re.search(r"unknown field `([^`]*)`", message)
        if unknown:
            steps.append(unknown.group(1))
        raise ConfigError(
            f"{where}:{_line(node, steps)}: {_dotted(steps) or 'the file'}: {message}"
        ) from None
    return _set_up(spec, node, where, env, Path(path).parent)


def _parse(text: str, where: str) -> tuple[yaml.Node, Any]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ConfigError(f"{where}:1: the config file is empty")
        _no_duplicate_keys(node, where)
        return node, loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise ConfigError(f"{where}:{line}: not YAML: {exc.problem or exc}") from None
    finally:
        loader.dispose()


def _no_duplicate_keys(node: yaml.Node, where: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    line = key.start_mark.line + 1
                    raise ConfigError(f"{where}:{line}: {key.value!r} is set twice")
                seen.add(key.value)
            _no_duplicate_keys(value, where)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _no_duplicate_keys(item, where)


def _steps(at: str) -> list[str | int]:
    """``$.upstreams[0].url`` as ``["upstreams", 0, "url"]``."""
    return [
        int(index) if index else name
        for name, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", at.removeprefix("$"))
    ]


def _dotted(steps: list[str | int]) -> str:
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def _line(node: yaml.Node, steps: list[str | int]) -> int:
    """The line of the deepest node ``steps`` reach (a mapping entry: its key's line)."""
    line = node.start_mark.line + 1
    for step in steps:
        child = None
        if isinstance(node, yaml.MappingNode) and isinstance(step, str):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == step:
                    line, child = key.start_mark.line + 1, value
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            if step < len(node.value):
                child = node.value[step]
                line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def _set_up(
    spec: ConfigFile, node: yaml.Node, where: str, env: Mapping[str, str], folder: Path
) -> GatewayFile:
    """What the schema cannot say: names that refer to each other, variables set."""

    def fault(steps: list[str | int], message: str) -> ConfigError:
        return ConfigError(f"{where}:{_line(node, steps)}: {_dotted(steps)}: {message}")

    settings: list[UpstreamSettings] = []
    names = [u.name for u in spec.upstreams]
    for n, u in enumerate(spec.upstreams):
        if u.name in names[:n]:
            raise fault(["upstreams", n, "name"], f"upstream {u.name!r} is defined twice")
        key = None
        if u.api_key_env is not None:
            key = env.get(u.api_key_env)
            if not key:
                raise fault(
                    ["upstreams", n, "api_key_env"],
                    f"the environment variable {u.api_key_env} is not set",
                )
        timeouts = Timeouts(connect=u.timeouts.connect, read=u.timeouts.read)
        try:
            transport = _transport(u, folder)
        except TransportError as exc:
            raise fault(["upstreams", n, exc.key], str(exc)) from None
        if u.responses is not None and u.dialect == "chat":
            raise fault(
                ["upstreams", n, "responses"],
                "an upstream of dialect chat has no Responses API to repair or pass",
            )
        settings.append(
            UpstreamSettings(
                u.name,
                u.url,
                key,
                u.dialect,
                u.reasoning_field,
                u.hosted_tools,
                timeouts,
                transport,
                # a Responses-only upstream serves the Responses route itself, repaired
                # unless said; one that speaks both does so when told how
                u.responses or ("repair" if u.dialect == "responses" else None),
            )
        )
    for n, r in enumerate(spec.models):
        if r.upstream not in names:
            raise fault(["models", n, "upstream"], f"no upstream is named {r.upstream!r}")
    if spec.default is not None and spec.default not in names:
        raise fault(["default"], f"no upstream is named {spec.default!r}")
    listed = []
    for n, var in enumerate(spec.gateway.keys_env):
        value = env.get(var)
        if not value:
            raise fault(["gateway", "keys_env", n], f"the environment variable {var} is not set")
        listed.append(value)
    routes = [ModelRoute(r.match, r.upstream, r.model) for r in spec.models]
    clients = [
        (s, Upstream(s.url, api_key=s.api_key, timeouts=s.timeouts, transport=s.transport))
        for s in settings
    ]
    keys = gateway_keys((), ",".join(listed) or None)
    return GatewayFile(Router(clients, routes, spec.default), keys)


def _transport(u: UpstreamSpec, folder: Path) -> Transport:
    """An upstream's proxy, TLS and cap, its files read now (paths relative to the
    config file's folder); :class:`TransportError` names the key at fault."""

    def path(value: str | None) -> str | None:
        return None if value is None else str(folder / Path(value).expanduser())

    transport = Transport(
        proxy=u.proxy,
        ca_file=path(u.ca_file),
        client_cert=path(u.client_cert),
        client_key=path(u.client_key),
        verify=u.verify,
        max_connections=u.max_connections,
    )
    transport.tls()
    return transport
