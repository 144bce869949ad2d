#!/usr/bin/env bash
# Stop the model server that .ci/llm-server.sh started, and wait until it is gone.
#
#   .ci/stop-llm-server.sh [PID]     # PID defaults to $CTXEVAL_LLM_PID
#
# PID is the server's supervisor (.ci/llm-supervisor.py). It gets SIGTERM and
# stops the server: SIGTERM, then SIGKILL after CTXEVAL_LLM_STOP_GRACE seconds
# (default 5). If the supervisor is still there 3 seconds after that, it gets
# SIGKILL, and the kernel kills the server with it (PR_SET_PDEATHSIG); a server
# still there after that gets SIGKILL here. A pid that is not a supervisor is
# left alone (exit 1), so a stale CTXEVAL_LLM_PID cannot hit another process.
set -euo pipefail

PID=${1:-${CTXEVAL_LLM_PID:-}}
GRACE=${CTXEVAL_LLM_STOP_GRACE:-5}

log() { echo "stop-llm-server: $*" >&2; }

case $PID in
    '' | *[!0-9]*)
        log "no supervisor pid: pass one, or set CTXEVAL_LLM_PID (got '$PID')"
        exit 2
        ;;
esac
if ! [[ $GRACE =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
    log "CTXEVAL_LLM_STOP_GRACE must be a number of seconds, not '$GRACE'"
    exit 2
fi
# The supervisor's grace, rounded up, and 3 seconds more.
PATIENCE=$((10#${GRACE%%.*} + 3))
[ "$GRACE" = "${GRACE%%.*}" ] || PATIENCE=$((PATIENCE + 1))

# An exited process that nobody has reaped yet (a zombie) counts as gone.
alive() {
    kill -0 "$1" 2>/dev/null || return 1
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    [ "$(printf %s "${stat##*) }" | cut -d' ' -f1)" != Z ]
}

# wait_gone PID SECONDS: true once PID is gone, false if it outlasts SECONDS.
wait_gone() {
    local tenths=$(($2 * 10))
    while alive "$1"; do
        [ "$tenths" -gt 0 ] || return 1
        tenths=$((tenths - 1))
        sleep 0.1
    done
}

if ! alive "$PID"; then
    log "pid $PID is not running: nothing to stop"
    exit 0
fi
if [ -r "/proc/$PID/cmdline" ] && ! tr '\0' ' ' <"/proc/$PID/cmdline" | grep -q 'llm-supervisor'; then
    log "pid $PID is not a model server's supervisor (.ci/llm-supervisor.py): left alone"
    exit 1
fi

# The server runs in a process group of its own, led by the supervisor's child.
servers=$(pgrep -P "$PID" 2>/dev/null || true)
kill -TERM "$PID" 2>/dev/null || true
if ! wait_gone "$PID" "$PATIENCE"; then
    log "supervisor $PID still running ${PATIENCE}s after SIGTERM: SIGKILL"
    kill -KILL "$PID" 2>/dev/null || true
    wait_gone "$PID" 2 || log "supervisor $PID survived SIGKILL"
fi
for server in $servers; do
    if ! wait_gone "$server" 2; then
        log "server $server outlived its supervisor: SIGKILL to its group"
        kill -KILL -- "-$server" 2>/dev/null || kill -KILL "$server" 2>/dev/null || true
        wait_gone "$server" 2 || log "server $server survived SIGKILL"
    fi
done
log "stopped"
