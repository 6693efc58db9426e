"""The command line as a user meets it: exit codes, and never a traceback.

Every case runs ``python -m responses_stream`` as a real process with real
pipes and checks the documented exit code and that stderr is one line, never
a traceback.
"""

from __future__ import annotations

import json
import os
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


@pytest.mark.parametrize("stdin", [b"", b"\x00\xff\xfe garbage \x81\n\n", b"hello\nworld\n"])
def test_input_without_a_chat_chunk_is_2(stdin: bytes) -> None:
    proc = _run("from-chat", stdin=stdin)
    assert proc.returncode == 2
    assert "no chat chunk" in _one_line(proc)
    # what was written is a stream that ends failed, not incomplete as if
    # the model had hit its limit
    assert _last_event(proc.stdout) == "response.failed"


def test_validate_violations_are_1_and_unreadable_file_is_2(tmp_path: Path) -> None:
    assert _run("validate", str(BROKEN / "valid_reference.sse")).returncode == 0
    assert _run("validate", str(BROKEN / "created_missing.sse")).returncode == 1
    missing = _run("validate", str(tmp_path / "nope.sse"))
    assert missing.returncode == 2
    assert "cannot read" in _one_line(missing)
    assert _run("validate").returncode == 2


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
