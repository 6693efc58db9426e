"""Chat Completions stream -> Responses stream, on top of the stream processor.

Input is the chunk shape that OpenAI chat chunks and vLLM's DeltaMessage
share.  Routing of delta fields to items comes from the chat routes spec.

Bad input never yields an invalid or silently truncated stream:
- broken input (bad JSON, no ``choices``, an upstream error object, a tool
  fragment for a new index with neither id nor name, content after
  ``finish_reason``) ends the stream with ``error`` and ``response.failed``; an
  upstream error object keeps its code and message (see ``upstream_error``);
- input that stops early (no ``finish_reason``) ends it with
  ``response.incomplete`` (reason ``max_output_tokens``);
- input without a single chunk (empty, only ``[DONE]``, not SSE) ends it with
  ``error`` (code ``empty_input``) and ``response.failed``;
- values of the wrong shape where the chunk format has an object or a list
  (``choices: 5``, ``delta: "x"``, ``tool_calls: {}``, a ``finish_reason`` that is not
  a string, a choice or tool ``index`` that is not an integer) are broken input;
  malformed ``logprobs`` and ``usage`` are not (see ``convert``): they are dropped or
  count as unknown, and the text stands;
- in every case every item is closed and all text received is kept.

Lone UTF-16 surrogates (a ``"\\ud800"`` escape without its pair) become U+FFFD, and
the converter says so: a warning in ``ChatToResponses.warnings`` and on this module's
logger.  A surrogate pair split over two deltas of one text is joined into its
character: a high surrogate that ends a delta waits for the next one.

Chat input as providers send it:
- ``delta.content`` may be a list of parts (Mistral, Magistral): ``{"type": "text"}``
  parts go where a string ``content`` goes, ``{"type": "thinking", "thinking": ...}``
  parts (a string or a list of text parts) go where ``reasoning_content`` goes, in order.
- ``n > 1``: choice 0 is converted.  Output (text, reasoning, refusal, tool calls) on any
  other choice ends the stream with ``error`` (code ``unsupported_n``) and
  ``response.failed``, keeping what came before; empty deltas there are ignored.
- A tool call's ``function.name`` split over fragments is joined; a fragment repeating
  the name so far (or sending ``""``) adds nothing.  Since ``output_item.added`` carries
  name and call id, the item opens once its first arguments arrive with name and id
  known, or when it must (another tool index, text, finish, end); arguments received
  before are buffered.  ``arguments`` sent as a JSON value are serialized compactly.
- ``finish_reason`` values outside the OpenAI set map by ``EXTRA_FINISH_REASONS``
  (the spec's ``finish_reasons`` win); ``failed`` ends the stream with ``error``
  (code ``upstream_error``); a value in neither table is bad input.
"""

from __future__ import annotations

from .converter import ChatToResponses
from .general import ChunkReader
from .shapes import (
    BAD_INPUT,
    EMPTY_INPUT,
    EXTRA_FINISH_REASONS,
    UNSUPPORTED_N,
    UPSTREAM_ERROR,
    BadChunk,
    DataPayload,
    InputFailure,
    upstream_error,
    wants_summary,
)

__all__ = [
    "BAD_INPUT",
    "EMPTY_INPUT",
    "EXTRA_FINISH_REASONS",
    "UNSUPPORTED_N",
    "UPSTREAM_ERROR",
    "BadChunk",
    "ChatToResponses",
    "ChunkReader",
    "DataPayload",
    "InputFailure",
    "upstream_error",
    "wants_summary",
]
