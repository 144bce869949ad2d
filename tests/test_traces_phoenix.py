"""``ctxeval import phoenix``: a real Phoenix server (arize-phoenix) on
loopback with its own SQLite in a temporary folder, fed the OpenInference
fixture's spans over OTLP/HTTP, read back through its REST API.

Phoenix is heavy and pins its own dependencies, so it may live in a venv of
its own: ``CTXEVAL_PHOENIX_PYTHON`` names that venv's python (``.ci/run``
makes one); else the test's own python is used if it can import phoenix.
Skips, with the reason, when neither has Phoenix or the server does not
start."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_ctxeval.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
START_DEADLINE_S = 300  # the first start migrates its database


def _phoenix_python() -> str:
    python = os.environ.get("CTXEVAL_PHOENIX_PYTHON") or sys.executable
    found = subprocess.run(
        [python, "-c", "import phoenix.server.main, opentelemetry.proto"],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        pytest.skip(f"Phoenix is not importable by {python} (pip install arize-phoenix)")
    return python


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def phoenix_url(tmp_path: Path) -> Iterator[tuple[str, str]]:
    python = _phoenix_python()
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    server = subprocess.Popen(
        [python, "-m", "phoenix.server.main", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    seen: list[str] = []
    try:
        # Wait for the server to say it listens (its log, read as it comes: no sleep).
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                pytest.skip(f"Phoenix did not start in {START_DEADLINE_S} s: {seen[-3:]}")
            if line is None:
                pytest.skip(f"Phoenix exited while starting: {''.join(seen[-5:])}")
            seen.append(line)
            # uvicorn binds its socket after "Application startup complete".
            if "Uvicorn running" in line:
                break
        with urllib.request.urlopen(f"{url}/healthz", timeout=30) as response:
            assert response.status == 200
        yield url, python
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.phoenix
def test_import_phoenix_reads_the_sessions_a_real_server_holds(
    phoenix_url: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, python = phoenix_url
    sent = subprocess.run(
        [
            python,
            str(FIXTURES / "send_otlp.py"),
            str(FIXTURES / "openinference.jsonl"),
            f"{url}/v1/traces",
            "parcelia",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sent.returncode == 0, sent.stderr
    out = tmp_path / "from-phoenix"
    # Phoenix writes what it receives in the background: ask until all 11 spans are there.
    deadline = time.monotonic() + 60
    while True:
        code = main(
            ["import", "phoenix", "--endpoint", url, "--project", "parcelia", "-o", str(out)]
        )
        printed = capsys.readouterr().out
        if code == 0 and "read 11 span(s)" in printed or time.monotonic() > deadline:
            break
    assert code == 0
    assert "9 chat span(s); 2 session(s), 5 turn(s), 4 tool call(s), 8 window(s)" in printed
    # The same windows as importing the exported file itself.
    assert (
        main(
            [
                "import",
                "openinference",
                str(FIXTURES / "openinference.jsonl"),
                "-o",
                str(tmp_path / "file"),
            ]
        )
        == 0
    )
    for name in ("sess-full-5120", "sess-dropped-4417"):
        remote = json.loads((out / f"parcelia-{name}.windows.json").read_text())["windows"]
        local = json.loads((tmp_path / "file" / f"openinference-{name}.windows.json").read_text())[
            "windows"
        ]
        assert [w["messages"] for w in remote] == [w["messages"] for w in local]
        assert [w["tools"] for w in remote] == [w["tools"] for w in local]
    # One session's traces only; an unknown project is one line naming it.
    one = tmp_path / "one"
    assert (
        main(
            [
                "import",
                "phoenix",
                "--endpoint",
                url,
                "--project",
                "parcelia",
                "--session",
                "sess-full-5120",
                "-o",
                str(one),
            ]
        )
        == 0
    )
    assert [p.name for p in one.glob("*.yaml")] == ["parcelia-sess-full-5120.yaml"]
    capsys.readouterr()
    assert main(["import", "phoenix", "--endpoint", url, "--project", "nope", "-o", str(one)]) == 1
    assert "project 'nope': the server answered HTTP 404" in capsys.readouterr().err
