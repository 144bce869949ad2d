"""Rollout mode: live sessions in which the model under test writes every
assistant turn (user turns scripted, tools answered by stubs), each paired
with a ``full`` shadow on the same user turns, checked turn by turn against
the constraints in force, with the facts tracked request by request.

The evaluator calls in through ``evaluate.rollout.item.RolloutRunner`` only; nothing here
imports the pytest wiring."""
