"""The files a run's watchdog writes in its output folder, named once for the watchdog, `medplay status` and the
appliance's health check (entrypoints/pipeline.sh names the stall marker's path to entrypoints/healthcheck.sh)."""

from __future__ import annotations

WATCHDOG_FOLDER = "watchdog"  # <medplay.output_dir>/watchdog/
STALL_NAME = "stall.json"  # present while a stall is declared and its run not yet restarted (the HEALTHCHECK)
EVENTS_NAME = "events.jsonl"  # one line per stall, restart and end
SETTINGS_NAME = "settings.json"  # the settings it watches with (`medplay status` shows the phase's limit)
HANGS_FOLDER = "hangs"  # <medplay.output_dir>/hangs/<UTC time>/: what each stall left
