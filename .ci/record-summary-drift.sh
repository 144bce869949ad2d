#!/usr/bin/env bash
# Re-record tests/fixtures/cassettes/summary-drift-update from the CI model
# (SmolLM2-135M-Instruct served by llama.cpp, see docs/ci-model.md):
#
#   .ci/record-summary-drift.sh
#
# Runs scenarios/summary-drift-update.yaml under summarize with every call
# recorded, from a scratch folder (the cassettes hold the requests and the
# model's answers, never the server's address). The tests
# (tests/test_fact_ledger.py) replay them and expect the model's summary to
# mutate the database's port; a newer server or model that writes another
# summary makes them fail, so read the new ledger before committing it.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/tests/fixtures/cassettes/summary-drift-update"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$ROOT/scenarios/summary-drift-update.yaml" "$WORK/"

record() {
    cd "$WORK"
    # Exit 6 is the mutation the recording is after.
    LITELLM_LOCAL_MODEL_COST_MAP=True python -m pytest summary-drift-update.yaml \
        -p no:cacheprovider -p no:xdist \
        --ctx-strategy="summarize(trigger_tokens=80,keep_messages=1)" \
        --ctx-model=openai/smollm2 --ctx-api-base="$CTXEVAL_LLM_API_BASE" \
        --ctx-cassettes=cassettes --ctx-record=all --ctx-results=results.jsonl \
        --ctx-fail-if="mutated:>0" --ctx-fail-on=never -q || [ $? -eq 6 ]
}

if [ -z "${CTXEVAL_LLM_API_BASE:-}" ]; then
    echo "record-summary-drift: no model server: run eval \"\$(.ci/llm-server.sh)\" first" >&2
    exit 2
fi
record
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$WORK"/cassettes/*.json "$OUT/"
chmod 644 "$OUT"/*.json
python -c 'import json, sys; print("fact ledger:", json.loads(open(sys.argv[1]).readline())["fact_ledger"])' \
    "$WORK/results.jsonl"
echo "record-summary-drift: wrote $(ls "$OUT" | wc -l) cassettes to $OUT"
