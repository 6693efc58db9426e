"""A Redis for the tests: the fixtures ``redis_url`` and ``redis_server``.

``redis_url`` is ``$RESPONSES_STREAM_TEST_REDIS`` when set, else the URL of a
``redis-server`` this module starts (127.0.0.1, a free port, its own temp dir,
``--appendonly yes --save ""`` so a restart keeps the data).  ``redis_server`` is always
such a spawned server (it can be restarted in place).  Without ``redis-server`` on PATH
the tests that need one skip, or fail when ``RESPONSES_STREAM_REQUIRE_REDIS=1``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

URL_ENV = "RESPONSES_STREAM_TEST_REDIS"
REQUIRE_ENV = "RESPONSES_STREAM_REQUIRE_REDIS"
START_TIMEOUT = 15.0


def unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it when Redis is required."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} (and {REQUIRE_ENV}=1)", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A ``redis-server`` process on 127.0.0.1:``port`` with its data in ``directory``."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.socket = directory / "redis.sock"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def unix_url(self) -> str:
        return f"unix://{self.socket}?db=0"

    def start(self) -> None:
        """Start the server and wait until it answers PING."""
        args = [
            self.binary,
            *("--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.directory)),
            *("--appendonly", "yes", "--save", "", "--daemonize", "no"),
            *("--unixsocket", str(self.socket), "--unixsocketperm", "700"),
        ]
        with open(self.directory / "redis.log", "ab") as log:  # the server keeps its own copy
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while not _pings(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = (self.directory / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server on port {self.port} did not start:\n{tail}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server (SIGTERM: it writes its append-only file and exits)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        """Stop the server and start it again on the same port and directory."""
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A ``redis-server`` of its own (temp dir, free port), stopped after the session."""
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("redis-server is not on PATH (Debian: apt-get install redis-server)")
    with tempfile.TemporaryDirectory(prefix="responses-stream-redis-") as tmp:
        server = RedisServer(binary, Path(tmp))
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest) -> str:
    """``$RESPONSES_STREAM_TEST_REDIS``, else the URL of the ``redis_server`` fixture."""
    url = os.environ.get(URL_ENV)
    if url:
        return url
    server: RedisServer = request.getfixturevalue("redis_server")
    return server.url
