"""Fixed-path routes reach their endpoints without the router (``gateway/direct.py``);
every other request is the router's, as before."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from responses_stream._runtime.gateway.direct import DirectRoutes, fixed_routes
from responses_stream._runtime.gateway.http import route_path


async def seen(request: Request) -> Response:
    """Says whether the router saw the request (it leaves itself in the scope)."""
    return JSONResponse(
        {
            "router": "router" in request.scope,
            "params": dict(request.path_params),
            "body": (await request.body()).decode(),
        }
    )


def sync_endpoint(request: Request) -> Response:
    return PlainTextResponse("from a thread")


async def socket(ws: WebSocket) -> None:
    await ws.close()


ROUTES: list[BaseRoute] = [
    Route("/v1/responses", seen, methods=["POST"]),
    Route("/v1/responses/{response_id}", seen, methods=["GET"]),
    Route("/health", seen, methods=["GET"]),
    Route("/sync", sync_endpoint, methods=["GET"]),
    WebSocketRoute("/v1/responses", socket),
]


def call(method: str, path: str, **kw: Any) -> httpx.Response:
    app = Starlette(routes=ROUTES, middleware=[Middleware(DirectRoutes, routes=ROUTES)])

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            return await client.request(method, path, **kw)

    return asyncio.run(go())


def test_the_table_holds_the_fixed_paths_of_async_endpoints_only() -> None:
    table = fixed_routes(ROUTES)
    assert set(table) == {("POST", "/v1/responses"), ("GET", "/health"), ("HEAD", "/health")}
    assert table["POST", "/v1/responses"] is seen


def test_a_fixed_path_skips_the_router_and_a_path_with_parameters_does_not() -> None:
    direct = call("POST", "/v1/responses", content=b'{"input": "hi"}')
    assert direct.json() == {"router": False, "params": {}, "body": '{"input": "hi"}'}
    routed = call("GET", "/v1/responses/resp_1")
    assert routed.json() == {"router": True, "params": {"response_id": "resp_1"}, "body": ""}


def test_what_the_table_lacks_is_answered_by_the_router() -> None:
    assert call("GET", "/v1/responses").status_code == 405  # a fixed path, another method
    assert call("GET", "/nowhere").status_code == 404
    assert call("GET", "/sync").text == "from a thread"  # a plain function endpoint


def test_the_path_under_a_mount_is_the_one_looked_up() -> None:
    def path(full: str, root: str) -> str:
        return route_path({"path": full, "root_path": root})

    assert path("/v1/responses", "") == "/v1/responses"
    assert path("/llm/v1/responses", "/llm") == "/v1/responses"
    assert path("/llmx/v1/responses", "/llm") == "/llmx/v1/responses"  # not under the mount
    assert path("/llm", "/llm") == "/llm"
