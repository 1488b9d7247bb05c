#!/usr/bin/env bash
# supervisord program `pipeline` (entrypoint `train`): probe -> config -> Ray -> [judge server] -> convert -> train.
# Each step's output goes to stdout and to $MEDPLAY_LOGS/pipeline/STEP.log; the first failing step ends the
# pipeline with that step's exit status. SIGTERM/SIGINT are forwarded to the running step (the trainer saves
# a checkpoint and exits). The exit status is written to $MEDPLAY_RUN_DIR/pipeline.status for supervise.py.
set -euo pipefail

logs="${MEDPLAY_LOGS}/pipeline"
run_dir="${MEDPLAY_RUN_DIR}"
supervisorctl=(supervisorctl --configuration "${MEDPLAY_HOME}/entrypoints/supervisord.conf")
mkdir -p "${logs}"

say() { printf '%s pipeline: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"; }

# Set while this pipeline holds a lock file it created and no step has written to the checkpoints volume.
drop_lock_file=""
finish() {
    local code=$?
    # A run that ends before writing there (a refusal of the probe, a mistake in the settings) leaves the volume
    # as it found it: the lock file it created goes, removed while still held (medical_team/run_folder/run_lock.py).
    if [[ -n "${drop_lock_file}" ]]; then
        python -m medical_team.run_folder.run_lock drop "${MEDPLAY_CHECKPOINTS}" "${run_lock_fd}" || true
    fi
    echo "${code}" > "${run_dir}/pipeline.status"
    say "finished with exit status ${code}"
}
trap finish EXIT

child=""
stop_signal=""
forward() {
    stop_signal="$1"
    if [[ -n "${child}" ]]; then
        say "received SIG$1: forwarding it to the running step (pid ${child})"
        kill -s "$1" "${child}" 2>/dev/null || true
    fi
}
trap 'forward TERM' TERM
trap 'forward INT' INT

# run_step NAME COMMAND...: run it in the background (so signals can be forwarded), log it, stop on failure.
run_step() {
    local name="$1" code=0
    shift
    if [[ -n "${stop_signal}" ]]; then
        say "stopping before step ${name}: received SIG${stop_signal}"
        exit 143
    fi
    echo "${name}" > "${run_dir}/pipeline.step"
    say "step ${name}: $(python -m medical_team.run.redaction "$@")"
    "$@" > >(tee -a "${logs}/${name}.log") 2>&1 &
    child=$!
    # A trapped signal interrupts `wait`; wait again until the step has really ended.
    while true; do
        wait "${child}" || true
        kill -0 "${child}" 2>/dev/null || break
    done
    wait "${child}" || code=$?
    child=""
    if ((code != 0)); then
        say "step ${name} failed with exit status ${code}; its log: ${logs}/${name}.log"
        exit "${code}"
    fi
    say "step ${name} done"
}

# wait_until SECONDS WHAT COMMAND...: retry COMMAND every 2 s until it succeeds.
wait_until() {
    local limit="$1" what="$2" started="${SECONDS}"
    shift 2
    until "$@" > /dev/null 2>&1; do
        if ((SECONDS - started >= limit)); then
            echo "${what} is not ready after ${limit} s; the last attempt said:" >&2
            "$@" >&2 || true
            return 1
        fi
        sleep 2
    done
    echo "${what} is ready after $((SECONDS - started)) s"
}

http_ok() { python -c 'import sys, httpx; sys.exit(httpx.get(sys.argv[1], timeout=5).status_code != 200)' "$1"; }

# --- one run per output folder: its lock (medical_team/run_folder/run_lock.py), held by this shell's open file until the
# pipeline ends, taken before any step writes to the folder; the train step adopts it (MEDPLAY_RUN_LOCK_FD).
mkdir -p "${MEDPLAY_CHECKPOINTS}"
lock_file="${MEDPLAY_CHECKPOINTS}/$(python -m medical_team.run_folder.run_lock name)"
while true; do
    created=""
    [[ -e "${lock_file}" ]] || created=1
    exec {run_lock_fd}<>"${lock_file}"
    code=0
    refused="$(python -m medical_team.run_folder.run_lock take "${MEDPLAY_CHECKPOINTS}" "${run_lock_fd}" "$$" 2>&1)" || code=$?
    # 75 (EX_TEMPFAIL): a run that ended before writing removed the file after this shell opened it; open it again.
    ((code == 75)) || break
    exec {run_lock_fd}>&-
done
if ((code != 0)); then
    say "${refused}"
    exit "${code}"
fi
drop_lock_file="${created}"
export MEDPLAY_RUN_LOCK_FD="${run_lock_fd}"

# --- the user's settings: the mounted settings file, then the Hydra overrides of `train` (written by the
# entrypoint, one per line), which win -------------------------------------------------------------------------
user_overrides=()
run_config="${MEDPLAY_RUN_CONFIG:?is set by the entrypoint}"
if [[ -f "${run_config}" ]]; then
    from_file="$(python -m medical_team.launcher.config.run_file "${run_config}" 2>&1)" || {
        code=$?
        say "${from_file}"
        exit "${code}"
    }
    if [[ -n "${from_file}" ]]; then
        mapfile -t user_overrides <<< "${from_file}"
    fi
    say "settings file ${run_config}: ${#user_overrides[@]} settings (the overrides of train win)"
fi
if [[ -s "${run_dir}/train.args" ]]; then
    mapfile -t -O "${#user_overrides[@]}" user_overrides < "${run_dir}/train.args"
fi

# --- probe: refuse early, choose the profile and the attention ----------------------------------------------
# The probe also checks the run's settings (every mistake at once, exit 2) before Ray, the judge or the conversion,
# and writes the overrides the run trains with (medical_team/cli/probe.py): profile=<its choice>; the image's
# attention settings when the image has no flash-attn (MEDPLAY_ATTENTION=sdpa: the gpu-pypi flavour) and the
# overrides name no attention; then the user's overrides.
run_args="${run_dir}/run.args"
probe_args=(--output "${MEDPLAY_LOGS}/probe.json" --checkpoints "${MEDPLAY_CHECKPOINTS}")
probe_args+=(--run-overrides "${run_args}")
if [[ -n "${MEDPLAY_ATTENTION:-}" ]]; then
    probe_args+=(--attention "${MEDPLAY_ATTENTION}")
fi
run_step probe medplay probe "${probe_args[@]}" "${user_overrides[@]}"
mapfile -t run_overrides < "${run_args}"
say "hardware profile: ${run_overrides[0]#profile=}"

# --- the training config as `medplay train` will compose it (YAML, profile and overrides alike) --------------
data_dir="${MEDPLAY_CHECKPOINTS}/data"
train_overrides=(
    "medplay.output_dir=${MEDPLAY_CHECKPOINTS}"
    "trainer.default_local_dir=${MEDPLAY_CHECKPOINTS}"
    "medplay.data_dir=${data_dir}"
    "${run_overrides[@]}"
)
# config_values FILE KEY... OVERRIDES...: the composed values, one line per key, into FILE (and the step's log).
config_values() {
    local file="$1"
    shift
    medplay config get "$@" > "${file}"
    sed 's/^/composed: /' "${file}"
}
composed="${run_dir}/composed.txt"
run_step config config_values "${composed}" medplay.judge.backend medplay.judge.url medplay.judge.server_port \
    medplay.metrics_file ray_kwargs.ray_init.num_cpus ray_kwargs.ray_init.num_gpus ray_kwargs.ray_init._system_config \
    "${train_overrides[@]}"
{
    read -r judge_backend
    read -r judge_url
    read -r judge_port
    read -r metrics_file
    read -r ray_cpus
    read -r ray_gpus
    read -r ray_system_config
} < "${composed}"
# The health check's heartbeat: the metrics file this run appends one line to per step.
echo "${metrics_file}" > "${run_dir}/heartbeat.path"
# ... and the watchdog's stall marker (medical_team/watchdog/supervisor.py): unhealthy while a stall is declared.
echo "${MEDPLAY_CHECKPOINTS}/watchdog/stall.json" > "${run_dir}/stall.path"

# --- Ray: join RAY_ADDRESS, or start the local head under supervisord ---------------------------------------
if [[ -n "${RAY_ADDRESS:-}" ]]; then
    say "RAY_ADDRESS is set: joining the existing Ray cluster at ${RAY_ADDRESS}; no local Ray head is started"
else
    # The resources and settings the composed config's ray_init declares (cpu-smoke over-commits: a fake GPU, 16 CPUs).
    : > "${run_dir}/ray-head.args"
    if [[ -n "${ray_cpus}" ]]; then echo "--num-cpus=${ray_cpus}" >> "${run_dir}/ray-head.args"; fi
    if [[ -n "${ray_gpus}" ]]; then echo "--num-gpus=${ray_gpus}" >> "${run_dir}/ray-head.args"; fi
    # The cluster's settings the config gives a Ray it starts (e.g. how many task events the GCS keeps).
    if [[ -n "${ray_system_config}" ]]; then echo "--system-config=${ray_system_config}" >> "${run_dir}/ray-head.args"; fi
    run_step ray-head "${supervisorctl[@]}" start ray-head
    export RAY_ADDRESS="127.0.0.1:${MEDPLAY_RAY_PORT}"
fi
run_step ray-ready wait_until 180 "Ray cluster at ${RAY_ADDRESS}" ray status --address "${RAY_ADDRESS}"

# --- the judge: medplay's judge server when the config asks for one without naming it ----------------------
# Where the backend's verdicts are made (medplay's registry of backends answers; the pipeline reads no names).
judge_kind="$(medplay judge kind "${judge_backend}")"
case "${judge_kind}" in
    judge-server)
        if [[ -z "${judge_url}" ]]; then
            echo "--port=${judge_port}" > "${run_dir}/judge.args"
            run_step judge-server "${supervisorctl[@]}" start judge
            run_step judge-ready wait_until 600 "judge server" http_ok "http://127.0.0.1:${judge_port}/ready"
            train_overrides+=("medplay.judge.url=http://127.0.0.1:${judge_port}")
        else
            say "judge: the judge server at ${judge_url}"
        fi
        ;;
    served-here) say "judge: a vLLM server of the judge model, started by the train step (medplay train)" ;;
    *) say "judge: backend ${judge_backend} (in the train step)" ;;
esac

# --- convert: the bundled MEDEC-MS CSVs, or the CSVs under MEDPLAY_DATA ------------------------------------
convert_args=(--output "${data_dir}")
game_csvs=()
shopt -s nullglob
for csv in "${MEDPLAY_DATA}"/*.csv; do
    if [[ "$(basename "${csv}")" != benchmark.csv ]]; then
        game_csvs+=("${csv}")
    fi
done
shopt -u nullglob
if ((${#game_csvs[@]})); then
    convert_args+=(--input "${game_csvs[@]}")
fi
if [[ -f "${MEDPLAY_DATA}/benchmark.csv" ]]; then
    convert_args+=(--benchmark "${MEDPLAY_DATA}/benchmark.csv")
fi
drop_lock_file=""  # the first step that writes to the checkpoints volume
run_step convert medplay convert "${convert_args[@]}"

# --- train: the chosen profile, the mounted volumes, the Ray cluster above, then the user's overrides -------
# RAY_ADDRESS is exported: `medplay train` joins that cluster (and leaves its resources to it).
run_step train medplay train "${train_overrides[@]}"
