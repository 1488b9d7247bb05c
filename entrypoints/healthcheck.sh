#!/usr/bin/env bash
# Docker HEALTHCHECK: healthy while supervisord runs and, once the train step has started, while the run's watchdog
# declares no stall (liveness is not progress: docs/reliability.md, "A run that stops moving") and the trainer's
# heartbeat (the composed config's metrics file, one line per step) is younger than MEDPLAY_HEARTBEAT_MAX_AGE_S.
set -euo pipefail

run_dir="${MEDPLAY_RUN_DIR:-/tmp/medplay}"
# The metrics file of the composed config (the pipeline writes it with `medplay config get medplay.metrics_file`).
composed_heartbeat="$(cat "${run_dir}/heartbeat.path" 2>/dev/null || true)"
heartbeat="${MEDPLAY_HEARTBEAT_FILE:-${composed_heartbeat}}"
max_age="${MEDPLAY_HEARTBEAT_MAX_AGE_S:-1800}"

pid="$(cat "${run_dir}/supervisord.pid" 2>/dev/null || true)"
if [[ ! "${pid}" =~ ^[0-9]+$ ]] || ! kill -0 "${pid}" 2>/dev/null; then
    echo "unhealthy: supervisord is not running"
    exit 1
fi
step="$(cat "${run_dir}/pipeline.step" 2>/dev/null || echo starting)"
if [[ "${step}" != train ]]; then
    echo "healthy: pipeline step ${step}"
    exit 0
fi
# The watchdog's marker exists from the stall it declares until the run it restarts has begun.
stall="$(cat "${run_dir}/stall.path" 2>/dev/null || true)"
if [[ -n "${stall}" && -f "${stall}" ]]; then
    echo "unhealthy: the run's watchdog declared a stall: $(cat "${stall}")"
    exit 1
fi
# Before the first step is logged, the train step's start stands in for the heartbeat (model loading, vLLM start).
last_beat="$(stat -c %Y "${run_dir}/pipeline.step")"
if [[ -n "${heartbeat}" && -f "${heartbeat}" ]]; then
    beat="$(stat -c %Y "${heartbeat}")"
    last_beat=$((beat > last_beat ? beat : last_beat))
fi
age=$(($(date +%s) - last_beat))
if ((age > max_age)); then
    echo "unhealthy: no trainer heartbeat (${heartbeat}) for ${age} s (limit ${max_age} s)"
    exit 1
fi
echo "healthy: training, last heartbeat ${age} s ago"
