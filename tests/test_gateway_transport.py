"""How the gateway reaches its upstream, through real parts: Debian's tinyproxy as the
forward proxy (an ``http`` upstream through it, an ``https`` one through ``CONNECT``),
HTTPS upstreams on 127.0.0.1 with certificates from a CA made here (trustme), one that
asks for the gateway's own certificate, answers compressed as servers compress them.

Each gateway is set up from a ``--config`` file and read by the strict openai SDK over
real HTTP.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import brotli
import httpx
import openai
import pytest
import trustme
import yaml
from gateway_support import serve_process
from gateway_upstream import ModelUpstream
from http_support import serve
from proxy_server import Tinyproxy
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from responses_stream._runtime.gateway.config_file import ConfigError, load_config
from responses_stream.gateway import create_app

RECORDING = Path(__file__).parent / "recorded" / "llamacpp_text.sse"
ANSWER = "Hello! You said: hi"  # what the fake model answers to "hi"
PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")


@pytest.fixture(autouse=True)
def _no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the proxy variables it means (upper and lower case)."""
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@contextmanager
def environment(**variables: str) -> Iterator[None]:
    """``variables`` set while the gateway is made (it reads them then; the test's own
    clients must not go through a proxy)."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in variables.items():
            mp.setenv(name, value)
        yield


class Certificates:
    """A CA made for the tests, a server certificate for 127.0.0.1 and a client's."""

    def __init__(self, folder: Path) -> None:
        ca = trustme.CA()
        self.ca = folder / "ca.pem"
        ca.cert_pem.write_to_path(str(self.ca))
        self.server = folder / "server.pem"
        ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(self.server))
        client = ca.issue_cert("gateway.example")
        self.client_cert, self.client_key = folder / "client.pem", folder / "client.key"
        client.cert_chain_pems[0].write_to_path(str(self.client_cert))
        client.private_key_pem.write_to_path(str(self.client_key))


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return Certificates(tmp_path_factory.mktemp("certs"))


@contextmanager
def https(
    app: Starlette, certs: Certificates, *, client_certificate: bool = False
) -> Iterator[str]:
    """``app`` served over TLS with the test CA's certificate (asking the client for one
    of the same CA with ``client_certificate``)."""
    options: dict[str, Any] = {"ssl_certfile": str(certs.server)}
    if client_certificate:
        options |= {"ssl_ca_certs": str(certs.ca), "ssl_cert_reqs": ssl.CERT_REQUIRED}
    with serve(app, **options) as url:
        yield url


@contextmanager
def gateway(
    folder: Path, url: str, env: dict[str, str] | None = None, **settings: Any
) -> Iterator[str]:
    """A gateway whose one upstream is ``url`` (its ``/v1``) with ``settings``, from a
    config file in ``folder``, made with the variables ``env`` set."""
    config = {"upstreams": [{"name": "up", "url": url + "/v1", **settings}], "default": "up"}
    path = folder / "gateway.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    with environment(**(env or {})):
        app = create_app(config_file=str(path), store="memory:")
    with serve(app) as served:
        yield served


def sdk(url: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=url + "/v1", api_key="k", max_retries=0, _strict_response_validation=True
    )


def ask(url: str, *, stream: bool = False) -> str:
    """The text the gateway answers "hi" with, streamed or not."""
    client = sdk(url)
    if not stream:
        return client.responses.create(model="fake-model", input="hi").output_text
    with client.responses.stream(model="fake-model", input="hi") as events:
        return events.get_final_response().output_text


def refused(url: str) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as caught:
        sdk(url).responses.create(model="fake-model", input="hi")
    return caught.value


# -- proxies ----------------------------------------------------------------------
def test_an_http_upstream_through_the_configured_proxy(
    tmp_path: Path, tinyproxy: Tinyproxy
) -> None:
    upstream = ModelUpstream()
    with upstream.serve() as url, gateway(tmp_path, url, proxy=tinyproxy.url) as gw:
        before = tinyproxy.requests(f"POST {url}/v1/chat/completions")
        assert ask(gw) == ANSWER
        assert ask(gw, stream=True) == ANSWER
        assert tinyproxy.requests(f"POST {url}/v1/chat/completions") == before + 2
        assert all("tinyproxy" in r.headers.get("via", "") for r in upstream.requests)


@pytest.mark.parametrize("named_by", ["proxy", "HTTPS_PROXY"])
def test_an_https_upstream_through_the_proxy_by_connect(
    tmp_path: Path, tinyproxy: Tinyproxy, certs: Certificates, named_by: str
) -> None:
    """The proxy named by the config file, or by ``HTTPS_PROXY`` for an https upstream
    (``HTTP_PROXY`` names a port where nothing listens: it is not the one used)."""
    if named_by == "proxy":
        env, settings = {}, {"proxy": tinyproxy.url}
    else:
        env, settings = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": tinyproxy.url}, {}
    upstream = ModelUpstream()
    with https(upstream.app, certs) as url:
        authority = url.removeprefix("https://")
        before = tinyproxy.requests(f"CONNECT {authority}")
        with gateway(tmp_path, url, env, ca_file=str(certs.ca), **settings) as gw:
            assert ask(gw, stream=named_by == "proxy") == ANSWER
        assert tinyproxy.requests(f"CONNECT {authority}") == before + 1
    # a tunnel hides the request from the proxy: no Via header reaches the upstream
    assert [r.headers.get("via") for r in upstream.requests] == [None]


@pytest.mark.parametrize("name", ["HTTP_PROXY", "http_proxy"])
def test_the_proxy_variables_are_honoured_without_a_config_file(
    name: str, tinyproxy: Tinyproxy
) -> None:
    upstream = ModelUpstream()
    with upstream.serve() as url:
        with environment(**{name: tinyproxy.url}):
            app = create_app(url + "/v1", store="memory:")
        with serve(app) as gw:
            assert ask(gw) == ANSWER
    assert "tinyproxy" in upstream.last.headers.get("via", "")


def test_no_proxy_bypasses_the_proxy_variables() -> None:
    """A proxy variable that points where nothing listens: the upstream cannot be reached
    (the variable is read), unless ``NO_PROXY`` names its host."""
    dead = "http://127.0.0.1:9"
    upstream = ModelUpstream()
    with upstream.serve() as url:
        with environment(HTTP_PROXY=dead):
            app = create_app(url + "/v1", store="memory:")
        with serve(app) as gw:
            error = refused(gw)
        assert error.status_code == 502
        assert f"cannot connect to the proxy {dead}" in error.message
        assert upstream.requests == []
        for listed in ("127.0.0.1", "localhost,127.0.0.1", "*"):
            with environment(HTTP_PROXY=dead, NO_PROXY=listed):
                app = create_app(url + "/v1", store="memory:")
            with serve(app) as gw:
                assert ask(gw) == ANSWER
    assert all(r.headers.get("via") is None for r in upstream.requests)
    assert len(upstream.requests) == 3


def test_a_proxy_that_cannot_be_reached_is_a_502_naming_it_without_its_password(
    tmp_path: Path,
) -> None:
    upstream = ModelUpstream()
    with (
        upstream.serve() as url,
        gateway(tmp_path, url, proxy="http://user:secret@127.0.0.1:9") as gw,
    ):
        error = refused(gw)
    assert error.status_code == 502
    assert "http://user:***@127.0.0.1:9" in error.message
    assert "secret" not in error.message


# -- TLS --------------------------------------------------------------------------
def test_a_private_ca_is_trusted_through_ca_file_and_refused_without(
    tmp_path: Path, certs: Certificates
) -> None:
    upstream = ModelUpstream()
    with https(upstream.app, certs) as url:
        with gateway(tmp_path, url, ca_file=str(certs.ca)) as gw:
            assert ask(gw) == ANSWER
            assert ask(gw, stream=True) == ANSWER
        with gateway(tmp_path, url) as gw:
            error = refused(gw)
    assert error.status_code == 502
    assert "CERTIFICATE_VERIFY_FAILED" in error.message
    assert len(upstream.requests) == 2


def test_verify_false_reaches_the_server_and_says_so_on_health(
    tmp_path: Path, certs: Certificates
) -> None:
    upstream = ModelUpstream()
    with https(upstream.app, certs) as url, gateway(tmp_path, url, verify=False) as gw:
        assert ask(gw) == ANSWER
        health = httpx.get(gw + "/health").json()
    assert health["warnings"] == [
        "upstream up: its TLS certificate is not verified (verify: false)"
    ]


def test_health_has_no_warnings_when_every_certificate_is_verified(
    tmp_path: Path, certs: Certificates
) -> None:
    with (
        https(ModelUpstream().app, certs) as url,
        gateway(tmp_path, url, ca_file=str(certs.ca)) as gw,
    ):
        health = httpx.get(gw + "/health").json()
    assert "warnings" not in health and health["status"] == "ok"


def test_an_upstream_that_asks_for_a_client_certificate(
    tmp_path: Path, certs: Certificates
) -> None:
    upstream = ModelUpstream()
    with https(upstream.app, certs, client_certificate=True) as url:
        with gateway(tmp_path, url, ca_file=str(certs.ca)) as gw:
            error = refused(gw)
        assert error.status_code == 502
        assert upstream.requests == []
        with gateway(
            tmp_path,
            url,
            ca_file=str(certs.ca),
            client_cert=str(certs.client_cert),
            client_key=str(certs.client_key),
        ) as gw:
            assert ask(gw, stream=True) == ANSWER
    assert len(upstream.requests) == 1


# -- compression ------------------------------------------------------------------
def _compressor(encoding: str) -> tuple[Callable[[bytes], bytes], Callable[[], bytes]]:
    """Compress each piece so that it can be decoded as it comes, and the end."""
    if encoding == "br":
        br = brotli.Compressor()
        return (lambda data: br.process(data) + br.flush()), br.finish
    z = zlib.compressobj(wbits=31 if encoding == "gzip" else 15)  # gzip; zlib's deflate
    return (lambda data: z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)), z.flush


def _recorded_text() -> str:
    text = ""
    for line in RECORDING.read_text(encoding="utf-8").splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                text += choice["delta"].get("content") or ""
    return text


def _compressing_upstream(encoding: str) -> Starlette:
    """A chat upstream streaming the recording compressed with ``encoding``, an event
    at a time, and listing its models through Starlette's GZipMiddleware."""
    frames = [f + b"\n\n" for f in RECORDING.read_bytes().split(b"\n\n") if f.strip()]

    async def chat(request: Request) -> Response:
        await request.body()
        assert encoding in request.headers["accept-encoding"]
        piece, end = _compressor(encoding)

        async def pieces() -> AsyncIterator[bytes]:
            for frame in frames:
                yield piece(frame)
                await asyncio.sleep(0.005)
            yield end()

        headers = {"content-encoding": encoding}
        return StreamingResponse(pieces(), media_type="text/event-stream", headers=headers)

    async def models(request: Request) -> Response:
        names = [
            {"id": f"model-{n}", "object": "model", "owned_by": "x", "created": 1}
            for n in range(50)
        ]
        return JSONResponse({"object": "list", "data": names})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
        ],
        middleware=[Middleware(GZipMiddleware, minimum_size=100)],
    )


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_a_compressed_stream_is_decoded(tmp_path: Path, encoding: str) -> None:
    with serve(_compressing_upstream(encoding)) as url, gateway(tmp_path, url) as gw:
        assert ask(gw, stream=True) == _recorded_text()
        assert ask(gw) == _recorded_text()


def test_a_gzipped_json_answer_is_decoded(tmp_path: Path) -> None:
    with serve(_compressing_upstream("gzip")) as url:
        raw = httpx.get(url + "/v1/models", headers={"accept-encoding": "gzip"})
        assert raw.headers["content-encoding"] == "gzip"
        with gateway(tmp_path, url) as gw:
            listed = sdk(gw).models.list()
    assert [m.id for m in listed.data] == [f"model-{n}" for n in range(50)]


# -- the connection cap -----------------------------------------------------------
class Counting:
    """A chat upstream that streams the recording slowly and counts the requests open
    at once and the connections (client ports) they came on."""

    def __init__(self) -> None:
        self.open = self.most = 0
        self.ports: set[int] = set()
        frames = [f + b"\n\n" for f in RECORDING.read_bytes().split(b"\n\n") if f.strip()]

        async def chat(request: Request) -> Response:
            await request.body()
            assert request.client is not None
            self.ports.add(request.client.port)
            self.open += 1
            self.most = max(self.most, self.open)

            async def pieces() -> AsyncIterator[bytes]:
                try:
                    for frame in frames:
                        yield frame
                        await asyncio.sleep(0.02)
                finally:
                    self.open -= 1

            return StreamingResponse(pieces(), media_type="text/event-stream")

        self.app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def _three_at_once(gw: str) -> list[str]:
    async def main() -> list[str]:
        client = openai.AsyncOpenAI(
            base_url=gw + "/v1", api_key="k", max_retries=0, _strict_response_validation=True
        )

        async def one() -> str:
            answer = await client.responses.create(model="m", input="hi")
            return answer.output_text

        return await asyncio.gather(one(), one(), one())

    return asyncio.run(main())


@pytest.mark.parametrize("cap", [1, 2, None])
def test_max_connections_caps_the_connections_at_once(tmp_path: Path, cap: int | None) -> None:
    """Three streams at once: under ``max_connections`` the upstream sees at most that
    many at a time, on that many connections, and each stream is whole; without it, all
    three at once."""
    upstream = Counting()
    settings = {} if cap is None else {"max_connections": cap}
    with serve(upstream.app) as url, gateway(tmp_path, url, **settings) as gw:
        assert _three_at_once(gw) == [_recorded_text()] * 3
    assert upstream.most == (cap or 3)
    assert len(upstream.ports) == (cap or 3)


# -- the config file's faults -------------------------------------------------------
@pytest.mark.parametrize(
    ("settings", "key", "says"),
    [
        ({"ca_file": "missing.pem"}, "ca_file", "cannot read the ca_file"),
        ({"client_cert": "missing.pem"}, "client_cert", "cannot use the client certificate"),
        ({"client_key": "k.pem"}, "client_key", "client_key needs client_cert"),
        ({"verify": False, "ca_file": "ca.pem"}, "ca_file", "no use with verify: false"),
        ({"max_connections": 0}, "max_connections", "Expected `int` >= 1"),
        ({"proxy": "socks5://127.0.0.1:1080"}, "proxy", "Expected `str` matching"),
    ],
)
def test_a_transport_setting_it_cannot_use_names_its_line(
    tmp_path: Path, settings: dict[str, Any], key: str, says: str
) -> None:
    config = {"upstreams": [{"name": "up", "url": "https://127.0.0.1:1/v1", **settings}]}
    text = yaml.safe_dump(config, sort_keys=False)
    path = tmp_path / "gateway.yaml"
    path.write_text(text, encoding="utf-8")
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.strip().startswith(key + ":"))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}:{line}: upstreams[0].{key}: ")
    assert says in str(caught.value)


def test_relative_paths_are_read_from_the_config_files_folder(
    tmp_path: Path, certs: Certificates
) -> None:
    folder = tmp_path / "deploy"
    (folder / "certs").mkdir(parents=True)
    (folder / "certs" / "ca.pem").write_bytes(certs.ca.read_bytes())
    upstream = ModelUpstream()
    with https(upstream.app, certs) as url:
        with gateway(folder, url, ca_file="certs/ca.pem") as gw:
            assert ask(gw) == ANSWER


def test_serve_says_at_start_up_which_proxy_it_uses_and_what_it_does_not_verify(
    tmp_path: Path,
) -> None:
    config = {
        "upstreams": [
            {"name": "lab", "url": "https://127.0.0.1:1/v1", "verify": False},
            {
                "name": "far",
                "url": "http://127.0.0.1:2/v1",
                "proxy": "http://me:hunter2@127.0.0.1:3",
            },
        ],
        "default": "lab",
    }
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    output: list[str] = []
    with serve_process(
        None, "--config", str(path), "--store", "memory:", "--log-level", "info", output=output
    ) as (
        url,
        _,
    ):
        health = httpx.get(url + "/health").json()
    log = "".join(output)
    assert "upstream lab: its TLS certificate is not verified (verify: false)" in log
    assert (
        "upstream far: http://127.0.0.1:2/v1 (sending the client's Authorization, through the proxy http://me:***@127.0.0.1:3)"
        in log
    )
    assert "hunter2" not in log
    assert health["warnings"] == [
        "upstream lab: its TLS certificate is not verified (verify: false)"
    ]
