"""The command line as a user meets it: exit codes, help, options, input files, and
never a traceback.

Every case runs ``python -m responses_stream`` as a real process with real
pipes and checks the documented exit code and that stderr is one line, never
a traceback.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"
RECORDED = ROOT / "tests" / "recorded"
BROKEN = ROOT / "tests" / "broken"
LLAMA = (RECORDED / "llamacpp_text.sse").read_bytes()
VALID_RESPONSES = (BROKEN / "valid_reference.sse").read_bytes()


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "responses_stream", *args],
        cwd=GENERATED,
        input=stdin,
        capture_output=True,
        timeout=120,
    )


def _one_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    assert err.count("\n") == 1, err
    return err


def _fixed(out: bytes) -> bytes:
    """A stream with its random ids and its timestamps made fixed, to compare runs."""
    out = re.sub(rb'"(resp|msg|rs|fc|call)_[0-9a-f]+"', rb'"\1_ID"', out)
    return re.sub(rb'"(created_at|completed_at)":\d+', rb'"\1":0', out)


def _last_event(out: bytes) -> str:
    events = [line[7:] for line in out.decode().splitlines() if line.startswith("event: ")]
    return events[-1]


def test_complete_stream_is_0() -> None:
    proc = _run("from-chat", stdin=LLAMA)
    assert proc.returncode == 0, proc.stderr
    assert _last_event(proc.stdout) == "response.completed"
    assert _run("to-chat", stdin=VALID_RESPONSES).returncode == 0


def test_incomplete_stream_is_a_complete_stream() -> None:
    proc = _run("from-chat", stdin=(RECORDED / "finish_length.sse").read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert _last_event(proc.stdout) == "response.incomplete"


def test_failed_output_is_3() -> None:
    proc = _run("from-chat", stdin=(RECORDED / "malformed_json.sse").read_bytes())
    assert _last_event(proc.stdout) == "response.failed"
    assert proc.returncode == 3
    failed = b'event: response.failed\ndata: {"type":"response.failed","sequence_number":0,'
    failed += b'"response":{"id":"resp_1","object":"response","status":"failed","output":[],'
    failed += b'"error":{"code":"server_error","message":"upstream broke"}}}\n\n'
    created = VALID_RESPONSES.split(b"\n\n")[0] + b"\n\n"
    failed = failed.replace(b'"sequence_number":0', b'"sequence_number":1')
    chat = _run("to-chat", stdin=created + failed)
    data = [line[6:] for line in chat.stdout.decode().splitlines() if line.startswith("data: {")]
    assert "error" in json.loads(data[-1])
    assert chat.returncode == 3


@pytest.mark.parametrize(
    ("stdin", "says"),
    [
        (b"", "from-chat: stdin: the input is empty"),
        (b" \n\r\n", "from-chat: stdin: the input is only white space"),
        (
            b"\x00\xff\xfe garbage \x81\n\n",
            r"neither SSE nor JSON lines: it starts with '\x00\xff\xfe garbage \x81\n\n'",
        ),
        (b"hello\nworld\n", "neither SSE nor JSON lines: it starts with 'hello\\nworld\\n'"),
    ],
)
def test_input_that_is_no_stream_is_2_and_writes_nothing(stdin: bytes, says: str) -> None:
    for command in ("from-chat", "to-chat", "validate"):
        proc = _run(command, "-", stdin=stdin)
        assert proc.returncode == 2
        assert says.replace("from-chat", command) in _one_line(proc)
        assert proc.stdout == b""


@pytest.mark.parametrize("command", ["from-chat", "to-chat", "validate"])
def test_an_unreadable_file_is_2_for_each_command(tmp_path: Path, command: str) -> None:
    missing = _run(command, str(tmp_path / "nope.sse"))
    assert missing.returncode == 2 and missing.stdout == b""
    assert "cannot read" in _one_line(missing)
    folder = _run(command, str(tmp_path))
    assert folder.returncode == 2 and "cannot read" in _one_line(folder)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    proc = _run(command, str(empty))
    assert proc.returncode == 2 and f"{empty}: the input is empty" in _one_line(proc)


def test_sse_without_a_chat_chunk_is_2() -> None:
    proc = _run("from-chat", stdin=b": a comment\n\nevent: ping\n\n")
    assert proc.returncode == 2
    assert "no chat chunk" in _one_line(proc)
    # what was written is a stream that ends failed, not incomplete as if
    # the model had hit its limit
    assert _last_event(proc.stdout) == "response.failed"


def test_sse_without_a_responses_event_is_2() -> None:
    validate = _run("validate", "-", stdin=b": a comment\n\n")
    assert validate.returncode == 2 and "holds no event" in _one_line(validate)
    chat = _run("to-chat", stdin=b": a comment\n\n")
    assert chat.returncode == 2 and "holds no Responses event" in _one_line(chat)
    assert b'"code":"empty_input"' in chat.stdout and chat.stdout.endswith(b"data: [DONE]\n\n")


def test_validate_violations_are_1_and_unreadable_file_is_2(tmp_path: Path) -> None:
    assert _run("validate", str(BROKEN / "valid_reference.sse")).returncode == 0
    assert _run("validate", str(BROKEN / "created_missing.sse")).returncode == 1
    missing = _run("validate", str(tmp_path / "nope.sse"))
    assert missing.returncode == 2
    assert "cannot read" in _one_line(missing)
    assert _run("validate").returncode == 2


def test_validate_reads_a_stream_as_resumed_only_when_told(tmp_path: Path) -> None:
    """OpenAI's answer to starting_after=0 (numbered from 1, no response.created): a
    stream missing its start unless --resumed says it was resumed."""
    from recordings_support import RESUMED, streams

    [stream] = streams(RESUMED + ".2.jsonl")
    path = tmp_path / "resumed.sse"
    path.write_bytes(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in stream))
    whole = _run("validate", str(path))
    assert whole.returncode == 1 and b"SEQ_NOT_FROM_ZERO" in whole.stdout
    resumed = _run("validate", "--resumed", str(path))
    assert resumed.returncode == 0, resumed.stdout
    assert b"CONTINUATION" in resumed.stdout


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read --request"),
        (b"{not json", "is not JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b"\xff\xfe\x00", "is not UTF-8"),
    ],
)
def test_bad_request_file_is_one_line_and_2(
    tmp_path: Path, content: bytes | None, says: str
) -> None:
    path = tmp_path / "request.json"
    if content is not None:
        path.write_bytes(content)
    proc = _run("from-chat", "--request", str(path), stdin=LLAMA)
    assert proc.returncode == 2
    assert says in _one_line(proc)
    assert proc.stdout == b""


def test_usage_errors_are_2() -> None:
    assert _run("nope").returncode == 2
    assert _run("from-chat", "--dialect", "bogus", stdin=LLAMA).returncode == 2
    assert b"Traceback" not in _run("nope").stderr


def test_closed_pipe_is_one_line(tmp_path: Path) -> None:
    # a long stream into a reader that closes after a few bytes, as `| head -c 10` does
    big = b"".join(
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{"content":"'
        + b"x" * 500
        + b'"},"finish_reason":null}]}\n\n'
        for _ in range(4000)
    )
    src = tmp_path / "big.sse"
    src.write_bytes(big)
    cmd = f"{sys.executable} -m responses_stream from-chat < {src} | head -c 10 > /dev/null"
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", cmd], cwd=GENERATED, capture_output=True, timeout=120
    )
    assert proc.returncode == 141
    assert "output was closed" in _one_line(proc)


def test_ctrl_c_is_one_line_and_130() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "responses_stream", "from-chat"],
        cwd=GENERATED,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(LLAMA.split(b"\n\n")[0] + b"\n\n")
    proc.stdin.flush()
    proc.stdout.read(1)  # the process is up and converting: created was written
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err.decode()
    assert err.decode().strip().endswith("interrupted")


def test_internal_errors_are_one_line_unless_debug() -> None:
    code = (
        "import sys\n"
        "from responses_stream._runtime import cli\n"
        "def boom(args):\n"
        "    raise RuntimeError('boom')\n"
        "cli.cmd_to_chat = boom\n"
        "sys.exit(cli.main(['validate', '--rules']) and 0 or cli.main(sys.argv[1:]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RESPONSES_STREAM_DEBUG"}
    args = [sys.executable, "-c", code, "to-chat"]
    proc = subprocess.run(args, cwd=GENERATED, input=b"", capture_output=True, env=env, timeout=60)
    assert proc.returncode == 70
    assert "internal error: RuntimeError: boom" in _one_line(proc)
    debug = subprocess.run(
        args,
        cwd=GENERATED,
        input=b"",
        capture_output=True,
        env={**env, "RESPONSES_STREAM_DEBUG": "1"},
    )
    assert b"Traceback" in debug.stderr


# -- help, version, options ------------------------------------------------------------
COMMANDS = ("from-chat", "repair", "validate", "to-chat")


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_explains_itself(command: str) -> None:
    proc = _run(command, "--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.startswith(f"usage: python -m responses_stream {command} ")
    description = out.split("\n\n")[1]
    assert len(description.split()) > 10, description  # a description, not only the usage
    examples = out.split("examples:\n", 1)[1]
    assert f"  python -m responses_stream {command} " in examples
    assert "(default: openai)" in out  # --dialect: every command has one
    if command == "to-chat":
        assert "(default: content)" in out
    if command != "validate":
        assert "FILE" in out and "(default: -)" in out


def test_top_level_help_lists_the_commands_and_exit_codes() -> None:
    proc = _run("--help")
    assert proc.returncode == 0
    out = proc.stdout.decode()
    for command in COMMANDS:
        assert f"    {command} " in out
    for code in ("0", "1", "2", "3", "70", "130", "141"):
        assert f"\n  {code} " in out, code


def test_version() -> None:
    from responses_stream._runtime.version import __version__

    proc = _run("--version")
    assert proc.returncode == 0
    assert proc.stdout.decode() == f"responses-stream {__version__}\n"
    assert proc.stderr == b""


def _usage_error(proc: subprocess.CompletedProcess[bytes], command: str, says: str) -> None:
    """Exit 2: the command's usage, then one error line; nothing on stdout."""
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    assert err.startswith(f"usage: python -m responses_stream {command} "), err
    lines = err.rstrip("\n").split("\n")
    assert lines[-1].startswith(f"python -m responses_stream {command}: error: "), err
    assert says in lines[-1]
    assert sum("error:" in line for line in lines) == 1
    assert all(line.startswith(" ") for line in lines[1:-1]), err  # the rest of the usage


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("from-chat", "--bogus"), "unrecognized arguments: --bogus"),
        (("from-chat", "--dialect", "bogus"), "invalid choice: 'bogus'"),
        (("from-chat", "--request"), "expected one argument"),
        (("from-chat", "a.sse", "b.sse"), "unrecognized arguments: b.sse"),
        (("validate", "--nope", "x.sse"), "unrecognized arguments: --nope"),
        (("to-chat", "--reasoning", "loud"), "invalid choice: 'loud'"),
        (("to-chat", "--request", "{}"), "unrecognized arguments: --request"),
    ],
)
def test_a_bad_option_shows_the_command_usage(args: tuple[str, ...], says: str) -> None:
    _usage_error(_run(*args, stdin=LLAMA), args[0], says)


def test_a_bad_option_before_the_command_shows_the_top_usage() -> None:
    proc = _run("--bogus", "from-chat", stdin=LLAMA)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.startswith("usage: python -m responses_stream [-h]"), err
    assert err.rstrip("\n").split("\n")[-1].endswith("unrecognized arguments: --bogus")


# -- input files -------------------------------------------------------------------------
@pytest.mark.parametrize(("command", "data"), [("from-chat", LLAMA), ("to-chat", VALID_RESPONSES)])
def test_file_argument_is_the_same_as_stdin(command: str, data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "input.sse"
    path.write_bytes(data)
    piped = _run(command, stdin=data)
    assert piped.returncode == 0, piped.stderr
    expected = _fixed(piped.stdout)
    assert _fixed(_run(command, str(path)).stdout) == expected
    assert _fixed(_run(command, "-", stdin=data).stdout) == expected
    # the file wins over stdin
    assert _fixed(_run(command, str(path), stdin=b"junk\n\n").stdout) == expected


@pytest.mark.parametrize("command", ["from-chat", "to-chat"])
def test_a_missing_or_unreadable_file_is_one_line_and_2(command: str, tmp_path: Path) -> None:
    for name in (tmp_path / "nope.sse", tmp_path):
        proc = _run(command, str(name), stdin=LLAMA)
        assert proc.returncode == 2
        assert f"cannot read {name}" in _one_line(proc)
        assert proc.stdout == b""


# -- --request: a file or inline JSON ----------------------------------------------------
def _echoed(out: bytes) -> dict[str, object]:
    first = next(ln for ln in out.decode().splitlines() if ln.startswith("data: "))
    response: dict[str, object] = json.loads(first[6:])["response"]
    return response


@pytest.mark.parametrize("spacing", ["", "  \n\t"])
def test_request_inline_json_is_the_same_as_a_file(spacing: str, tmp_path: Path) -> None:
    request = {"model": "inline-model", "instructions": "Be brief.", "metadata": {"k": "v"}}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    by_file = _run("from-chat", "--request", str(path), stdin=LLAMA)
    inline = _run("from-chat", "--request", spacing + json.dumps(request), stdin=LLAMA)
    assert inline.returncode == 0, inline.stderr
    assert _fixed(inline.stdout) == _fixed(by_file.stdout)
    echoed = _echoed(inline.stdout)
    assert (echoed["model"], echoed["instructions"]) == ("inline-model", "Be brief.")
    assert echoed["metadata"] == {"k": "v"}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('{"model": "m",', "--request (inline JSON) is not JSON"),
        ("{" * 100_000, "--request (inline JSON) is not JSON"),
        ('{"tools": 5}', "--request: the Response this request makes is invalid"),
        ('{"model": 5}', "--request: model must be a str"),
        ("no-such-request.json", "cannot read --request no-such-request.json"),
    ],
)
def test_a_bad_request_is_one_line_and_2(value: str, says: str) -> None:
    proc = _run("from-chat", "--request", value, stdin=LLAMA)
    assert proc.returncode == 2
    assert says in _one_line(proc)
    assert proc.stdout == b""


# -- a live pipe ----------------------------------------------------------------------
# The CLI writes what one read of its input produced in one write; before it waits for
# more input, everything it has is on stdout.  A writer that pauses after each event sees
# that event converted before it writes the next.


def _chat_line(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return b"data: " + json.dumps(chunk | {"choices": [choice]}).encode() + b"\n\n"


def _read_until(proc: subprocess.Popen[bytes], marker: bytes, seen: bytearray) -> None:
    """Read stdout until ``marker`` is in it, with the input left waiting."""
    import select

    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + 30
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"{marker!r} not written while the input waits; got {bytes(seen)[-400:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            data = os.read(fd, 65536)
            assert data, f"stdout closed before {marker!r}"
            seen += data


def _live(args: list[str], steps: list[tuple[bytes, bytes]], last: bytes) -> bytes:
    """Write each input, wait for its marker on stdout, then write the next."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "responses_stream", *args],
        cwd=GENERATED,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    seen = bytearray()
    try:
        for data, marker in steps:
            proc.stdin.write(data)
            proc.stdin.flush()
            _read_until(proc, marker, seen)
        proc.stdin.write(last)
        proc.stdin.close()
        seen += proc.stdout.read()
        assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return bytes(seen)


def test_from_chat_writes_each_event_before_the_next_input_line() -> None:
    steps = [(_chat_line({"role": "assistant", "content": ""}), b"event: response.in_progress")]
    for text in ["Hel", "lo, ", "wor", "ld"]:
        steps.append((_chat_line({"content": text}), b'"delta":' + json.dumps(text).encode()))
    steps.append(
        (
            _chat_line({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f"}}]}),
            b"event: response.output_item.done",  # the message closes
        )
    )
    for args in ['{"a"', ": 1}"]:
        fragment = {"index": 0, "function": {"arguments": args}}
        steps.append(
            (_chat_line({"tool_calls": [fragment]}), b'"delta":' + json.dumps(args).encode())
        )
    out = _live(["from-chat"], steps, _chat_line({}, "tool_calls") + b"data: [DONE]\n\n")
    assert _last_event(out) == "response.completed"


def test_to_chat_writes_each_chunk_before_the_next_input_event() -> None:
    frames = [f + b"\n\n" for f in VALID_RESPONSES.split(b"\n\n") if f.strip()]
    steps = []
    for frame in frames[:-1]:
        data = json.loads(frame.split(b"data: ", 1)[1])
        if data["type"] == "response.output_text.delta":
            text = json.dumps(data["delta"], ensure_ascii=False)
            steps.append((frame, b'"content":' + text.encode()))
        else:
            steps.append((frame, b""))
    assert any(marker for _, marker in steps), "the reference stream has text deltas"
    out = _live(["to-chat"], steps, frames[-1])
    assert out.endswith(b"data: [DONE]\n\n")
