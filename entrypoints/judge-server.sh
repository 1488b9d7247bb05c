#!/usr/bin/env bash
# supervisord program `judge`: the judge HTTP server on loopback; MEDPLAY_JUDGE_SERVE_ARGS picks its backend,
# e.g. "--backend hf --model /models/medgemma-4b-it --device cuda".
set -euo pipefail

read -r -a serve_args <<< "${MEDPLAY_JUDGE_SERVE_ARGS}"
exec medplay judge serve --host 127.0.0.1 --port "${MEDPLAY_JUDGE_PORT}" "${serve_args[@]}"
