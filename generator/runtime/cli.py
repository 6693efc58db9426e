"""``python -m responses_stream from-chat`` and friends.

Exit codes (the README's "Exit codes" lists them):

* ``0``: the stream written is complete (``response.completed`` or
  ``response.incomplete``; for ``to-chat`` a chat stream without an error
  chunk; for ``validate`` no error);
* ``1``: ``validate`` found violations of severity error;
* ``2``: usage errors and unreadable input: a missing or unreadable file, a
  ``--request`` that is not a JSON object, or ``from-chat`` input without a
  single chat chunk (empty, or not SSE);
* ``3``: the stream written ends ``response.failed`` (``from-chat``) or with an
  error chunk (``to-chat``): it is complete and valid, but reports a failure;
* ``70``: an internal error (a bug), reported in one line;
* ``130``: interrupted (Ctrl-C); ``141``: the output was closed (a pipe into
  ``head``).

No traceback reaches the user: each of these is one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .api import chat_data_lines, sse_from_chat
from .to_chat import chat_sse_from_sse
from .validate import ERROR, HYGIENE, RULES, StreamValidator

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


class UsageError(Exception):
    """A usage error or unreadable input: one line on stderr, exit code 2."""


def _request(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read --request {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--request {path} is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--request {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"--request {path}: the request must be a JSON object")
    return data


class _Counted:
    """An iterator that counts what passes through it."""

    def __init__(self, items: Iterable[str]) -> None:
        self._items = iter(items)
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        for item in self._items:
            self.count += 1
            yield item


def cmd_from_chat(args: argparse.Namespace) -> int:
    request = _request(args.request)
    model = args.model or (request or {}).get("model")
    stdin = (line.decode("utf-8", "replace") for line in sys.stdin.buffer)
    chunks = _Counted(chat_data_lines(stdin))
    out = sys.stdout.buffer
    failed = False
    for frame in sse_from_chat(chunks, dialect=args.dialect, request=request, model=model):
        failed = failed or b"event: response.failed\n" in frame
        out.write(frame)
        out.flush()
    if chunks.count == 0:
        print(
            f"{PROG} from-chat: the input holds no chat chunk (empty, or not SSE)", file=sys.stderr
        )
        return USAGE
    return FAILED if failed else OK


def _read(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    return Path(name).read_bytes()


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
    try:
        data = _read(args.file)
    except OSError as exc:
        raise UsageError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    validator = StreamValidator(args.dialect, strict=args.strict)
    validator.feed_sse([data])  # a line or event over the parser's caps is SSE_LIMIT
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
    out = sys.stdout.buffer
    failed = False
    for frame in chat_sse_from_sse(  # input over the parser's caps ends with an error chunk
        sys.stdin.buffer,
        reasoning=REASONING_MODES[args.reasoning],  # type: ignore[arg-type]
        include_usage=args.include_usage,
        dialect=args.dialect,
    ):
        failed = failed or frame.startswith(b'data: {"error"')
        out.write(frame)
        out.flush()
    return FAILED if failed else OK


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; every failure is one line on stderr and an exit code."""
    try:
        return _main(argv)
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        # the reader went away: say so once, and keep the interpreter's final
        # flush of stdout from raising again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        print(f"{PROG}: the output was closed", file=sys.stderr)
        return BROKEN_PIPE
    except Exception as exc:  # a bug: still one line, unless asked for the traceback
        if os.environ.get("RESPONSES_STREAM_DEBUG"):
            raise
        print(
            f"{PROG}: internal error: {type(exc).__name__}: {exc} "
            "(set RESPONSES_STREAM_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return INTERNAL


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        epilog="exit codes: 0 complete, 1 violations (validate), 2 usage or unreadable input, "
        "3 the stream written ends failed, 70 internal error, 130 interrupted, 141 output closed",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("from-chat", help="Chat Completions SSE on stdin -> Responses SSE on stdout")
    p.add_argument("--dialect", choices=["openai", "openresponses"], default="openai")
    p.add_argument("--request", type=Path, help="the original /v1/responses request body (JSON)")
    p.add_argument("--model", help="model name for the Response (default: the request's)")
    p.set_defaults(func=cmd_from_chat)
    v = sub.add_parser("validate", help="check a Responses SSE stream against the protocol")
    v.add_argument("--dialect", choices=["openai", "openresponses"], default="openai")
    v.add_argument("--json", action="store_true", help="report as JSON")
    v.add_argument("--rules", action="store_true", help="list every rule and exit")
    v.add_argument(
        "--strict",
        action="store_true",
        help="treat producer-hygiene warnings as errors (for server authors testing their output)",
    )
    v.add_argument("file", nargs="?", help="an SSE file, or - for stdin")
    v.set_defaults(func=cmd_validate)
    c = sub.add_parser("to-chat", help="Responses SSE on stdin -> Chat Completions SSE on stdout")
    c.add_argument(
        "--reasoning",
        choices=sorted(REASONING_MODES),
        default="content",
        help="reasoning as delta.reasoning_content (content), delta.reasoning, "
        "inline <think> in content, or omitted",
    )
    c.add_argument("--include-usage", action="store_true", help="end with a usage chunk")
    c.add_argument("--dialect", choices=["openai", "openresponses"], default="openai")
    c.set_defaults(func=cmd_to_chat)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code
