"""Run history: each run's results and report kept under ``reports/runs/``,
partial reruns merged into the latest results, and the commands that list,
compare and open the runs."""
