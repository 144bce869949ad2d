"""Peers of pytest-ctxeval (Inspect AI, promptfoo) and the shared workload, for compare.py."""
