"""``python -m responses_stream from-chat`` and friends."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .api import chat_data_lines, sse_from_chat


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m responses_stream")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("from-chat", help="Chat Completions SSE on stdin -> Responses SSE on stdout")
    p.add_argument("--dialect", choices=["openai", "openresponses"], default="openai")
    p.add_argument("--request", type=Path, help="the original /v1/responses request body (JSON)")
    p.add_argument("--model", help="model name for the Response (default: the request's)")
    p.set_defaults(func=cmd_from_chat)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code
