#!/usr/bin/env bash
# Run a command with the CI model server up, and stop the server however the
# command ends:
#
#   .ci/with-llm-server.sh pytest tests -p no:cacheprovider -rs
#
# .ci/llm-server.sh starts the server (building it on first use); its exports
# reach the command. If it cannot start, the command runs anyway, with
# CTXEVAL_LLM_SKIP_REASON saying why (the real-model tests skip with it as their
# reason) after a banner with the end of the log on stderr. On any exit of this
# script (success, failure, Ctrl-C, SIGTERM, SIGHUP) .ci/stop-llm-server.sh
# stops the server; if this script is killed outright, the server's supervisor
# sees it end and stops the server itself. Exits with the command's status.
set -euo pipefail

CI_DIR=$(cd "$(dirname "$0")" && pwd)
if [ $# -eq 0 ]; then
    echo "usage: $0 COMMAND [ARG...]" >&2
    exit 2
fi

stop_server() {
    if [ -n "${CTXEVAL_LLM_PID:-}" ]; then
        "$CI_DIR/stop-llm-server.sh" "$CTXEVAL_LLM_PID" || true
    fi
}
trap stop_server EXIT
# On a signal, leave through `exit`: the EXIT trap runs in any bash, and the
# status says which signal it was (128 + its number).
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

unset CTXEVAL_LLM_API_BASE CTXEVAL_LLM_PID CTXEVAL_LLM_SKIP_REASON CTXEVAL_LLM_GGUF
if exports=$(CTXEVAL_LLM_WATCH_PID=$$ "$CI_DIR/llm-server.sh"); then
    eval "$exports"
else
    eval "$exports" # its CTXEVAL_LLM_SKIP_REASON, if it got as far as saying why
    export CTXEVAL_LLM_SKIP_REASON=${CTXEVAL_LLM_SKIP_REASON:-the model server did not start}
    echo "warning: $CTXEVAL_LLM_SKIP_REASON; the real-model tests will skip" >&2
fi
"$@"
