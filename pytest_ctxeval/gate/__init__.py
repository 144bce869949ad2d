"""The CI regression gate: a committed baseline, the comparison against it,
budget rules (``--ctx-fail-if``), shards and the exit codes that tell them apart."""
