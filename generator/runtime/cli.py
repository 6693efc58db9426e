"""``python -m responses_stream from-chat`` and friends."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .api import chat_data_lines, sse_from_chat
from .sse_parse import parse_sse
from .to_chat import chat_sse_from_responses
from .validate import ERROR, HYGIENE, RULES, StreamValidator

REASONING_MODES = {
    "content": "reasoning_content",
    "reasoning": "reasoning",
    "think": "think",
    "omit": "omit",
}


def _request(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: the request must be a JSON object")
    return data


def cmd_from_chat(args: argparse.Namespace) -> int:
    request = _request(args.request)
    model = args.model or (request or {}).get("model")
    stdin = (line.decode("utf-8", "replace") for line in sys.stdin.buffer)
    out = sys.stdout.buffer
    for frame in sse_from_chat(
        chat_data_lines(stdin), dialect=args.dialect, request=request, model=model
    ):
        out.write(frame)
        out.flush()
    return 0


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
        print("validate: give a FILE, or - for stdin", file=sys.stderr)
        return 2
    try:
        data = _read(args.file)
    except OSError as exc:
        print(f"cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    validator = StreamValidator(args.dialect, strict=args.strict)
    for message in parse_sse([data]):
        validator.feed_raw(message.data, message.event)
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
    return 0 if not errors else 1


def cmd_to_chat(args: argparse.Namespace) -> int:
    messages = parse_sse(sys.stdin.buffer)
    out = sys.stdout.buffer
    for frame in chat_sse_from_responses(
        (m.data for m in messages),
        reasoning=REASONING_MODES[args.reasoning],  # type: ignore[arg-type]
        include_usage=args.include_usage,
        dialect=args.dialect,
    ):
        out.write(frame)
        out.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m responses_stream")
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
