#!/usr/bin/env bash
# supervisord program `judge`: the judge HTTP server on loopback. The pipeline writes its port (the composed
# config's medplay.judge.server_port) to $MEDPLAY_RUN_DIR/judge.args; MEDPLAY_JUDGE_SERVE_ARGS picks its
# backend, e.g. "--backend hf --model /models/medgemma-4b-it --device cuda".
set -euo pipefail

composed_args=()
if [[ -s "${MEDPLAY_RUN_DIR}/judge.args" ]]; then
    mapfile -t composed_args < "${MEDPLAY_RUN_DIR}/judge.args"
fi
read -r -a serve_args <<< "${MEDPLAY_JUDGE_SERVE_ARGS}"
exec medplay judge serve --host 127.0.0.1 "${composed_args[@]}" "${serve_args[@]}"
