"""The gateway's fixed-path HTTP routes, reached without the router's search.

Starlette's router tries each route's pattern in turn, then wraps the endpoint in two
exception layers, each of which also wraps ``send``: for ``POST /v1/responses``, about
30 µs of a stream's setup and 1.5 µs of every chunk it sends.  A request whose method
and path name a route without path parameters goes straight to that route's endpoint
instead; any other request (a path with parameters, a WebSocket, a path or method no
route has) goes on to the router, which answers it as before (its 404 and 405
included).  No endpoint of the gateway raises ``HTTPException`` (the one exception
those layers turn into an answer): each answers its errors itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .http import route_path

Endpoint = Callable[[Request], Awaitable[Response]]


def fixed_routes(routes: Iterable[BaseRoute]) -> dict[tuple[str, str], Endpoint]:
    """The endpoint of each method and path of ``routes`` without path parameters (an
    endpoint that is a coroutine function: the router runs any other in a thread)."""
    found: dict[tuple[str, str], Endpoint] = {}
    for route in routes:
        if (
            isinstance(route, Route)
            and not route.param_convertors
            and route.methods
            and inspect.iscoroutinefunction(route.endpoint)
        ):
            for method in route.methods:
                found.setdefault((method, route.path), route.endpoint)
    return found


class DirectRoutes:
    """ASGI middleware: the requests of ``routes`` without path parameters served by
    their endpoints directly (see the module doc)."""

    def __init__(self, app: ASGIApp, routes: Iterable[BaseRoute]) -> None:
        self.app = app
        self.endpoints = fixed_routes(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            endpoint = self.endpoints.get((scope["method"], route_path(scope)))
            if endpoint is not None:
                scope["endpoint"], scope["path_params"] = endpoint, {}
                response = await endpoint(Request(scope, receive, send))
                return await response(scope, receive, send)
        await self.app(scope, receive, send)
