"""``python -m responses_stream from-chat`` and friends.

Exit codes (the README's "Exit codes" lists them):

* ``0``: the stream written is complete (``response.completed`` or
  ``response.incomplete``; for ``to-chat`` a chat stream without an error
  chunk; for ``validate`` no error);
* ``1``: ``validate`` found violations of severity error;
* ``2``: usage errors and unreadable input: a bad or unknown option, a missing
  or unreadable file, a ``--request`` that is not a JSON object (or that the
  converter refuses), input that is empty or neither SSE nor JSON lines, or SSE
  without a single event;
* ``3``: the stream written ends ``response.failed`` (``from-chat``) or with an
  error chunk (``to-chat``): it is complete and valid, but reports a failure;
* ``70``: an internal error (a bug), reported in one line;
* ``130``: interrupted (Ctrl-C); ``141``: the output was closed (a pipe into
  ``head``).

No traceback reaches the user: each of these is one line on stderr (an
option error is that line after the subcommand's usage).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from .consumers.to_chat import chat_sse_from_sse
from .consumers.validate import ERROR, HYGIENE, RULES, StreamValidator
from .core.errors import ProcessorError, ResponsesStreamError
from .core.input_form import FORMS, InputFormError, sse_from_input
from .core.sse_parse import SSEParser
from .inputs.api import _close, _payloads, _setup
from .version import __version__

REASONING_MODES = {
    "content": "reasoning_content",
    "reasoning": "reasoning",
    "think": "think",
    "omit": "omit",
}


OK = 0
VIOLATIONS = 1
USAGE = 2
FAILED = 3
INTERNAL = 70
INTERRUPTED = 130
BROKEN_PIPE = 141
PROG = "python -m responses_stream"
READ_SIZE = 65536  # the most one read takes; a pipe's read returns what is there


class UsageError(ResponsesStreamError):
    """A usage error or unreadable input: one line on stderr, exit code 2."""


def _request(value: str | None) -> dict[str, Any] | None:
    """``--request``: inline JSON (a value starting with ``{``) or the path of a JSON file."""
    if value is None:
        return None
    if value.lstrip().startswith("{"):
        where, text = "--request (inline JSON)", value
    else:
        where = f"--request {value}"
        try:
            text = Path(value).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read --request {value}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise UsageError(f"--request {value} is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise UsageError(f"{where} is not JSON: {reason}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: the request must be a JSON object")
    return data


def _open(name: str) -> IO[bytes]:
    """FILE opened for reading, or stdin for ``-``; an unreadable file is a usage error."""
    if name == "-":
        return sys.stdin.buffer
    try:
        return open(name, "rb")  # closed by _read_blocks
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None


class _Output:
    """Frames for stdout, written together: before each read of the input and at the end.

    A converter's output for one read of its input goes out in one write, so a file or
    a busy pipe costs one write per block, and a live pipe whose writer pauses still sees
    every event before the next read waits for more input.
    """

    def __init__(self) -> None:
        self.out = sys.stdout.buffer
        self.frames: list[bytes] = []

    def flush(self) -> None:
        frames = self.frames
        if frames:
            data = b"".join(frames)
            frames.clear()  # the same list: callers append to it
            self.out.write(data)
            self.out.flush()


def _blocks(name: str, before_read: Callable[[], None] | None = None) -> Iterator[bytes]:
    """The input of FILE (or stdin) as it comes: each read takes what is there, up to
    ``READ_SIZE`` bytes.  Opened now, so a missing file writes nothing; a read error is a
    usage error too.  ``before_read`` is called before each read (the output's flush)."""
    return _read_blocks(name, _open(name), before_read)


def _read_blocks(
    name: str, source: IO[bytes], before_read: Callable[[], None] | None
) -> Generator[bytes, None, None]:
    read = getattr(source, "read1", source.read)
    try:
        while True:
            if before_read is not None:
                before_read()
            try:
                block = read(READ_SIZE)
            except OSError as exc:
                raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
            if not block:
                return
            yield block
    finally:
        if source is not sys.stdin.buffer:
            source.close()


def _where(args: argparse.Namespace) -> str:
    return "stdin" if args.file in (None, "-") else str(args.file)


def _stream(args: argparse.Namespace, blocks: Iterator[bytes]) -> Iterator[bytes]:
    """The input as SSE (``--input``: JSON lines made SSE); input that is neither, or
    empty, is a usage error before anything is written."""
    try:
        return sse_from_input(blocks, args.input, strict=True)
    except InputFormError as exc:
        raise UsageError(f"{args.command}: {_where(args)}: {exc}") from None


def _identity(payloads: Sequence[str]) -> tuple[str | None, int | None] | None:
    """The model and created time of the first chat chunk among ``payloads`` (None
    before one has come)."""
    for payload in payloads:
        try:
            chunk = json.loads(payload)
        except (ValueError, RecursionError):
            return None, None  # not a chunk: the converter reports it
        if not isinstance(chunk, dict):
            return None, None
        model, created = chunk.get("model"), chunk.get("created")
        good = type(created) is int and 0 <= created < 2**53
        return (model if isinstance(model, str) and model else None), (created if good else None)
    return None


def cmd_from_chat(args: argparse.Namespace) -> int:
    request = _request(args.request)
    model = args.model or (request or {}).get("model")
    source = _open(args.file)  # a missing file is a usage error, and nothing is written
    output = _Output()
    blocks = _stream(args, _read_blocks(args.file, source, output.flush))
    parser = SSEParser()
    # The Response takes the model (unless given) and created time of the first chunk.
    pending: list[str] = []
    ended = False
    identity = None
    while identity is None:
        block = next(blocks, None)
        if block is None:
            pending += _close(parser)
            ended = True
            identity = _identity(pending) or (None, None)
            break
        pending += _payloads(parser, block)
        identity = _identity(pending)
    chunk_model, created = identity
    try:  # the stream starts: the request is checked before anything is written
        conv = _setup(args.dialect, request, model or chunk_model, created_at=created)
    except ProcessorError as exc:
        raise UsageError(f"--request: {exc}") from None
    frames = output.frames
    frames += conv.proc.drain_sse()
    chunks = len(pending)
    frames += conv.feed_payloads_sse(pending)
    if not conv.done and not ended:
        for block in blocks:  # every chat data: payload, as chat_data_lines reads them
            payloads = _payloads(parser, block)
            chunks += len(payloads)
            frames += conv.feed_payloads_sse(payloads)
            if conv.done:
                break
        else:
            rest = _close(parser)
            chunks += len(rest)
            frames += conv.feed_payloads_sse(rest)
    if not conv.done:
        frames += conv.end_sse()
    output.flush()
    if chunks == 0:
        print(
            f"{_prog()} from-chat: {_where(args)}: the input holds no chat chunk",
            file=sys.stderr,
        )
        return USAGE
    return FAILED if conv.proc.response.fields.get("status") == "failed" else OK


def cmd_validate(args: argparse.Namespace) -> int:
    if args.rules:
        for rule, (severity, meaning) in RULES.items():
            if args.strict and rule in HYGIENE:
                severity = ERROR
            mark = " (--strict: error)" if rule in HYGIENE and not args.strict else ""
            print(f"{rule:<26} {severity:<8} {meaning}{mark}")
        return 0
    if args.file is None:
        raise UsageError("validate: give a FILE, or - for stdin")
    blocks = _stream(args, _blocks(args.file))  # read as it comes, memory stays flat
    validator = StreamValidator(args.dialect, strict=args.strict)
    validator.feed_sse(blocks, input="sse")  # a line or event over the caps is SSE_LIMIT
    if validator.index < 0:
        raise UsageError(f"validate: {_where(args)}: the input holds no event")
    violations = validator.finish()
    errors = [v for v in violations if v.severity == ERROR]
    if args.json:
        report = {
            "valid": not errors,
            "dialect": args.dialect,
            "strict": args.strict,
            "events": validator.index,
            "violations": [v.to_dict() for v in violations],
        }
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        for v in violations:
            print(v)
        status = "valid" if not errors else "invalid"
        print(
            f"{status}: {validator.index} events, {len(errors)} errors, "
            f"{len(violations) - len(errors)} warnings",
            file=sys.stderr,
        )
    return OK if not errors else VIOLATIONS


def cmd_to_chat(args: argparse.Namespace) -> int:
    output = _Output()
    frames = output.frames
    failed = empty = False
    for frame in chat_sse_from_sse(  # input over the parser's caps ends with an error chunk
        _stream(args, _blocks(args.file, output.flush)),
        reasoning=REASONING_MODES[args.reasoning],  # type: ignore[arg-type]
        include_usage=args.include_usage,
        dialect=args.dialect,
        input="sse",
    ):
        if frame.startswith(b'data: {"error"'):
            failed = True
            empty = b'"code":"empty_input"' in frame
        frames.append(frame)
    output.flush()
    if empty:
        raise UsageError(f"to-chat: {_where(args)}: the input holds no Responses event")
    return FAILED if failed else OK


def cmd_check(args: argparse.Namespace) -> int:
    """Drive the conformance scenarios against a live endpoint; exit 1 when one fails."""
    try:
        from .check.report import as_json, junit, passed, table
        from .check.run import make_target, run_checks, selected
    except ImportError as exc:
        raise _missing_extra("check", "check", exc) from None
    if args.rules:
        from .check.rules import KIT_RULES

        for rule, meaning in KIT_RULES.items():
            print(f"{rule:<26} {meaning}")
        print(f"\nand the validator's, under --strict: {_prog()} validate --rules --strict")
        return OK
    if args.url is None or args.model is None:
        raise UsageError("check: give the URL and --model (or --rules)")
    if not args.url.startswith(("http://", "https://")):
        raise UsageError(f"check: URL must start with http:// or https://, not {args.url!r}")
    if args.timeout <= 0:
        raise UsageError("check: --timeout must be a positive number of seconds")
    if args.max_output_tokens < 0:
        raise UsageError("check: --max-output-tokens must be 0 (no limit) or more")
    try:
        names = selected(_names(args.only), _names(args.skip), stateful=args.stateful)
        target = make_target(
            args.url,
            args.model,
            api_key=args.api_key,
            dialect=args.dialect,
            timeout=args.timeout,
            max_output_tokens=args.max_output_tokens,
            prompts=args.prompt or (),
            extra_body=args.extra_body,
        )
    except ValueError as exc:
        raise UsageError(f"check: {exc}") from None
    outcomes = run_checks(target, names)
    if args.junit:
        Path(args.junit).write_bytes(junit(outcomes))
    if args.json:
        print(as_json(outcomes, args.url, args.model, args.dialect))
    else:
        print(table(outcomes))
    return OK if passed(outcomes) else VIOLATIONS


def _missing_extra(command: str, extra: str, exc: ImportError) -> UsageError:
    return UsageError(
        f"{command} needs the {extra} extra ({exc.name or exc} is missing): "
        f"pip install 'responses-stream[{extra}]'"
    )


def _names(values: list[str] | None) -> list[str]:
    return [name.strip() for value in values or () for name in value.split(",") if name.strip()]


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the gateway; its extra missing or a bad option is a usage error."""
    try:
        from .gateway.serve import ServeOptions, run
        from .gateway.tenancy import gateway_keys
    except ImportError as exc:
        raise _missing_extra("serve", "gateway", exc) from None
    options = ServeOptions(
        upstream=args.upstream,
        config=args.config,
        host=args.host,
        port=args.port,
        store=args.store,
        connect_timeout=args.connect_timeout,
        read_timeout=args.read_timeout,
        max_body_bytes=args.max_body_bytes,
        reasoning_field=args.reasoning_field,
        hosted_tools=args.hosted_tools,
        api_keys=gateway_keys(args.api_key or (), os.environ.get("RESPONSES_STREAM_API_KEYS")),
        tenant_secret=args.tenant_secret,
        legacy_records=args.legacy_records,
        log_level=args.log_level,
        log_format=args.log_format,
        workers=args.workers,
        shutdown_grace=args.shutdown_grace,
    )
    try:
        run(options)
    except (ValueError, ImportError) as exc:  # a bad option, a store's missing client
        raise UsageError(str(exc)) from None
    return OK


def _prog() -> str:
    """The command's name: the console script's, or ``python -m responses_stream``."""
    return "responses-stream" if Path(sys.argv[0]).name == "responses-stream" else PROG


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; every failure is one line on stderr and an exit code."""
    try:
        return _main(argv)
    except UsageError as exc:
        print(f"{_prog()}: {exc}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:
        print(f"{_prog()}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        # the reader went away: say so once, and keep the interpreter's final
        # flush of stdout from raising again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        print(f"{_prog()}: the output was closed", file=sys.stderr)
        return BROKEN_PIPE
    except Exception as exc:  # a bug: still one line, unless asked for the traceback
        if os.environ.get("RESPONSES_STREAM_DEBUG"):
            raise
        print(
            f"{_prog()}: internal error: {type(exc).__name__}: {exc} "
            "(set RESPONSES_STREAM_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return INTERNAL


# -- the parser -------------------------------------------------------------------
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


def build_parser() -> argparse.ArgumentParser:
    prog = _prog()
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
    p.set_defaults(func=cmd_from_chat)

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
    _input_option(v)
    v.add_argument("file", nargs="?", metavar="FILE", help="a stream file, or - for stdin")
    v.set_defaults(func=cmd_validate)

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
    c.set_defaults(func=cmd_to_chat)

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
    k.set_defaults(func=cmd_check)

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
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="log lines as text or as JSON objects (time, level, logger, message, request_id)",
    )
    g.set_defaults(func=cmd_serve)
    return parser


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code
