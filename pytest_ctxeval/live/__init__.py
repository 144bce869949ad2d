"""What a run shows while it runs: a progress line, a stop after N context
losses, and failures one line each."""
