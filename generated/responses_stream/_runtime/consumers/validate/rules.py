"""The validator's rules: each rule's severity and what it checks, the producer-hygiene
rules ``--strict`` makes errors, and a ``Violation`` of one."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

ERROR = "error"
WARNING = "warning"
# Every rule: its stable id, its severity, and what it means.  An error breaks
# a strict client or an invariant of the protocol; a warning is legal but
# unusual, or rejected only by a newer strict SDK than the producer targeted.
RULES: dict[str, tuple[str, str]] = {
    "MALFORMED_JSON": (
        ERROR,
        "a data line is not JSON, or holds NaN, Infinity or a number beyond the double range",
    ),
    "SSE_LIMIT": (
        ERROR,
        "an SSE line or event is over the parser's size cap; the rest is not read",
    ),
    "LONE_SURROGATE": (
        WARNING,
        "a string holds a UTF-16 surrogate without its pair (clients make it U+FFFD or fail)",
    ),
    "CHAT_COMPLETIONS_STREAM": (
        ERROR,
        "the stream is Chat Completions (chat.completion.chunk), not Responses; "
        "nothing after the first chunk is checked",
    ),
    "MALFORMED_EVENT": (ERROR, "an event is not a JSON object with a string type"),
    "BARE_ERROR": (ERROR, "an error object without a type instead of error + response.failed"),
    "EVENT_NAME_MISMATCH": (ERROR, "the SSE event: line differs from the JSON type"),
    "SEQ_MISSING": (ERROR, "sequence_number is missing or not an integer"),
    "SEQ_LEGACY": (
        WARNING,
        "no event carries sequence_number: a stream from before the API added it",
    ),
    "SEQ_NOT_FROM_ZERO": (ERROR, "sequence_number does not start at 0"),
    "CONTINUATION": (
        WARNING,
        "a stream said to be resumed (starting_after) starts past 0 without "
        "response.created; what came before it is not checked",
    ),
    "SEQ_NOT_INCREASING": (ERROR, "sequence_number does not strictly increase"),
    "NON_STANDARD_EVENT": (ERROR, "an event some servers send that no dialect defines"),
    "EXTENSION_EVENT": (
        ERROR,
        "a slug-prefixed extension event in the openai dialect (strict openai clients reject it)",
    ),
    "UNKNOWN_EXTENSION_EVENT": (
        WARNING,
        "a slug-prefixed extension event the spec does not describe (Open Responses)",
    ),
    "NEWER_EVENT": (WARNING, "an event type the spec does not know: a newer API; not checked"),
    "LEGACY_FIELD": (
        WARNING,
        "a field that older genuine streams leave out, which the newest SDK requires",
    ),
    "SCHEMA_INVALID": (ERROR, "the payload does not match the dialect's model of its event"),
    "CREATED_NOT_FIRST": (ERROR, "the stream does not start with response.created"),
    "ENVELOPE_ORDER": (
        ERROR,
        "an envelope event out of order (created, in_progress, ..., terminal)",
    ),
    "ERROR_WITHOUT_FAILED": (ERROR, "an error event not followed by response.failed"),
    "EVENT_AFTER_TERMINAL": (ERROR, "an event after the terminal event"),
    "MISSING_TERMINAL": (ERROR, "the stream ends without a terminal event"),
    "MISSING_DONE": (ERROR, "an item or part is not closed before the next step or the end"),
    "OUTPUT_MISMATCH": (ERROR, "the terminal Response's output differs from the streamed items"),
    "STATUS_MISMATCH": (ERROR, "the terminal Response's status differs from its event"),
    "TRUNCATED_BUT_COMPLETED": (ERROR, "response.completed although an item is incomplete"),
    "INCOMPLETE_WITHOUT_REASON": (
        ERROR,
        "response.incomplete without a valid incomplete_details.reason",
    ),
    "USAGE_MISSING": (WARNING, "the terminal Response carries no usage"),
    "ITEM_OUTSIDE_RESPONSE": (ERROR, "an item event before response.in_progress or after the end"),
    "ADDRESS_MISSING": (ERROR, "an event lacks output_index or its content/summary index"),
    "DUPLICATE_OUTPUT_INDEX": (ERROR, "output_item.added for an output_index already used"),
    "OUTPUT_INDEX_NOT_DENSE": (ERROR, "output_index skips or goes back"),
    "INTERLEAVED_ITEMS": (WARNING, "an item opens while another is still open"),
    "UNSPECIFIED_ITEM": (WARNING, "an item type without a spec; its payload is not checked"),
    "EXTENSION_ITEM": (
        ERROR,
        "a slug-prefixed extension item in the openai dialect (strict openai clients reject it)",
    ),
    "DUPLICATE_ITEM_ID": (ERROR, "two items share an id"),
    "ITEM_ORDER": (ERROR, "an item event its state machine does not allow here"),
    "ADDED_NOT_IN_PROGRESS": (WARNING, "an item is added with a status other than in_progress"),
    "UNKNOWN_ITEM": (ERROR, "an event for an output_index that was never added"),
    "ITEM_ID_MISMATCH": (ERROR, "an event's item_id differs from the item at its output_index"),
    "EVENT_AFTER_ITEM_DONE": (ERROR, "an event for an item after its output_item.done"),
    "ITEM_TYPE_CHANGED": (ERROR, "output_item.done carries another item type than added"),
    "DONE_IN_PROGRESS": (ERROR, "output_item.done with status in_progress"),
    "DONE_TEXT_MISMATCH": (ERROR, "a done text or item field differs from the concatenated deltas"),
    "DONE_WITHOUT_DELTAS": (WARNING, "a text or arguments that arrive only in their done event"),
    "DONE_PARTS_MISMATCH": (ERROR, "the done item's parts differ from the parts streamed"),
    "ARGUMENTS_NOT_JSON": (WARNING, "completed tool arguments that are not JSON (glued calls?)"),
    "CONTENT_INDEX_NOT_DENSE": (ERROR, "content_index is not dense from 0 within the item"),
    "SUMMARY_INDEX_NOT_DENSE": (ERROR, "summary_index is not dense from 0 within the item"),
    "PART_NOT_OPEN": (ERROR, "a part event before its part was added"),
    "EVENT_AFTER_PART_DONE": (ERROR, "a part event after the part was done"),
    "PART_ORDER": (ERROR, "a part event its state machine does not allow here"),
    "PART_KIND": (ERROR, "a part kind the item type has no slot for"),
}
# Warnings about a producer's hygiene: ``strict`` makes them errors, for server
# authors who test their own output.
HYGIENE = frozenset(
    {
        "INTERLEAVED_ITEMS",
        "USAGE_MISSING",
        "ADDED_NOT_IN_PROGRESS",
        "ARGUMENTS_NOT_JSON",
        "DONE_WITHOUT_DELTAS",
        "LEGACY_FIELD",
        "SEQ_LEGACY",
        "NEWER_EVENT",
        "UNSPECIFIED_ITEM",
        "UNKNOWN_EXTENSION_EVENT",
        "LONE_SURROGATE",
    }
)
# Fields whose bytes the server may change between events (OpenAI re-encrypts
# them): compared by presence only.
OPAQUE_FIELDS = frozenset({"encrypted_content", "fingerprint"})
TERMINALS = ("response.completed", "response.incomplete", "response.failed")
INCOMPLETE_REASONS = ("max_output_tokens", "content_filter")
# Events that some servers send but no dialect of the protocol defines.
KNOWN_NON_STANDARD = {
    "response.reasoning_part.added": "vLLM's reasoning part event",
    "response.reasoning_part.done": "vLLM's reasoning part event",
}


@dataclass(frozen=True)
class Violation:
    """One broken rule, at one event of the stream."""

    rule: str
    severity: str
    index: int  # position of the event in the stream, from 0
    sequence_number: int | None
    message: str

    def __str__(self) -> str:
        seq = "-" if self.sequence_number is None else str(self.sequence_number)
        return f"#{self.index} seq={seq} {self.severity} {self.rule}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
