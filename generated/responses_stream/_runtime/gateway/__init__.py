"""The gateway: a Responses API served over HTTP and WebSocket in front of a Chat
Completions server, and a Chat Completions API in front of a Responses server.

Request translation (``chat_request``, ``responses_request``, ``items``,
``references``), the routes (``app``, ``responses_routes``, ``chat_route``,
``compact``, ``websocket``), one turn's plan and stream (``turn``, ``context``), the
upstream client (``upstream``), the response store (``store``) and the ASGI app
factory users import as ``responses_stream.gateway`` (``asgi``).  Imports ``core``,
``inputs`` and ``consumers``; only ``cli`` imports it.
"""
