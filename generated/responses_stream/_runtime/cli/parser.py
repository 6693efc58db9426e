"""The command line's parser: its help texts, and one function a command adding that
command's options."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

from ..core.input_form import FORMS
from ..version import __version__

REASONING_MODES = {
    "content": "reasoning_content",
    "reasoning": "reasoning",
    "think": "think",
    "omit": "omit",
}
DIALECTS = ["openai", "openresponses"]

EXIT_CODES = """\
exit codes:
  0    the stream written is complete (validate: no error)
  1    validate found violations of severity error
  2    usage error or unreadable input
  3    the stream written ends failed (response.failed, or a chat error chunk)
  70   internal error (RESPONSES_STREAM_DEBUG=1 shows the traceback)
  130  interrupted
  141  the output was closed
"""

FROM_CHAT = """\
Read a Chat Completions stream (the SSE of a stream=true /v1/chat/completions
response, or one chunk per line) and write the Responses stream it makes, as
SSE, on stdout. The Response takes the first chunk's created time, and its model
unless --model or --request give one. The stream written is always complete:
broken input ends it with error and response.failed, keeping what came before.
"""

FROM_CHAT_EXAMPLES = """\
examples:
  {prog} from-chat chat.sse > responses.sse
  {prog} from-chat --request request.json --dialect openresponses < chat.sse
  curl -sN URL/v1/chat/completions -H 'content-type: application/json' -d @chat.json \\
    | {prog} from-chat --request '{{"model": "my-model"}}'

exit codes: 0 complete or incomplete, 2 usage, empty input or no chat chunk, 3 ends failed
"""

REPAIR = """\
Read a server's own Responses stream (the SSE of a stream=true /v1/responses
response, or one event per line), however faulty, and write it repaired as SSE on
stdout: sequence numbers, indexes and ids of its own, missing .added and .done
events supplied, the final Response equal to the streamed items, a server error as
error and response.failed, and tool calls a model's markup left in the text as
function_call items when --request offered the functions. The stream written is
always complete and strictly valid.
"""

REPAIR_EXAMPLES = """\
examples:
  {prog} repair server.sse > repaired.sse
  {prog} repair --request request.json --dialect openresponses < server.sse
  curl -sN URL/v1/responses -H 'content-type: application/json' -d @request.json \\
    | {prog} repair --request request.json

exit codes: 0 complete or incomplete, 2 usage or empty input, 3 ends failed
"""

VALIDATE = """\
Check a Responses stream (SSE, or one JSON event per line) against the protocol:
the envelope, item and part lifecycles, indexes, texts, and each event's shape
in the dialect. Prints one line per violation (or a JSON report) and a summary
on stderr.
"""

VALIDATE_EXAMPLES = """\
examples:
  {prog} validate responses.sse
  curl -sN URL/v1/responses -H 'content-type: application/json' -d @body.json \\
    | {prog} validate --strict --json -
  {prog} validate --input jsonl recording.jsonl
  {prog} validate --rules

exit codes: 0 valid (warnings allowed), 1 violations, 2 usage, unreadable or empty input
"""

TO_CHAT = """\
Read a Responses stream (SSE, or one JSON event per line) and write the Chat
Completions stream it makes, as SSE, on stdout: text as delta.content, reasoning as chosen, function and custom
tool calls as tool_calls, a failure as an error chunk, then data: [DONE].
"""

SERVE = """\
Serve a Responses API (streaming and not, WebSocket mode, /responses/compact,
stored responses) from an upstream Chat Completions server, and a Chat
Completions API (/v1/chat/completions) from an upstream Responses server.
Base URLs: /v1 (OpenAI dialect) and /openresponses/v1 (Open Responses dialect).
The upstream key comes from UPSTREAM_API_KEY; without it, each client's own
Authorization header is forwarded. With --config, requests are routed by model
to the file's upstreams, each naming the variable that holds its key; a model
no route takes is a 404 model_not_found.
"""

SERVE_EXAMPLES = """\
examples:
  {prog} serve --upstream http://127.0.0.1:8000/v1
  UPSTREAM_API_KEY=... {prog} serve --upstream https://api.example.com/v1 --port 9000
  {prog} serve --upstream http://127.0.0.1:8000/v1 --store redis://127.0.0.1:6379/0
  {prog} serve --config gateway.yaml

stores: sqlite:///FILE (default, a file in the current folder), redis://host:port/db,
memory: (lost on restart)
"""

CHECK = """\
Drive conformance scenarios against a live Responses endpoint (URL is its base,
.../v1) and judge every answer with the validator (--strict, rule ids), the
strict openai SDK (OpenAI dialect) and the accumulator: a text answer, a length
stop that must end incomplete, a forced tool call, parallel tool calls, a tool
result on the next turn, JSON-schema output and reasoning, each streamed and not;
a bad request answered with the OpenAI error shape; with --stateful, store, GET,
previous_response_id and DELETE. A scenario the model did not exercise (it
called no tool) is reported as such, never as a pass or a failure.
"""

CHECK_EXAMPLES = """\
examples:
  {prog} check http://127.0.0.1:8080/v1 --model my-model
  {prog} check http://127.0.0.1:8080/openresponses/v1 --dialect openresponses --model m
  {prog} check URL --model m --only text,length --junit check.xml --json

exit codes: 0 every exercised scenario passed, 1 a scenario failed, 2 usage
"""

TO_CHAT_EXAMPLES = """\
examples:
  {prog} to-chat responses.sse > chat.sse
  {prog} to-chat --reasoning think --include-usage < responses.sse
  {prog} to-chat --dialect openresponses responses.sse

exit codes: 0 complete, 2 usage, unreadable or empty input, 3 ends with an error chunk
"""


class _Help(argparse.RawDescriptionHelpFormatter):
    """Keeps the line breaks of descriptions and examples, and shows option defaults."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            default not in (None, False, argparse.SUPPRESS)
            and "%(default)" not in text
            and (action.option_strings or action.nargs == argparse.OPTIONAL)
        ):
            text += " (default: %(default)s)"
        return text


class _Subcommand(argparse.ArgumentParser):
    """A subcommand's parser: an option it does not know is an error with its own usage."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def _input_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input",
        choices=FORMS,
        default="auto",
        help="the input's form: SSE, JSON lines (one event or chunk per line), or told from"
        " its first bytes",
    )


Command = Callable[[str, str, str, str], "_Subcommand"]
"""Adds a command: its name, summary, description and examples; gives its parser."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The parser of every command; ``prog`` is the command's name in its help."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Convert and check streams of the Responses API: Chat Completions SSE\n"
        "to Responses SSE and back, a conformance validator, and a gateway that serves\n"
        "each API from a server of the other.",
        epilog=EXIT_CODES + f"\nSee '{prog} COMMAND --help' for each command's options.",
        formatter_class=_Help,
    )
    parser.add_argument("--version", action="version", version=f"responses-stream {__version__}")
    sub = parser.add_subparsers(
        title="commands",
        dest="command",
        required=True,
        parser_class=_Subcommand,
    )

    def command(name: str, summary: str, description: str, examples: str) -> _Subcommand:
        p: _Subcommand = sub.add_parser(
            name,
            help=summary,
            description=description,
            epilog=examples.format(prog=prog),
            formatter_class=_Help,
        )
        return p

    for add in (_from_chat, _repair, _validate, _to_chat, _check, _serve):
        add(command)
    return parser


def _from_chat(command: Command) -> None:
    """``from-chat``: Chat Completions SSE in, Responses SSE out."""
    p = command(
        "from-chat",
        "Chat Completions SSE -> Responses SSE",
        FROM_CHAT,
        FROM_CHAT_EXAMPLES,
    )
    p.add_argument("--dialect", choices=DIALECTS, default="openai", help="the dialect written")
    p.add_argument(
        "--request",
        metavar="JSON|FILE",
        help="the original /v1/responses request body: inline JSON (starting with {) "
        "or a JSON file; the Response echoes it",
    )
    p.add_argument(
        "--model",
        help="model name for the Response (default: the request's, else the chunks')",
    )
    _input_option(p)
    p.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="the chat stream input, - for stdin"
    )


def _repair(command: Command) -> None:
    """``repair``: a server's faulty Responses SSE in, a valid one out."""
    p = command(
        "repair", "a server's Responses SSE -> valid Responses SSE", REPAIR, REPAIR_EXAMPLES
    )
    p.add_argument("--dialect", choices=DIALECTS, default="openai", help="the dialect written")
    p.add_argument(
        "--request",
        metavar="JSON|FILE",
        help="the /v1/responses request the server answered: inline JSON (starting with {) "
        "or a JSON file; the Response echoes it, its functions are the calls the markup "
        "may hold",
    )
    p.add_argument("--model", help="model name for the Response (default: the request's)")
    _input_option(p)
    p.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="the server's stream, - for stdin"
    )


def _validate(command: Command) -> None:
    """``validate``: a Responses stream checked against the protocol."""
    v = command(
        "validate",
        "check a Responses SSE stream against the protocol",
        VALIDATE,
        VALIDATE_EXAMPLES,
    )
    v.add_argument("--dialect", choices=DIALECTS, default="openai", help="the dialect checked")
    v.add_argument("--json", action="store_true", help="report as JSON")
    v.add_argument("--rules", action="store_true", help="list every rule and exit")
    v.add_argument(
        "--strict",
        action="store_true",
        help="treat producer-hygiene warnings as errors (for server authors testing their output)",
    )
    v.add_argument(
        "--resumed",
        action="store_true",
        help="the stream was resumed (GET /responses/{id}?stream=true&starting_after=N): one"
        " that starts past 0 without response.created is a continuation, not a stream"
        " missing its start",
    )
    _input_option(v)
    v.add_argument("file", nargs="?", metavar="FILE", help="a stream file, or - for stdin")


def _to_chat(command: Command) -> None:
    """``to-chat``: Responses SSE in, Chat Completions SSE out."""
    c = command(
        "to-chat",
        "Responses SSE -> Chat Completions SSE",
        TO_CHAT,
        TO_CHAT_EXAMPLES,
    )
    c.add_argument(
        "--reasoning",
        choices=sorted(REASONING_MODES),
        default="content",
        help="reasoning as delta.reasoning_content (content), delta.reasoning, "
        "inline <think> in content, or omitted",
    )
    c.add_argument("--include-usage", action="store_true", help="end with a usage chunk")
    c.add_argument("--dialect", choices=DIALECTS, default="openai", help="the dialect read")
    _input_option(c)
    c.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="the Responses stream, - for stdin"
    )


def _check(command: Command) -> None:
    """``check``: a Responses server tested as strict clients read it."""
    k = command(
        "check",
        "test a Responses server the way strict clients read it (needs the check extra)",
        CHECK,
        CHECK_EXAMPLES,
    )
    k.add_argument("url", nargs="?", metavar="URL", help="the endpoint's base URL (.../v1)")
    k.add_argument("--model", help="the model to ask (required with URL)")
    k.add_argument("--rules", action="store_true", help="list the kit's own rules and exit")
    k.add_argument(
        "--api-key", metavar="KEY", help="sent as a bearer token (default: OPENAI_API_KEY)"
    )
    k.add_argument("--dialect", choices=DIALECTS, default="openai", help="the dialect judged")
    k.add_argument(
        "--only", action="append", metavar="NAMES", help="run these scenarios (comma-separated)"
    )
    k.add_argument("--skip", action="append", metavar="NAMES", help="leave these scenarios out")
    k.add_argument(
        "--stateful",
        action="store_true",
        help="also store a response, read it back, continue it and delete it",
    )
    k.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="the longest wait for a connection, the answer's headers, or each read of it",
    )
    k.add_argument(
        "--max-output-tokens",
        type=int,
        default=256,
        metavar="N",
        help="each answer's max_output_tokens where a scenario sets none (0: no limit)",
    )
    k.add_argument(
        "--prompt",
        action="append",
        metavar="NAME=TEXT",
        help="the user prompt of scenario NAME, instead of its own; repeatable",
    )
    k.add_argument(
        "--extra-body",
        metavar="JSON",
        help="fields added to every request body, as a JSON object: '{\"temperature\": 0}'",
    )
    k.add_argument("--json", action="store_true", help="report as JSON")
    k.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")


def _serve(command: Command) -> None:
    """``serve``: the gateway."""
    g = command("serve", "run the gateway (needs the gateway extra)", SERVE, SERVE_EXAMPLES)
    where = g.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--upstream", metavar="URL", help="the upstream API's base URL (.../v1), for every model"
    )
    where.add_argument(
        "--config",
        metavar="FILE",
        help="a YAML file of upstreams (each with its URL, key variable, dialect, reasoning"
        " field, hosted-tools policy and timeouts) and model routes (exact names, globs,"
        " renames, a default)",
    )
    g.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    g.add_argument("--port", type=int, default=8080, help="the port to listen on")
    g.add_argument(
        "--store",
        default="sqlite:///responses-stream.db",
        metavar="URL",
        help="where stored responses live: sqlite:///FILE, redis://host:port/db or memory:",
    )
    g.add_argument(
        "--connect-timeout", type=float, default=10.0, metavar="S", help="to reach the upstream"
    )
    g.add_argument(
        "--read-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="the longest silence of the upstream",
    )
    g.add_argument(
        "--max-body-bytes",
        type=int,
        default=32 * 1024 * 1024,
        metavar="N",
        help="the largest request body taken (413 beyond)",
    )
    _serve_policies(g)
    _serve_background(g)


def _serve_policies(g: argparse.ArgumentParser) -> None:
    """``serve``'s policies: reasoning, hosted tools, keys and tenants, logs, workers and
    shutdown."""
    g.add_argument(
        "--reasoning-field",
        choices=["reasoning_content", "reasoning"],
        default="reasoning_content",
        help="the chat field reasoning goes in, both ways",
    )
    g.add_argument(
        "--hosted-tools",
        choices=["drop", "refuse"],
        default="drop",
        help="tools only OpenAI's servers run (web_search, file_search, ...): left out of"
        " the upstream request and named in the x-dropped-tools header (drop), or a 400"
        " (refuse)",
    )
    g.add_argument(
        "--api-key",
        action="append",
        metavar="KEY",
        help="a key clients must send (Authorization: Bearer KEY); repeatable; each is a"
        " tenant of its own. Prefer RESPONSES_STREAM_API_KEYS (comma-separated): a command"
        " line shows in ps",
    )
    g.add_argument(
        "--tenant-secret",
        metavar="SECRET",
        default=os.environ.get("RESPONSES_STREAM_TENANT_SECRET"),
        help="what tenants are derived with (default: RESPONSES_STREAM_TENANT_SECRET, else a"
        " secret the store keeps)",
    )
    g.add_argument(
        "--legacy-records",
        choices=["hidden", "shared"],
        default="hidden",
        help="who sees responses stored before tenancy: no one (hidden) or every caller (shared)",
    )
    g.add_argument(
        "--log-level",
        choices=["critical", "error", "warning", "info", "debug"],
        default="info",
        help="how much the server logs",
    )
    g.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="worker processes (a store they share: sqlite:/// or redis://)",
    )
    g.add_argument(
        "--shutdown-grace",
        type=float,
        default=20.0,
        metavar="S",
        help="after SIGTERM, how long streams in flight may go on before they are ended"
        " (error and response.failed, their records written)",
    )
    g.add_argument(
        "--heartbeat",
        type=float,
        default=15.0,
        metavar="S",
        help="while an upstream says nothing, a stream sends an SSE comment every S seconds,"
        " so that a balancer's idle timeout does not cut it (0: never)",
    )
    g.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="log lines as text or as JSON objects (time, level, logger, message, request_id)",
    )


def _serve_background(g: argparse.ArgumentParser) -> None:
    """``serve``'s settings of background responses."""
    g.add_argument(
        "--background-max",
        type=int,
        default=16,
        metavar="N",
        help="background responses (background: true) one key may have running at once,"
        " on all the replicas of the store (429 beyond)",
    )
    g.add_argument(
        "--background-ttl",
        type=int,
        default=24 * 3600,
        metavar="S",
        help="how long a background response's event log is kept, for resumed streams",
    )
    g.add_argument(
        "--background-lease",
        type=float,
        default=10.0,
        metavar="S",
        help="a replica renews its hold on each background response it runs within S"
        " seconds; one it stopped renewing (it died) is failed once S seconds passed",
    )
