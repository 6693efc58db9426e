"""The kit's own rule ids, beside the validator's (``validate --rules``): what each says
of the answer that broke it."""

from __future__ import annotations

KIT_RULES: dict[str, str] = {
    "UNREACHABLE": "the request got no answer (connection refused, timeout, broken transfer)",
    "HTTP_STATUS": "a scenario's request was answered with an HTTP error",
    "NOT_EVENT_STREAM": "a streamed request was not answered with text/event-stream",
    "NOT_A_RESPONSE": "a request that is not streamed was not answered with a Response object",
    "NO_RESPONSE": "the stream ended without a terminal event carrying the response",
    "SDK_REJECTED": "the openai SDK, validating strictly, raised on the answer",
    "ACCUMULATE": "an event cannot be folded into the response (the accumulator's error)",
    "ACCUMULATED_OUTPUT": "the events fold to another output than the terminal response's",
    "RESPONSE_STATUS": "the response ended failed (or another status no answer ends with)",
    "EMPTY_ANSWER": "a completed text answer with no output_text",
    "INCOMPLETE_REASON": "an incomplete response whose reason is not max_output_tokens",
    "LENGTH_REPORTED_COMPLETED": "an answer that reached max_output_tokens reported completed",
    "TOOL_CHOICE": "tool_choice named a function and another was called",
    "TOOL_CALL_ID": "a function call without a call_id, or two sharing one",
    "TOOL_ARGUMENTS": "a function call's arguments are not one JSON object",
    "TOOL_CALLS_GLUED": "two calls' arguments arrived as one call ('}{')",
    "JSON_SCHEMA_OUTPUT": "text under a strict JSON schema that does not fit it (the model's)",
    "ERROR_STATUS": "a bad request was not answered with a 4xx",
    "ERROR_SHAPE": 'an error body that is not {"error": {message, type, param, code}}',
    "STORED_GET": "a stored response cannot be read back as it was answered",
    "PREVIOUS_RESPONSE_ID": "a continuation does not echo its previous_response_id",
    "STORED_DELETE": "a delete that is not answered as deleted, or a deleted response still found",
}
# What the model answered, not how the server framed it: a scenario that breaks only these
# has the verdict "model", reported beside the protocol's faults but never failing the run.
MODEL_RULES = frozenset({"JSON_SCHEMA_OUTPUT"})
