"""What a spec's names must look like, and the names it may not take because the
generated code uses them itself."""

from __future__ import annotations

import re

IDENT = re.compile(r"[a-z][a-z0-9_]*\Z")
ITEM_TYPE = re.compile(r"([a-z][a-z0-9_-]*:)?[a-z][a-z0-9_]*\Z")
EVENT_NAME = re.compile(r"([a-z][a-z0-9_-]*:)?[a-z][a-z0-9_.]*[a-z0-9_]\Z")
TYPE_NAME = re.compile(r"[A-Z][A-Za-z0-9]*\Z")
# The hard keywords a name must not be: keyword.kwlist, pinned (the same on 3.11,
# 3.12 and 3.13) so that a spec is accepted or refused alike on every supported
# Python. Soft keywords (match, case, type, _) are legal identifiers and field names.
HARD_KEYWORDS = frozenset(
    """False None True and as assert async await break class continue def del elif else
    except finally for from global if import in is lambda nonlocal not or pass raise
    return try while with yield""".split()
)
ADDRESS_FIELDS = {
    "none": (),
    "output": ("output_index",),
    "item": ("item_id", "output_index"),
    "content": ("item_id", "output_index", "content_index"),
    "summary": ("item_id", "output_index", "summary_index"),
}
RESERVED_FIELDS = {
    "type",
    "sequence_number",
    "item_id",
    "output_index",
    "content_index",
    "summary_index",
}
ITEM_AUTO_FIELDS = {"type", "id", "status"}
# Names the generated emitter classes use for themselves.
RESERVED_MEMBERS = {"state", "status", "snapshot", "closed", "item_id", "output_index", "item_type"}
RESERVED_ENVELOPE = RESERVED_MEMBERS | {
    "fields",
    "seq",
    "ids",
    "output",
    "open_items",
    "open_item",
    "close_item",
    "require_closed_items",
}
# Response fields the response emitter fills itself (the id and creation time
# have keyword arguments of their own; the output is the items streamed). Every
# other response field is a keyword argument of ``ResponseEmitter``.
ENVELOPE_OWN_FIELDS = {"id", "created_at", "output"}
# Names ``ResponseEmitter.__init__`` uses besides those keyword arguments: a
# response field of such a name would shadow one.
ENVELOPE_INIT_NAMES = {
    "copy",
    "dict",
    "fill",
    "echoed",
    "function_tools",
    "given",
    "ids",
    "isinstance",
    "key",
    "now",
    "request",
    "self",
    "super",
}
# Names the generated emitters use themselves inside their methods: their own
# locals and parameters, the module-level names they import or define, and the
# builtins they call. A transition parameter or an item field (a keyword argument
# of the emitter and of its factory) with one of these names would shadow it and
# break, or silently change, the generated code. tests/test_generator_safety.py
# checks this set against every name the generated emitters read.
GENERATED_LOCALS = {
    "b",  # the dialect's binding
    "created_at",
    "events",
    "fields",
    "fill",  # an echoed object's fill (ResponseEmitter)
    "fixed",
    "given",
    "id",
    "ids",
    "index",
    "key",
    "made",  # what a factory or a hook made
    "p",
    "prev",
    "request",
    "self",
    "seq",
    "snap",
    "stream",
    "unknown",
}
GENERATED_MODULE_NAMES = {
    "annotations",
    "c",
    "copy",
    "dataclass",
    "echoed",
    "function_tools",
    "msgspec",
    "now",
}
GENERATED_BUILTINS = {
    "bool",
    "bytes",
    "dict",
    "float",
    "int",
    "isinstance",
    "len",
    "list",
    "next",
    "object",
    "property",
    "set",
    "sorted",
    "str",
    "super",
    "tuple",
}
GENERATED_NAMES = frozenset(GENERATED_LOCALS | GENERATED_MODULE_NAMES | GENERATED_BUILTINS)
# Attributes of the generated part-state classes, which hold part accumulators.
PART_STATE_MEMBERS = {"index", "state", "snapshot"}
# Names bound at the top of the generated package (its exports and submodules):
# a dialect is a subpackage of that name.  The render checks the package it
# writes as well, so a name added to the package later is refused there too.
PACKAGE_NAMES = {
    "__version__",
    "achat_sse_from_sse",
    "achat_sse_from_responses",
    "aevents_from_chat",
    "aevents_from_responses",
    "annotations",
    "aparse_sse",
    "asse_from_chat",
    "asse_from_input",
    "asse_from_responses",
    "chat_chunks_from_responses",
    "chat_data_lines",
    "chat_sse_from_responses",
    "chat_sse_from_sse",
    "events_from_chat",
    "events_from_harmony_tokens",
    "events_from_responses",
    "gateway",
    "load_harmony_encoding",
    "sse_from_harmony_tokens",
    "parse_sse",
    "sse_from_chat",
    "sse_from_input",
    "sse_from_responses",
    "tables",
    "tests",
    "validate_payloads",
}
# Class and module-level names of the generated models and emitters that are not
# made from a spec name: a type, item, part or event must not produce one of them.
GENERATED_CLASSES = {
    "Annotated",
    "Any",
    "Callable",
    "ClassVar",
    "ContentPart",
    "Event",
    "Item",
    "ItemEmitter",
    "Literal",
    "Meta",
    "Never",
    "Payload",
    "Response",
    "ResponseEmitter",
    "StreamBase",
    "Struct",
    "SummaryPart",
    "TextAcc",
    "TransitionError",
    "TypeAlias",
    "UNSET",
    "UnsetType",
}
HARMONY_SOURCES = {
    "recipient",
    "recipient.head",
    "recipient.rest",
    "recipient.last",
    "recipient.second",
    "call_id",
    "text",
}
FIXED_REFS = {"item", "part", "response", "now", "id", "status"}
