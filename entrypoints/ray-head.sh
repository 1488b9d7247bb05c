#!/usr/bin/env bash
# supervisord program `ray-head`: a local Ray head in the foreground (`--block`), reachable on loopback only.
# The pipeline writes the resources it needs to $MEDPLAY_RUN_DIR/ray-head.args (one per line) before starting it.
set -euo pipefail

resources=()
if [[ -s "${MEDPLAY_RUN_DIR}/ray-head.args" ]]; then
    mapfile -t resources < "${MEDPLAY_RUN_DIR}/ray-head.args"
fi
# Ray token authentication (RAY_AUTH_MODE=token): the entrypoint made the token at RAY_AUTH_TOKEN_PATH.
# The pipeline has finished when supervisord stops the head: nothing is left to drain.
export RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="${RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S:-5}"
exec ray start --head --block --disable-usage-stats \
    --node-ip-address=127.0.0.1 \
    --port="${MEDPLAY_RAY_PORT}" \
    --ray-client-server-port="${MEDPLAY_RAY_CLIENT_PORT}" \
    --include-dashboard="${MEDPLAY_RAY_DASHBOARD}" \
    --dashboard-host=127.0.0.1 \
    --dashboard-port="${MEDPLAY_RAY_DASHBOARD_PORT}" \
    --dashboard-agent-listen-port="${MEDPLAY_RAY_AGENT_PORT}" \
    "${resources[@]}"
