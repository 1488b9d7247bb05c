"""How often a V1 step looks for finished games: one number shared by the trainer (task_runner/trainer.py), the
quick-poll replay buffer verl's stock step gets (task_runner/replay_poll.py) and the step benchmark that compares the
two (`medplay bench step`), which must not import verl to name it."""

from __future__ import annotations

# verl's replay buffer sleeps 2 s between looks (`poll_interval`, not a config key in 0.9.1), so generation ends up
# to a look late: on an H200, steps of 256 games with 135 M parameters spent 4.1 or 8.1 s in generation
# (docs/results/ladder-gpu.md). A look is a few dictionary reads.
REPLAY_POLL_S = 0.1
