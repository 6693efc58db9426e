"""Responses stream -> Chat Completions chunks: the reverse of ``chat.py``.

``ResponsesToChat`` takes the parsed ``data:`` payloads of a Responses
stream, one at a time, and returns the ``chat.completion.chunk`` dicts to
send; ``chat_sse_from_responses`` (and its async twin) frame them as chat
SSE ending with ``data: [DONE]``.

Routing. Event types are read through the dialect's ``wire_types`` (so
openresponses' ``response.reasoning.delta`` is raw reasoning like openai's
``response.reasoning_text.delta``) and item types through its
``item_types``.  Every event is tied to its item by ``item_id`` (or by
``output_index`` when it carries no id), never to "the last item added", so
interleaved items stay apart.  Some servers (a GitHub Copilot gateway, for
one) give every event a fresh ``item_id``: an id that names no known item
while its ``output_index`` does is routed by ``output_index`` (and
``content_index`` / ``summary_index`` within it), ``output_item.done``
included, so its text is not sent a second time; this is reported once as a
warning: appended to ``ResponsesToChat.warnings`` and logged on this
module's logger (``logging`` prints it to stderr when nothing is
configured, as in the CLI).

Mapping:

- ``output_text`` -> ``delta.content``; ``refusal`` -> ``delta.refusal``.
- Reasoning, raw (``reasoning_text``) and summaries alike, by ``reasoning``:
  ``"reasoning_content"`` -> ``delta.reasoning_content``; ``"reasoning"`` ->
  ``delta.reasoning``; ``"think"`` -> inline in ``delta.content`` between
  ``<think>\\n`` and ``\\n</think>\\n\\n``; ``"omit"`` -> dropped.  Two
  reasoning parts in a row are separated by a blank line.  An open think
  block is closed before any text, refusal, tool call or hosted-tool note,
  and at every end: completed, incomplete, failed, error, or ``close()``.
- ``function_call`` and ``custom_tool_call`` items -> ``delta.tool_calls``.
  Indexes are 0-based and contiguous, in order of ``output_item.added``.
  The first chunk of a call carries ``id`` (the ``call_id``), ``type``
  ``"function"`` and ``function.name`` (``namespace.name`` when namespaced)
  with empty arguments; later chunks carry only ``index`` and
  ``function.arguments``.  A custom tool's free-form input is sent as its
  arguments, since chat streams only carry function tool calls.
- Done events deliver what deltas did not: ``*.done`` events and
  ``output_item.done`` send the missing suffix (the done text minus what was
  already sent), so arguments (or text) that arrive only at the end are not
  lost.  A done text that does not extend what was sent cannot be expressed
  in an append-only chat stream and is ignored, with a warning (``done-text-differs``).
  Items still open at ``response.completed`` or ``response.incomplete`` are closed
  from the response's own output, as the SDK takes it, with a warning
  (``never-closed``).  Argument events for a call
  whose ``output_item.added`` never came are dropped; its
  ``output_item.done`` then delivers the whole call.
- Items the client must act on become tool calls as well, opened at
  ``output_item.added`` and given their arguments, one JSON object, at
  ``output_item.done`` (``id`` is the ``call_id``, or the item ``id`` when
  there is none):

  - ``apply_patch_call`` -> ``apply_patch``, arguments: its ``operation``
    (``type``, ``path``, ``diff``);
  - ``local_shell_call`` -> ``local_shell``: its ``action`` (``type``,
    ``command``, ``env``, ...);
  - ``shell_call`` -> ``shell``: its ``action`` (``commands``,
    ``timeout_ms``, ``max_output_length``);
  - ``computer_call`` -> ``computer``: its ``action`` (or
    ``{"actions": [...]}`` when it carries a list);
  - ``mcp_approval_request`` -> ``mcp_approval_request``: its
    ``server_label``, ``name`` and ``arguments`` (the string, as sent).

  A ``shell_call`` whose ``environment`` is a container
  (``container_auto``, ``container_reference``) runs on the server and is
  treated as hosted.
- Hosted tools (``web_search_call``, ``file_search_call``,
  ``code_interpreter_call``, ``mcp_call``, ``mcp_list_tools``,
  ``image_generation_call``, ``tool_search_call``, ``program``, the
  ``*_output`` items and any item type not named here) run on the server or
  have no chat equivalent: they are not client tool calls, and never become
  ``tool_calls``.  ``hosted="omit"`` (the default) sends nothing for them;
  ``hosted="content"`` sends a one-line note such as
  ``[web_search_call: completed]`` in ``delta.content`` when the item is
  done.  ``compaction`` items are always silent.  Unknown item and event
  types are passed over the same way; they never raise.

Endings:

- ``response.completed`` -> ``finish_reason`` ``"tool_calls"`` if a tool
  call (of any kind above) was made, else ``"stop"``.
- ``response.incomplete`` -> ``"length"`` for ``max_output_tokens``,
  ``"content_filter"`` for ``content_filter``, otherwise as completed.
- ``response.failed``, an ``error`` event, or a bare ``{"error": {...}}``
  payload (no ``type``) -> one payload
  ``{"error": {"message", "type", "param", "code"}}``, on which the OpenAI
  SDK raises ``APIError``; nothing follows it but ``[DONE]``.  An upstream
  error never ends as ``length``.
- A stream that stops without a terminal event ends on ``close()`` with
  ``finish_reason`` ``"length"``, mirroring how ``chat.py`` treats chat
  input that stops early.
- With ``include_usage`` every chunk has ``"usage": null`` and the terminal
  response's usage follows the finish chunk in a ``choices: []`` chunk
  (omitted when the response carries no usage).

Every chunk has the same ``id`` (``chatcmpl-`` + response id), ``created``
(the response's ``created_at``) and ``model``; ``role`` is sent once, in the
first chunk.
"""

from __future__ import annotations

from .api import (
    achat_sse_from_responses,
    achat_sse_from_sse,
    chat_chunks_from_responses,
    chat_sse_from_responses,
    chat_sse_from_sse,
)
from .converter import ResponsesToChat
from .shapes import (
    ACTION_CALLS,
    CLIENT_CALLS,
    DONE_FRAME,
    HOSTED_ITEMS,
    HOSTED_MODES,
    REASONING_MODES,
    HostedMode,
    Payload,
    ReasoningMode,
    _frame,
    action_arguments,
    chat_logprobs,
    chat_usage,
    is_client_action,
)

__all__ = [
    "ACTION_CALLS",
    "CLIENT_CALLS",
    "DONE_FRAME",
    "HOSTED_ITEMS",
    "HOSTED_MODES",
    "REASONING_MODES",
    "HostedMode",
    "Payload",
    "ReasoningMode",
    "ResponsesToChat",
    "_frame",
    "achat_sse_from_responses",
    "achat_sse_from_sse",
    "action_arguments",
    "chat_chunks_from_responses",
    "chat_logprobs",
    "chat_sse_from_responses",
    "chat_sse_from_sse",
    "chat_usage",
    "is_client_action",
]
