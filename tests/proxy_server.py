"""A forward proxy for the tests: Debian's ``tinyproxy`` on 127.0.0.1, the fixture
``tinyproxy``.

It listens on a free port, lets only 127.0.0.1 in, allows ``CONNECT`` to any port (its
configuration names no ``ConnectPort``) and logs each connection it makes, so a test
can tell what went through it.  Without ``tinyproxy`` on PATH the tests that need it
skip, or fail when ``RESPONSES_STREAM_REQUIRE_TINYPROXY=1`` (as ``.ci/run`` sets).
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

import pytest
from gateway_support import free_port, stop

REQUIRE_ENV = "RESPONSES_STREAM_REQUIRE_TINYPROXY"
START_TIMEOUT = 15.0
CONFIG = """\
Port {port}
Listen 127.0.0.1
Timeout 30
Allow 127.0.0.1
MaxClients 64
LogLevel Info
LogFile "{directory}/tinyproxy.log"
PidFile "{directory}/tinyproxy.pid"
"""


class Tinyproxy:
    """A running ``tinyproxy``: its :attr:`url` and what its log says it did."""

    def __init__(self, port: int, log: Path) -> None:
        self.port = port
        self.log = log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lines(self) -> list[str]:
        """The log's lines so far."""
        try:
            return self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []

    def requests(self, marker: str) -> int:
        """How many requests the log shows it took whose first line holds ``marker``
        (``CONNECT 127.0.0.1:PORT`` for a tunnel, ``POST http://...`` for a request)."""
        return sum(
            1 for line in self.lines() if "Request (file descriptor" in line and marker in line
        )


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def tinyproxy() -> Iterator[Tinyproxy]:
    """A ``tinyproxy`` of its own (temp dir, free port), stopped after the session."""
    binary = shutil.which("tinyproxy")
    if binary is None:
        reason = "tinyproxy is not on PATH (Debian: apt-get install tinyproxy)"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason} (and {REQUIRE_ENV}=1)", pytrace=False)
        pytest.skip(reason)
    with tempfile.TemporaryDirectory(prefix="responses-stream-proxy-") as tmp:
        directory = Path(tmp)
        port = free_port()
        config = directory / "tinyproxy.conf"
        config.write_text(CONFIG.format(port=port, directory=directory), encoding="utf-8")
        process = subprocess.Popen(
            [binary, "-d", "-c", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while not _listening(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"tinyproxy did not start (exit {process.poll()})")
                time.sleep(0.05)
            yield Tinyproxy(port, directory / "tinyproxy.log")
        finally:
            stop(process)
