"""Harmony tokens -> Responses stream: openai-harmony's ``StreamableParser`` drives
``HarmonyToResponses``.

A server that samples gpt-oss tokens feeds each one to ``HarmonyTokens.process``;
the parser splits them into messages (channel, recipient, content type, text) and
each message becomes the item its Harmony route names, streamed as it comes.

openai-harmony is imported only when a bridge or an encoding is made, so the
package works without it (install the ``harmony`` extra to use this module).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..core.errors import BadValue, TransitionError
from ..core.limits import LimitExceeded
from ..core.processor import ProcessorError, StreamProcessor, get_dialect
from .harmony import BAD_HARMONY, HarmonyToResponses

VOCAB_FILE = "o200k_base.tiktoken"
"""The vocabulary file openai-harmony's gpt-oss encoding reads."""

_START, _MESSAGE = "<|start|>", "<|message|>"
_TURN_ENDS = ("<|return|>", "<|call|>")


def _harmony() -> Any:
    """The ``openai_harmony`` module, or ProcessorError saying how to install it."""
    try:
        return importlib.import_module("openai_harmony")
    except ImportError:
        raise ProcessorError(
            "Harmony tokens need the openai-harmony package: "
            "pip install 'responses-stream[harmony]'"
        ) from None


def load_harmony_encoding(vocab_dir: str | os.PathLike[str] | None = None) -> Any:
    """openai-harmony's gpt-oss encoding (``HarmonyEncodingName.HARMONY_GPT_OSS``).

    ``vocab_dir`` is a folder holding ``o200k_base.tiktoken``: openai-harmony reads it
    there (``TIKTOKEN_ENCODINGS_BASE`` is set for the load only, and the file's SHA-256
    is checked) instead of downloading it.  Without it openai-harmony's own lookup
    applies: ``TIKTOKEN_ENCODINGS_BASE`` if set, else its cache, else the network.
    """
    harmony = _harmony()
    if vocab_dir is None:
        return harmony.load_harmony_encoding(harmony.HarmonyEncodingName.HARMONY_GPT_OSS)
    path = os.fspath(vocab_dir)
    if not os.path.isfile(os.path.join(path, VOCAB_FILE)):
        raise ProcessorError(f"no {VOCAB_FILE} in {path!r}")
    before = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = path
    try:
        return harmony.load_harmony_encoding(harmony.HarmonyEncodingName.HARMONY_GPT_OSS)
    finally:
        if before is None:
            del os.environ["TIKTOKEN_ENCODINGS_BASE"]
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = before


class HarmonyTokens:
    """Feeds completion tokens through openai-harmony's ``StreamableParser`` into a
    ``HarmonyToResponses``; read events with ``conv.proc.drain()`` (or use the
    ``*_sse`` methods).

    ``encoding`` is a ``HarmonyEncoding`` (``load_harmony_encoding()``); ``parser`` a
    ``StreamableParser`` of it if the server has one already (by default a new one for
    the assistant role, ``strict`` as given).  Each message streams into its item from
    the token that ends its header; a stop token (``<|end|>``, ``<|call|>``,
    ``<|return|>``) or ``process_eos()`` ends it; bytes left undecoded at the end of a
    message arrive as openai-harmony decodes them (U+FFFD for invalid UTF-8).

    Bad tokens never raise: a token that is not an int of the vocabulary, a token the
    parser rejects, or a message from a role other than the assistant ends the stream
    with ``error`` (code ``invalid_harmony_input``) and ``response.failed``, keeping
    every character received.  Only going over a ``Limits`` cap raises
    ``LimitExceeded``, after the stream has ended the same way.
    """

    def __init__(
        self,
        conv: HarmonyToResponses,
        encoding: Any,
        *,
        parser: Any = None,
        strict: bool = True,
    ) -> None:
        if not isinstance(conv, HarmonyToResponses):
            raise ProcessorError(f"HarmonyTokens needs a HarmonyToResponses, got {conv!r:.80}")
        harmony = _harmony()
        if not isinstance(encoding, harmony.HarmonyEncoding):
            raise ProcessorError(f"encoding must be a HarmonyEncoding, got {encoding!r:.80}")
        self.conv = conv
        self.encoding = encoding
        self._assistant = harmony.Role.ASSISTANT
        if parser is None:
            parser = harmony.StreamableParser(encoding, harmony.Role.ASSISTANT, strict=strict)
        elif not isinstance(parser, harmony.StreamableParser):
            raise ProcessorError(f"parser must be a StreamableParser, got {parser!r:.80}")
        self.parser = parser
        special = encoding.encode
        self._start = special(_START, allowed_special="all")[0]
        self._message = special(_MESSAGE, allowed_special="all")[0]
        self._stops = frozenset(encoding.stop_tokens())
        self._turn_ends = frozenset(special(t, allowed_special="all")[0] for t in _TURN_ENDS)
        self._known: set[int] = set()  # tokens seen to decode
        data = parser.state_data
        self.state = {"ExpectStart": "start", "Header": "header"}.get(data["state"], "content")
        self.header_tokens = len(data.get("header_tokens") or ())
        self.messages = len(parser.messages)  # messages the parser had finished
        self.channel: str | None = None
        self.recipient: str | None = None
        self.content_type: str | None = None
        self.streamed = 0  # characters of the open message sent on
        self.streaming = False  # a message is open (its header has ended)
        if self.state == "content":  # the server's parser is inside a message already
            text = parser.current_content
            self.streamed = len(text)
            self._guard(self._begin, text)
        self.turn_over = False  # the last message ended with <|return|> or <|call|>
        self.ignored = 0  # tokens given after the stream ended

    @property
    def done(self) -> bool:
        return self.conv.done

    # -- input ----------------------------------------------------------------
    def process(self, token: int) -> None:
        """One sampled token."""
        if self.conv.done or self.conv.proc.ended:
            self.ignored += 1
            return
        self._guard(self._process, token)

    def process_eos(self) -> None:
        """The model stopped: the open message, if any, is complete."""
        if self.conv.done or self.conv.proc.ended:
            return
        self._guard(self._eos)

    def end(self, usage: Mapping[str, Any] | None = None, reason: str | None = None) -> None:
        """The tokens are over.  Inside a message or a header, the output was cut short:
        ``response.incomplete`` (``reason``, by default ``max_output_tokens``)."""
        if self.conv.done or self.conv.proc.ended:
            return
        if self.state == "content":
            self._guard(self._cut)
            if self.conv.done:
                return
        elif self.state == "header" and self.header_tokens and reason is None:
            reason = "max_output_tokens"
        self.conv.end(usage, reason)

    def process_sse(self, token: int) -> list[bytes]:
        """``process``, then the SSE frames of what it produced."""
        self.process(token)
        return self.conv.proc.drain_sse()

    def end_sse(
        self, usage: Mapping[str, Any] | None = None, reason: str | None = None
    ) -> list[bytes]:
        """``end``, then the SSE frames of what it produced (with the closing frame)."""
        self.end(usage, reason)
        return self.conv.proc.drain_sse()

    # -- internals --------------------------------------------------------------
    def _guard(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except LimitExceeded:
            raise  # HarmonyToResponses has ended the stream already
        except (ProcessorError, TransitionError, ValueError) as exc:
            self._fail(str(exc))

    def _fail(self, message: str) -> None:
        if not self.conv.done and not self.conv.proc.ended:
            self.conv._fail(message, BAD_HARMONY)

    def _check(self, token: Any) -> None:
        if type(token) is not int or token < 0:
            raise BadValue(f"a Harmony token must be a non-negative int, got {token!r:.80}")
        if token in self._known or token in self._stops:
            return
        try:
            self.encoding.decode([token])
        except Exception:
            raise BadValue(f"token {token} is not in the {self.encoding.name} vocabulary") from None
        if len(self._known) < 65536:
            self._known.add(token)

    def _parse(self, token: int | None) -> None:
        try:
            if token is None:
                self.parser.process_eos()
            else:
                self.parser.process(token)
        except Exception as exc:  # openai-harmony's HarmonyError, or its bindings'
            raise BadValue(f"harmony parser: {exc}") from None

    def _process(self, token: Any) -> None:
        self._check(token)
        state = self.state
        self._parse(token)
        if state == "start":
            if token == self._start:
                self.state, self.header_tokens = "header", 1  # <|start|> counts
        elif state == "header":
            if token == self._message:
                self.state = "content"
                self.streamed = 0
                self._begin()
            elif token in self._stops:  # a lenient parser ends a header-only message here
                self.state = "start"
                self._settle(token)
            else:
                self.header_tokens += 1
        elif token in self._stops:
            self.state = "start"
            self._settle(token)
        else:
            delta = self.parser.last_content_delta
            if delta:
                self.streamed += len(delta)
                self.conv.segment(self.channel, self.recipient, delta)

    def _eos(self) -> None:
        if self.state == "header" and not self.header_tokens:
            return  # between messages: nothing to end
        state = self.state
        self._parse(None)
        if state == "content":
            self.state = "start"
            self._settle(None)

    def _cut(self) -> None:
        """Cut inside a message: send what the parser still held, leave the message open."""
        self._parse(None)
        tail = self._last_text()[self.streamed :]
        self.messages += 1
        self.state = "start"
        self.streaming = False
        if tail:
            self.streamed += len(tail)
            self.conv.segment(self.channel, self.recipient, tail)

    def _begin(self, send: str = "") -> None:
        parser = self.parser
        role = parser.current_role
        if role != self._assistant:
            name = getattr(role, "value", role)
            raise BadValue(f"a message from role {name!r} in the model's output")
        self.channel = parser.current_channel
        self.recipient = parser.current_recipient
        self.content_type = parser.current_content_type
        self.streaming = True
        self.conv.segment(self.channel, self.recipient, send)  # the item opens now

    def _last_text(self) -> str:
        messages = self.parser.messages
        if len(messages) <= self.messages:
            return ""
        return "".join(getattr(c, "text", "") for c in messages[-1].content)

    def _settle(self, token: int | None) -> None:
        """A message the parser has finished: the rest of its text, then its end."""
        messages = self.parser.messages
        if len(messages) <= self.messages:
            return  # a header-only message without a role: nothing was made of it
        self.messages = len(messages)
        last = messages[-1]
        text = "".join(getattr(c, "text", "") for c in last.content)
        if self.streaming:
            tail = text[self.streamed :]
            if tail:
                self.conv.segment(self.channel, self.recipient, tail)
        else:  # a message a lenient parser made of a header alone
            role = last.author.role
            if role != self._assistant:
                raise BadValue(f"a message from role {role.value!r} in the model's output")
            self.channel, self.recipient = last.channel, last.recipient
            self.content_type = last.content_type
            self.conv.segment(self.channel, self.recipient, text)
        self.streaming = False
        self.streamed = 0
        self.conv.end_message(self.content_type)
        self.turn_over = token in self._turn_ends


def _bridge(
    encoding: Any,
    dialect: Any,
    request: Mapping[str, Any] | None,
    model: str | None,
    kw: Mapping[str, Any],
) -> HarmonyTokens:
    proc = StreamProcessor(get_dialect(dialect), request=request, model=model, **kw)
    proc.start()
    return HarmonyTokens(HarmonyToResponses(proc, request), encoding)


def events_from_harmony_tokens(
    tokens: Iterable[int],
    encoding: Any,
    *,
    dialect: Any = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    usage: Mapping[str, Any] | None = None,
    **kw: Any,
) -> Iterator[Any]:
    """Typed Responses events for the completion tokens of one assistant turn."""
    bridge = _bridge(encoding, dialect, request, model, kw)
    proc = bridge.conv.proc
    yield from proc.drain()
    for token in tokens:
        bridge.process(token)
        yield from proc.drain()
        if bridge.done:
            return
    bridge.end(usage)
    yield from proc.drain()


def sse_from_harmony_tokens(
    tokens: Iterable[int],
    encoding: Any,
    *,
    dialect: Any = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    usage: Mapping[str, Any] | None = None,
    **kw: Any,
) -> Iterator[bytes]:
    """The same stream as SSE frames, with the dialect's closing frame."""
    bridge = _bridge(encoding, dialect, request, model, kw)
    proc = bridge.conv.proc
    yield from proc.drain_sse()
    for token in tokens:
        yield from bridge.process_sse(token)
        if bridge.done:
            return
    yield from bridge.end_sse(usage)
