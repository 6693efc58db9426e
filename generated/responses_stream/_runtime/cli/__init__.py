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

from ..consumers.to_chat import chat_sse_from_sse
from ..consumers.validate import ERROR, HYGIENE, RULES, StreamValidator
from ..core.errors import ProcessorError, ResponsesStreamError
from ..core.input_form import InputFormError, sse_from_input
from ..core.sse_parse import SSEParser
from ..inputs.api import ChatFeed, _close, _payloads
from ..inputs.repair import ResponsesFeed
from .parser import REASONING_MODES, build_parser

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
        conv = ChatFeed(args.dialect, request, model or chunk_model, created_at=created).conv
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


def cmd_repair(args: argparse.Namespace) -> int:
    request = _request(args.request)
    model = args.model or (request or {}).get("model")
    source = _open(args.file)  # a missing file is a usage error, and nothing is written
    output = _Output()
    blocks = _stream(args, _read_blocks(args.file, source, output.flush))
    try:  # the stream starts: the request is checked before anything is written
        feed = ResponsesFeed(args.dialect, request, model)
    except ProcessorError as exc:
        raise UsageError(f"--request: {exc}") from None
    frames = output.frames
    frames += feed.start_sse()
    for block in blocks:
        frames += feed.frames(block)
        if feed.done:
            break
    else:
        frames += feed.end_sse()
    output.flush()
    return FAILED if feed.repair.proc.response.fields.get("status") == "failed" else OK


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
    validator = StreamValidator(args.dialect, strict=args.strict, resumed=args.resumed)
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
        from ..check.report import as_json, junit, passed, table
        from ..check.run import make_target, run_checks, selected
    except ImportError as exc:
        raise _missing_extra("check", "check", exc) from None
    if args.rules:
        from ..check.rules import KIT_RULES

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
        from ..gateway.serve import ServeOptions, run
        from ..gateway.tenancy import gateway_keys
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
        heartbeat=args.heartbeat,
        background_max=args.background_max,
        background_ttl=args.background_ttl,
        background_lease=args.background_lease,
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


def _main(argv: list[str] | None) -> int:
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "from-chat": cmd_from_chat,
        "repair": cmd_repair,
        "validate": cmd_validate,
        "to-chat": cmd_to_chat,
        "check": cmd_check,
        "serve": cmd_serve,
    }
    args = build_parser(_prog()).parse_args(argv)
    return commands[args.command](args)
