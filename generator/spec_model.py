"""The spec language: one pydantic model per kind of spec file.

Every spec file is a YAML mapping with a ``kind`` key that selects one of the
models below.  The models forbid unknown keys, so a typo is an error with a
file:line, and their JSON Schema is what editors use to autocomplete specs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

ClassName = Annotated[
    str | None,
    Field(
        alias="class",
        description=(
            "The generated model's class name (CamelCase), where the default rule does not "
            "give the official SDK's name."
        ),
    ),
]
Ref = Annotated[
    str,
    Field(
        description=(
            "A value source: params.NAME, acc.NAME, field.NAME, item, part, "
            "response, id, or status."
        )
    ),
]
TypeExpr = Annotated[
    str,
    Field(
        description=(
            "A type: string, integer, number, boolean, any, object, list[T], "
            "enum(a,b), a named type from types specs, or T? for nullable."
        )
    ),
]


class Strict(BaseModel):
    """The base of every spec model: unknown keys refused, values frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldSpec(Strict):
    """A payload field: its type and, optionally, where its value comes from."""

    type: TypeExpr
    doc: str = ""
    source: Ref | dict[str, Ref] | None = Field(
        default=None,
        alias="from",
        description="Where an event field's value comes from; a mapping builds an object.",
    )
    const: Any = Field(default=None, description="A constant value for this field.")


FieldDecl = TypeExpr | FieldSpec


class ParamSpec(Strict):
    """A transition parameter written out: its type, default, whether required, and an example."""

    type: TypeExpr
    default: Any = None
    required: bool = True
    doc: str = ""
    example: Any = Field(default=None, description="A sample value for generated tests.")


ParamDecl = TypeExpr | ParamSpec


class AppendAction(Strict):
    """Append a value to an accumulator."""

    acc: str
    source: Ref = Field(alias="from")


class SetAction(Strict):
    """Set a stored field from a value source."""

    field: str
    source: Ref | dict[str, Ref] = Field(alias="from")


class Action(Strict):
    """One named action.  Exactly one key is set."""

    append: AppendAction | None = Field(
        default=None, description="Append text (or list items) to an accumulator."
    )
    set: SetAction | None = Field(default=None, description="Set a stored field of the item.")
    status: str | None = Field(
        default=None, description="Set the item status: a status name or params.NAME."
    )


class Emit(Strict):
    """An event a transition emits, with per-emit field sources and the states it is limited to."""

    event: str
    with_: dict[str, Ref | dict[str, Ref]] = Field(
        default_factory=dict, alias="with", description="Per-emit overrides of field sources."
    )
    when: list[str] | None = Field(
        default=None,
        description="Emit only when the transition is taken from one of these states (items).",
    )


EmitDecl = str | Emit


class Transition(Strict):
    """What a transition takes, does, and emits, in order."""

    doc: str = ""
    params: dict[str, ParamDecl] = Field(default_factory=dict)
    actions: list[Action] = Field(default_factory=list)
    emit: list[EmitDecl] = Field(default_factory=list)


class State(Strict):
    """A state of a machine: normal or final, and the transitions out of it."""

    type: Literal["normal", "final"] = "normal"
    doc: str = ""
    on: dict[str, str] = Field(default_factory=dict, description="transition name -> target state")


class AccumulatorSpec(Strict):
    """An accumulator a machine builds up from deltas: text or a list."""

    kind: Literal["text", "list"] = "text"
    doc: str = ""


class Machine(Strict):
    """A statechart: named states and named transitions between them."""

    initial: str
    states: dict[str, State]
    transitions: dict[str, Transition]
    context: dict[str, AccumulatorSpec] = Field(
        default_factory=dict, description="Accumulators built up by deltas."
    )


class ItemField(Strict):
    """A field of an item payload.

    Its value is an accumulator (``acc``), a list of parts (``slot``), or a
    stored value: ``init`` gives its start value, otherwise ``open`` takes it
    as a parameter (optional when ``default`` is given).
    """

    type: TypeExpr
    doc: str = ""
    acc: str | None = None
    slot: str | None = None
    init: Any = None
    default: Any = None
    optional: bool = False
    example: Any = Field(default=None, description="A sample value for generated tests.")
    format: Literal["json"] | None = Field(
        default=None, description="The text must parse as this format when the item completes."
    )


class SlotSpec(Strict):
    """A slot of an item that holds content parts of the kinds listed."""

    parts: list[str]
    doc: str = ""


class PartSpec(Machine):
    """A content part kind with its own lifecycle inside an item."""

    index: Literal["content_index", "summary_index"]
    type: str = Field(description="The part's wire type, e.g. output_text.")
    class_: ClassName = None
    fields: dict[str, ItemField]
    doc: str = ""
    read_optional: list[str] = Field(
        default_factory=list,
        description="Fields a reader accepts as absent or null (the official SDK's optional fields).",
    )


class PartsFile(Strict):
    """A ``parts`` spec file: the content part kinds."""

    kind: Literal["parts"]
    parts: dict[str, PartSpec]


class EventSpec(Strict):
    """An event of the shared catalogue, keyed by its wire name in the openai dialect."""

    address: Literal["none", "output", "item", "content", "summary"]
    class_: ClassName = None
    doc: str = ""
    fields: dict[str, FieldDecl] = Field(default_factory=dict)
    read_legacy: list[str] = Field(
        default_factory=list,
        description="Fields that older genuine streams leave out although the SDK now requires them; "
        "a reader accepts them absent, with a warning.",
    )
    read_optional: list[str] = Field(
        default_factory=list,
        description="Fields a reader accepts as absent or null (the official SDK's optional fields).",
    )


class ItemFile(Machine):
    """An ``item`` spec file: one output item type and its machine."""

    kind: Literal["item"]
    type: str = Field(description="The item's wire type, e.g. function_call or acme:search_result.")
    class_: ClassName = None
    id_prefix: str
    doc: str = ""
    thin: bool = Field(default=False, description="Spec'd for catalogue coverage only.")
    statuses: list[str]
    fields: dict[str, ItemField] = Field(default_factory=dict)
    slots: dict[str, SlotSpec] = Field(default_factory=dict)
    events: dict[str, EventSpec] = Field(
        default_factory=dict, description="Events this item adds to the catalogue (extensions)."
    )
    read_optional: list[str] = Field(
        default_factory=list,
        description="Fields a reader accepts as absent or null (the official SDK's optional fields).",
    )


class EventsFile(Strict):
    """An ``events`` spec file: events no item file declares."""

    kind: Literal["events"]
    events: dict[str, EventSpec]


class TypeSpec(Strict):
    """A named object type: its fields and which of them are optional."""

    doc: str = ""
    fields: dict[str, FieldDecl]
    optional: list[str] = Field(
        default_factory=list, description="Fields that may be left out of the payload."
    )
    read_legacy: list[str] = Field(
        default_factory=list,
        description="Fields that older genuine streams leave out although the SDK now requires them; "
        "a reader accepts them absent, with a warning.",
    )
    read_optional: list[str] = Field(
        default_factory=list,
        description="Fields a reader accepts as absent or null (the official SDK's optional fields).",
    )


class TypesFile(Strict):
    """A ``types`` spec file: named object types."""

    kind: Literal["types"]
    types: dict[str, TypeSpec]


class ResponseField(Strict):
    """A field of the response object."""

    type: TypeExpr
    default: Any = None
    echo: bool = Field(default=False, description="Copied from the request when present.")
    fill: dict[str, Any] | None = Field(
        default=None,
        description="For an echoed object: the keys it gets where the request leaves them out.",
    )
    doc: str = ""


class EnvelopeFile(Machine):
    """The ``envelope`` spec file: the response's fields and its machine."""

    kind: Literal["envelope"]
    doc: str = ""
    items_in: str = Field(description="The state in which items may stream.")
    response: dict[str, ResponseField]
    read_optional: list[str] = Field(
        default_factory=list,
        description="Fields a reader accepts as absent or null (the official SDK's optional fields).",
    )


class DialectEvent(Strict):
    """How a dialect spells one event: its wire type, its fields."""

    type: str | None = Field(default=None, description="The wire name in this dialect.")
    fields: dict[str, FieldDecl] | None = Field(
        default=None, description="Replaces the catalogue's payload fields."
    )


class Framing(Strict):
    """How a dialect frames its stream (the ``[DONE]`` sentinel)."""

    done_sentinel: bool = Field(default=False, description="End the SSE stream with data: [DONE].")


class DialectFile(Strict):
    """A ``dialect`` spec file: how one dialect spells the catalogue."""

    kind: Literal["dialect"]
    name: str
    doc: str = ""
    standard_events: list[str] | Literal["all"] = "all"
    standard_items: list[str] | Literal["all"] = "all"
    extension_prefix: str = Field(
        default="", description="Prefix for events and items outside the dialect's standard set."
    )
    events: dict[str, DialectEvent] = Field(default_factory=dict)
    response_required: list[str] | Literal["all"] = "all"
    framing: Framing = Framing()
    echo_tools: Literal["as_requested", "functions"] = Field(
        default="as_requested",
        description=(
            "How the request's tools appear in the Response: as sent, or as complete "
            "function tools only (namespaces flattened to namespace.name)."
        ),
    )


class ChatFieldRoute(Strict):
    """Where a chat delta field goes: an item, and a part of it."""

    item: str = Field(description="The item type that takes this delta field.")
    part: str = Field(description="The part kind, opened in that item, that takes the text.")


class ChatToolRoute(Strict):
    """The items chat tool calls become."""

    function: str = Field(description="Item type for calls to function tools.")
    custom: str = Field(description="Item type for calls to custom tools.")
    client: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Client-run typed tool (as the converter names its kind) -> the item type its "
            "calls become, made whole from the call's arguments when the call ends."
        ),
    )


class ChatRoutesFile(Strict):
    """The ``chat_routes`` spec file: where each chat delta field goes."""

    kind: Literal["chat_routes"]
    doc: str = ""
    fields: dict[str, ChatFieldRoute] = Field(
        description="Delta key -> item and part, handled in this order within a delta."
    )
    tool_calls: ChatToolRoute
    finish_reasons: dict[str, Literal["completed", "max_output_tokens", "content_filter"]]


class RequestField(Strict):
    """One request body field's fate on a route, and what makes it so."""

    fate: Literal["translated", "caller", "converted", "no_effect", "refused"] = Field(
        description=(
            "translated: sent upstream (as 'to', by the converter 'by'); caller: acted on by "
            "the gateway itself; converted: acted on in the stream; no_effect: accepted and "
            "left out; refused: a 400 unless its value is one 'allow' lists."
        )
    )
    required: bool = Field(
        False, description="The gateway needs it, though the document lets it be left out."
    )
    limits: dict[str, Any] = Field(
        default_factory=dict,
        description="JSON schema keywords the gateway adds to the document's (minLength: 1).",
    )
    to: str = Field(
        "",
        description="The upstream field it becomes, when translated; a dotted path nests it.",
    )
    from_: str = Field(
        "",
        alias="from",
        description="The key of its object value that is sent (effort), when only that is.",
    )
    by: str = Field("", description="The converter that translates it, when not sent as is.")
    with_: str = Field(
        "",
        alias="with",
        description="An upstream field an earlier row sends, without which it is not sent.",
    )
    why: str = Field("", description="Why it is acted on, left out or refused.")
    allow: list[Any] = Field(
        default_factory=list, description="Values a refused field still takes (false, 'auto')."
    )
    schema_: dict[str, Any] | None = Field(
        None,
        alias="schema",
        description="Its JSON schema, for a field the vendored document does not declare.",
    )
    source: str = Field("", description="Who sends a field the vendored document lacks.")
    example: Any = Field(
        None,
        description=(
            "A value the row's test sends (refused: one it refuses); derived from the schema "
            "when left out and the schema is a scalar, an enum or a map."
        ),
    )
    alongside: dict[str, Any] = Field(
        default_factory=dict, description="Other body fields the example needs to take effect."
    )


class RequestExtension(Strict):
    """What a request document takes beyond the vendored schema, with its source."""

    schema_: dict[str, Any] = Field(alias="schema", description="The property's JSON schema.")
    source: str = Field(description="Who sends it, or what states it.")


class RequestDocumentFile(Strict):
    """A ``request_document`` spec file: a vendored schema, its additions and bounds."""

    kind: Literal["request_document"]
    doc: str = ""
    name: str = Field(description="The name routes give as their document; the models' module.")
    file: str = Field(description="The vendored OpenAPI document (a file in vendor/).")
    extend: dict[str, dict[str, RequestExtension]] = Field(
        default_factory=dict,
        description="Definition -> properties the API takes that the document does not declare.",
    )
    optional: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Definition -> property the document requires and the API takes absent -> who.",
    )
    limits: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description=(
            "Definition -> JSON schema keywords the document states in prose only; under "
            "'properties', a property's own."
        ),
    )


class RequestTool(Strict):
    """One tool type's fate on the Responses route."""

    fate: Literal["translated", "hosted", "refused"] = Field(
        description=(
            "translated: offered to the upstream model; hosted: run by OpenAI's servers, "
            "dropped or refused as the upstream's hosted_tools says; refused: a 400."
        )
    )
    why: str = Field(description="What becomes of it, or why it is refused.")
    function: dict[str, Any] | None = Field(
        None,
        description=(
            "The chat function tool sent in its place, where it is not one itself (a client "
            "tool_search, a client-run typed tool); the request's description and parameters "
            "win. Its name is the one the model calls, unless a function of the request has it."
        ),
    )


class RequestFieldsFile(Strict):
    """A ``request_fields`` spec file: the fate of every body field of one route."""

    kind: Literal["request_fields"]
    doc: str = ""
    route: Literal["responses", "chat", "compact"] = Field(
        description="The gateway route it describes."
    )
    document: str = Field(description="The name of the request_document its body is read by.")
    root: str = Field(description="The request body's definition in that document.")
    fields: dict[str, RequestField] = Field(description="Every body field -> its fate.")
    tools: dict[str, RequestTool] = Field(
        default_factory=dict, description="Every tool type of the body's tools -> its fate."
    )
    keys: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Keys refused wherever they are set on an item, a part or a tool -> why; "
            "TAG.KEY refuses one only on the entries of that type (or role)."
        ),
    )
    needs: dict[str, list[str]] = Field(
        default_factory=dict,
        description=(
            "An entry type (or role) -> keys (dotted: within a key) of which such an entry "
            "must set one."
        ),
    )


HarmonySource = Annotated[
    str,
    Field(
        description=(
            "recipient, recipient.head/.rest/.last/.second, call_id, text, args.KEY, "
            "=literal; SOURCE|=literal gives a fallback."
        )
    ),
]


class HarmonyMatch(Strict):
    """What a Harmony message must look like for a route to take it."""

    channel: str | None = None
    any_channel: bool = Field(
        default=False, description="Any channel that is a non-empty name (a fallback route)."
    )
    recipient: str | None = None
    recipient_prefix: str | None = None
    no_recipient: bool = False
    any_recipient: bool = False


class HarmonyRoute(Strict):
    """The item (and part) a matching Harmony message becomes, and how it opens and closes."""

    match: HarmonyMatch
    item: str
    part: str | None = Field(default=None, description="Part kind that takes the text.")
    buffer: bool = Field(default=False, description="Collect the text; the item takes no deltas.")
    tool: bool = Field(
        default=False, description="Resolve the name against the request's tools (namespaces)."
    )
    open: dict[str, HarmonySource | dict[str, HarmonySource]] = Field(default_factory=dict)
    finish: list[str] = Field(
        default_factory=list, description="Transitions run at the end of the message."
    )
    close: dict[str, HarmonySource | dict[str, HarmonySource]] = Field(
        default_factory=dict, description="Parameters of the closing 'done' transition."
    )
    warn: str = Field(
        default="",
        description="A warning each time this route takes a message; {channel} and "
        "{recipient} are filled in.",
    )


class HarmonyRoutesFile(Strict):
    """The ``harmony_routes`` spec file: where each Harmony channel goes."""

    kind: Literal["harmony_routes"]
    doc: str = ""
    routes: list[HarmonyRoute]


SpecFile = Annotated[
    PartsFile
    | ItemFile
    | EventsFile
    | TypesFile
    | EnvelopeFile
    | DialectFile
    | ChatRoutesFile
    | HarmonyRoutesFile
    | RequestDocumentFile
    | RequestFieldsFile,
    Field(discriminator="kind"),
]
SPEC_FILE: TypeAdapter[Any] = TypeAdapter(SpecFile)


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema that spec files declare in their modeline."""
    schema = SPEC_FILE.json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "responses-stream spec file"
    return schema
