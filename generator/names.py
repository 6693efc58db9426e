"""The default class names of generated models and emitters.

A spec may name a model itself (the ``class`` key of an event, item or part),
which is how the names of the official SDK are kept where these rules do not
reproduce them; everything else is named by the rules below.
"""

from __future__ import annotations


def camel(name: str) -> str:
    """``response.output_text.delta`` -> ``OutputTextDelta``; ``acme:hit`` -> ``AcmeHit``."""
    if name.startswith("response."):
        name = name[len("response.") :]
    words = name.replace(":", "_").replace(".", "_").replace("-", "_").split("_")
    return "".join(w[:1].upper() + w[1:] for w in words if w)


def event_class(name: str) -> str:
    """The default model of an event: ``response.created`` -> ``ResponseCreatedEvent``."""
    return "Response" + camel(name) + "Event"


def item_class(item_type: str) -> str:
    """The default model of an item: ``mcp_call`` -> ``McpCall``."""
    return camel(item_type)


def part_class(name: str) -> str:
    """The default model of a content part: ``summary_text`` -> ``SummaryTextPart``."""
    return camel(name) + "Part"


def emitter_class(item_type: str) -> str:
    """The emitter of an item type: ``function_call`` -> ``FunctionCallEmitter``."""
    return camel(item_type) + "Emitter"
