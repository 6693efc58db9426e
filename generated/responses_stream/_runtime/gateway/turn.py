"""One Responses turn served from the upstream's chat completions, or from its own
Responses API repaired (``responses_upstream``).

``plan_turn`` checks and translates the request (every refusal a
:class:`GatewayError`, before the upstream is called); ``Turn.start`` opens the
upstream (an upstream failure there is still an HTTP error with its status: up to its
headers for a stream, up to its first event for an answer that is not streamed);
``Turn.frames`` then yields the SSE frames of the converted stream.  ``Turn.response``
is the final Response, read from the terminal event, so a non-streaming answer and a
stream can never disagree.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import secrets
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ..core.errors import NotReady
from ..core.ids import CountingIds
from ..core.processor import ProcessorError, get_dialect
from ..inputs.api import asse_from_chat
from ..inputs.repair import asse_from_responses
from .chat_request import translate
from .config import GatewayConfig
from .context import ConnectionCache, conversation_id, find_conversation, load_context
from .errors import GatewayError, bad_request
from .items import with_status
from .references import input_items
from .responses_upstream import responses_body
from .routing import Routed
from .store import Store, StoredResponse
from .store_guard import check_writable
from .tenancy import Caller
from .upstream import Upstream, UpstreamStream

log = logging.getLogger("responses_stream.gateway")

# The statuses of a response whose items are added to its conversation.
ENDED_IN_CONVERSATION = ("completed", "incomplete")
# Fields of the create body the gateway itself acts on (not sent upstream as such).
TRANSPORT_FIELDS = ("type", "stream", "stream_options", "background")
_TERMINAL_FRAME = re.compile(
    rb"^event: response\.(?:completed|incomplete|failed)\ndata: (.*)$", re.MULTILINE
)
# The one chunk of a turn with no model call: it ends at once, with nothing said.
NO_GENERATION = {
    "id": "prewarm",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "",
    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
}


def new_response_id() -> str:
    return "resp_" + secrets.token_hex(24)


@dataclass
class Turn:
    """A planned turn: what goes upstream, what is echoed, what is kept."""

    body: dict[str, Any]
    dialect: str
    response_id: str
    context: list[dict[str, Any]]
    input_items: list[dict[str, Any]]
    upstream_body: dict[str, Any]
    echo: dict[str, Any]
    store: bool
    dropped: list[str] = field(default_factory=list)  # hosted tools left out upstream
    tenant: str | None = None  # whose record it is, once stored
    conversation: str | None = None  # the conversation it is made in, its items added at its end
    api: str = "chat"  # the upstream API it is served from: "chat", or "responses" repaired
    response: dict[str, Any] | None = None
    _stream: UpstreamStream | None = field(default=None, repr=False)
    _frames: AsyncGenerator[bytes, None] | None = field(default=None, repr=False)
    _first: list[bytes] = field(default_factory=list, repr=False)

    @property
    def items(self) -> list[dict[str, Any]]:
        """The context a continuation of this turn starts from (once it ended)."""
        output = (self.response or {}).get("output")
        return [*self.context, *self.input_items, *(output if isinstance(output, list) else [])]

    async def start(
        self, upstream: Upstream, authorization: str | None, *, first_event: bool = True
    ) -> None:
        """Open the upstream and the conversion; :class:`GatewayError` when either fails.

        A stream (``first_event`` false) starts as soon as the upstream accepted the
        request, so ``response.created`` goes out at once; an answer that is not
        streamed waits for the upstream's first event, so a failure up to there is
        still an HTTP error."""
        repair = self.api == "responses"
        path = "/responses" if repair else "/chat/completions"
        stream = upstream.stream(path, self.upstream_body, authorization, terminal=repair)
        convert = asse_from_responses if repair else asse_from_chat
        frames = cast(
            AsyncGenerator[bytes, None],
            convert(
                stream,
                dialect=self.dialect,
                request=self.echo,
                model=self.upstream_body["model"],
                response_id=self.response_id,
                joined=True,
            ),
        )
        try:  # the opening frames need no upstream data: a bad echo costs no call
            self._first.append(await anext(frames))
        except ProcessorError as exc:
            await frames.aclose()
            raise bad_request(f"invalid request: {exc}", None) from None
        try:
            await stream.open(first_event)
        except BaseException:
            await frames.aclose()
            raise
        self._stream, self._frames = stream, frames

    @property
    def opening(self) -> bytes:
        """The frames :meth:`start` made before any upstream data (the stream's start)."""
        return b"".join(self._first)

    def prewarm(self) -> None:
        """Start a turn that calls no model (WebSocket ``generate: false``): its stream
        is a completed response with no output, kept for continuation like any turn."""
        self._frames = cast(
            AsyncGenerator[bytes, None],
            asse_from_chat(
                _one(NO_GENERATION),
                dialect=self.dialect,
                request=self.echo,
                model=self.upstream_body["model"],
                response_id=self.response_id,
                joined=True,
            ),
        )

    async def frames(self, store: Store | None = None) -> AsyncGenerator[bytes, None]:
        """The SSE frames of the stream, those of one upstream chunk in one piece; sets
        ``response`` at its end.  With ``store``, a turn to be kept (or made in a
        conversation) holds its terminal event back until the store has it (see
        :func:`keep`); when the store fails, the stream ends with ``response.failed``
        instead, saying the response was not stored."""
        if self._frames is None:
            raise NotReady("Turn.start() must succeed first")
        frames, last, held = self._frames, b"", b""
        hold = store is not None and (self.store or self.conversation is not None)
        try:
            for frame in self._first:
                last = _terminal(frame) or last
                yield frame
            self._first.clear()
            async for frame in frames:
                terminal = _terminal(frame)
                last = terminal or last
                cut = _terminal_start(frame) if terminal and hold and not held else None
                if cut is not None:
                    frame, held = frame[:cut], frame[cut:]
                elif held:
                    frame, held = b"", held + frame
                if frame:
                    yield frame
        finally:
            await frames.aclose()
            await self.aclose()
        self.response = _response_of(last)
        if store is None:
            return
        try:
            await keep(store, self)
        except GatewayError as exc:
            if not held:  # its terminal event went out with the first frames
                log.error("response %s was not stored: %s", self.response_id, exc.message)
                return
            held = self._not_stored(held, exc)
        if held:
            yield held

    def _not_stored(self, held: bytes, exc: GatewayError) -> bytes:
        """The terminal frame ``held`` as ``response.failed``: the store did not take it."""
        event = json.loads(_TERMINAL_FRAME.findall(held)[-1])
        response = event["response"]
        response.update(status="failed", incomplete_details=None)
        if "completed_at" in response:
            response["completed_at"] = None
        message = f"The response was not stored: {exc.message}"
        response["error"] = {"code": "server_error", "message": message}
        self.response = response
        return ending_frames(self.dialect, event["sequence_number"], response)

    async def aclose(self) -> None:
        if self._stream is not None:
            await self._stream.aclose()


async def _one(chunk: Mapping[str, Any]) -> AsyncGenerator[Mapping[str, Any], None]:
    yield chunk


def _terminal(frames: bytes) -> bytes | None:
    """The payload of the last terminal event among ``frames`` (the conversion's SSE:
    each event named on its ``event:`` line)."""
    if not (
        b"event: response.completed\n" in frames
        or b"event: response.incomplete\n" in frames
        or b"event: response.failed\n" in frames
    ):
        return None
    payloads: list[bytes] = _TERMINAL_FRAME.findall(frames)
    return payloads[-1] if payloads else None


def _terminal_start(frames: bytes) -> int | None:
    """Where the terminal event's frame starts among ``frames``, if it is there."""
    for name in (b"completed", b"incomplete", b"failed"):
        at = frames.find(b"event: response." + name + b"\n")
        if at >= 0:
            return at
    return None


def ending_frames(
    dialect: str, seq: int, response: dict[str, Any], error: tuple[str, str] | None = None
) -> bytes:
    """The events that end a response the gateway itself ended (a background run lost or
    cancelled, a response the store did not take), numbered from ``seq``, each as the
    dialect spells it: ``error`` (when ``error``, its code and message, is given), then
    ``response.failed`` carrying ``response`` (a cancelled run ends with it too, its
    Response ``cancelled``, as OpenAI's API ends one)."""
    d = get_dialect(dialect)
    emitter = d.emitter(ids=CountingIds())
    emitter.created()  # the state the error and failed transitions start from
    emitter.seq = itertools.count(seq)
    events = [] if error is None else emitter.error(error[1], code=error[0])
    events += emitter.failed(error[1] if error else "cancelled")
    encoder = d.encoder()
    *head, failed = (encoder.encode(e) for e in events)
    payload = json.loads(failed.split(b"data: ", 1)[1])
    payload["response"] = response
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return b"".join(head) + f"event: response.failed\ndata: {data}\n\n".encode()


def final_response(frames: bytes) -> dict[str, Any] | None:
    """The Response of the terminal event among SSE ``frames``, if one is there."""
    payload = _terminal(frames)
    return None if payload is None else _response_of(payload)


def _response_of(payload: bytes) -> dict[str, Any] | None:
    if not payload:
        return None
    try:
        event = json.loads(payload)
    except ValueError:
        return None
    response = event.get("response") if isinstance(event, dict) else None
    return response if isinstance(response, dict) else None


async def plan_turn(
    config: GatewayConfig,
    store: Store,
    body: dict[str, Any],
    dialect: str,
    *,
    caller: Caller,
    route: Routed,
    cache: ConnectionCache | None = None,
    missing_status: int = 404,
) -> Turn:
    """Translate one create body (checked: :func:`check_request`) for the upstream
    ``route`` names (the model sent is the route's); :class:`GatewayError` for what
    cannot be served."""
    inputs = await input_items(store, body.get("input"), caller=caller, cache=cache)
    previous = body.get("previous_response_id")
    conversation = conversation_id(body.get("conversation"))
    context: list[dict[str, Any]] = []
    if conversation is not None:
        if previous is not None:
            raise GatewayError(
                400,
                "Mutually exclusive parameters: Ensure you are only providing one of: "
                "'previous_response_id' or 'conversation'.",
                code="mutually_exclusive_parameters",
            )
        await find_conversation(store, conversation, caller, "conversation")
        context = await store.conversation_items(conversation)
    elif previous is not None:
        context = await load_context(
            store,
            previous,
            caller=caller,
            cache=cache,
            max_chain=config.max_chain,
            status=missing_status,
        )
    api, dropped = "chat", []
    if route.settings.responses == "repair":
        api, upstream_body = "responses", responses_body(body, [*context, *inputs], route.model)
    else:
        chat = translate(
            body,
            [*context, *inputs],
            reasoning_field=route.settings.reasoning_field,
            context_len=len(context),
            hosted_tools=route.settings.hosted_tools,
        )
        upstream_body, dropped = chat.body, chat.dropped
        upstream_body["model"] = route.model
    if dropped:
        log.info("left out of the upstream request (hosted tools): %s", ", ".join(dropped))
    keep = body.get("store")
    if keep is not False or conversation is not None:
        check_writable(store)  # a store known to be down: refused before the upstream is called
    echo = {k: v for k, v in body.items() if k not in ("input", *TRANSPORT_FIELDS)}
    echo["store"] = keep is not False
    if conversation is not None:
        echo["conversation"] = {"id": conversation}
    return Turn(
        body=body,
        dialect=dialect,
        response_id=new_response_id(),
        context=context,
        input_items=inputs,
        upstream_body=upstream_body,
        echo=echo,
        store=keep is not False,
        dropped=dropped,
        tenant=caller.tenant,
        conversation=conversation,
        api=api,
    )


async def keep(store: Store, turn: Turn) -> None:
    """Store a finished turn when it asked to be stored, and add its input and output items
    to its conversation when it completed (or was cut short); a store that fails is a
    :class:`GatewayError` (503, see ``store_guard``), so that no answer says a response
    was kept that was not."""
    if turn.response is None:
        return
    if turn.conversation is not None and turn.response.get("status") in ENDED_IN_CONVERSATION:
        # first: once the record reads completed (a background poll), the items are there
        output = turn.response.get("output")
        items = [*turn.input_items, *(output if isinstance(output, list) else [])]
        await store.conversation_append(turn.conversation, with_status(items))
    if turn.store:
        await store.put(StoredResponse(turn.response, turn.input_items, tenant=turn.tenant))
