"""The watchdog's settings for held cpu-smoke runs (the e2e and the container tests alike)."""

from __future__ import annotations

POLL_S = 1
# Limits far above a cpu-smoke phase on a loaded machine (seconds), far below the hold's own 900 s.
WATCHDOG = [
    "medplay.watchdog.floor_s=45",
    "medplay.watchdog.first_steps=0",
    "medplay.watchdog.first_steps_s=90",
    f"medplay.watchdog.poll_s={POLL_S}",
    "medplay.watchdog.kill_grace_s=5",
]
# How far past its limit a stall may be seen: one poll, and the slack of a loaded 2-core machine.
SEEN_WITHIN_S = POLL_S + 10
