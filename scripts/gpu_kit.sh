#!/usr/bin/env bash
# The GPU kit (docs/wheelhouse.md, "On a lent GPU machine"): one phase per call, each ending by itself within
# LIMIT_S (540 s), its files (at most 8) in $OUT or --out DIR, a short table printed last.
#   scripts/gpu_kit.sh [--cpu] [--out DIR] PHASE [PART]
#   install   the carried onto-torch wheelhouse ($PARTS) into $SITE, plus this tree's own wheel
#   probe     nvidia-smi and `medplay probe --attention sdpa` (table and JSON)
#   prepare   MEDEC data and the random Qwen3-4B-shaped policy (bf16, ~8 GB) in $WORK
#   fit       STEPS (3) steps of profile 80g judged by the prepared model served with vLLM, no initial validation
#   fit48     profile 48g on this card capped to 48 GiB (medplay.emulate_gpu_gib=48), judged the same way
#   fit24     profile 24g capped to 24 GiB (rules judge: the profile has no room for a local one)
#   bench     the self-play step / verl's stock single-turn step, same GPU, model and profile (rules judge);
#             PART selfplay|stock runs one of the two (on a GPU, one per call); the ratio comes once both ran
#   ladder    scripts/learning_ladder.sh gpu PART (the learning ladder), its outputs collected
#   learn     the learning run in one call: SmolLM2-135M (LADDER_MODEL=gemma3-270m: Gemma 3 270M), SFT, then RL on
#             ground truth for as many steps as the limit leaves, the benchmark scored greedily by the RL trainer's
#             validation before its first step and after its last, `medplay compare`; or in two: PART sft (the model,
#             SFT), then PART rl (RL with its validations, the comparison); PART selfplay: the self-play rung from
#             the same SFT weights, its validation and the comparison of all rungs (a later call)
# --cpu runs the same phase on the CPU: the project's environment, the tiny model and profile cpu-smoke.
# Knobs: PARTS, SITE (/root/medplay-site), WORK (/root/medplay-work; --cpu: build/gpu-kit-cpu), STEPS, LIMIT_S,
# EXTRA (more Hydra overrides for the training runs, space-separated), PYTHON (--cpu: .venv/bin/python).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
phases="install probe prepare fit fit48 fit24 bench ladder learn"
cpu=0
out="${OUT:-}"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --cpu) cpu=1; shift ;;
        --out) out="$2"; shift 2 ;;
        *) break ;;
    esac
done
phase="${1:-}"
part="${2:-}"
if [[ " ${phases} " != *" ${phase} "* ]]; then
    sed -n '2,20p' "$0" >&2
    exit 2
fi
limit_s="${LIMIT_S:-540}"
if [[ "${cpu}" == 1 ]]; then
    work="${WORK:-${repo}/build/gpu-kit-cpu}"
    python="${PYTHON:-${repo}/.venv/bin/python}"
    [[ -x "${python}" ]] || python=python3
else
    work="${WORK:-/root/medplay-work}"
    python="${PYTHON:-python3}"
fi
site="${SITE:-/root/medplay-site}"
out="${out:-${work}/out-${phase}}"
mkdir -p "${work}" "${out}"
out="$(cd "${out}" && pwd)"
started=$(date +%s)

# The wheelhouse's run-time environment (PYTHONPATH, PATH, VLLM_USE_FLASHINFER_SAMPLER=0); none on the CPU.
use_site() {
    [[ "${cpu}" == 1 ]] && return 0
    if [[ ! -f "${site}/env.sh" ]]; then
        echo "gpu_kit: ${site}/env.sh is missing: run the install phase first" >&2
        exit 1
    fi
    # shellcheck disable=SC1091
    source "${site}/env.sh"
}

# The wheelhouse has no flash-attn: every training run on a GPU uses torch's sdpa without padding removal, with the
# overrides medical_team/hardware/attention.py gives for it (after use_site); none on the CPU.
gpu_overrides() {
    [[ "${cpu}" == 1 ]] && return 0
    "${python}" -c 'from medical_team.hardware.attention import attention_overrides; print(*attention_overrides("sdpa"))'
}

# The CLI: on PATH after use_site on a GPU host, beside the project's Python on the CPU.
medplay_bin() {
    if [[ "${cpu}" == 1 ]]; then echo "$(dirname "${python}")/medplay"; else echo medplay; fi
}

# summary.json and the table's lines for the phases that run no training.
finish() {
    local status="$1" note="$2"
    local wall=$(($(date +%s) - started))
    printf '{"phase": "%s", "cpu": %s, "exit_status": %s, "wall_s": %s, "out": "%s", "note": "%s"}\n' \
        "${phase}" "$([[ "${cpu}" == 1 ]] && echo true || echo false)" "${status}" "${wall}" "${out}" "${note}" \
        > "${out}/summary.json"
    echo "gpu_kit ${phase}$([[ "${cpu}" == 1 ]] && echo ' (cpu)'): exit ${status}, ${wall} s, files in ${out}"
    echo "${note}"
    return "${status}"
}

install() {
    local status=0
    if [[ "${cpu}" == 1 ]]; then
        "$(medplay_bin)" version > "${out}/install.log" 2>&1 || status=$?
        cat "${out}/install.log"
        finish "${status}" "nothing to install on the CPU: the project's environment (${python}) is used"
        return
    fi
    local parts="${PARTS:-${repo}/build/wheelhouse/onto-torch-parts}"
    {
        timeout -k 15 "${limit_s}" bash "${parts}/part-01/install.sh" --target "${site}" --python python3 \
            --work "${work}/assembled"
        use_site
        # The project as it is in this working tree now (the wheelhouse's medical_team wheel may be older).
        rm -rf "${work}/project-wheel"
        python3 -m pip wheel -q --no-deps --no-build-isolation --no-index -w "${work}/project-wheel" "${repo}"
        python3 -m pip install -q --no-deps --no-index --upgrade --target "${site}" "${work}"/project-wheel/*.whl
        rm -rf "${repo}/build/lib" "${repo}/build/bdist.linux-x86_64"
        (cd / && "$(medplay_bin)" version)
    } > "${out}/install.log" 2>&1 || status=$?
    tail -n 20 "${out}/install.log"
    finish "${status}" "installed into ${site} (source ${site}/env.sh)"
}

probe() {
    use_site
    local status=0
    if [[ "${cpu}" == 0 ]]; then nvidia-smi > "${out}/nvidia-smi.txt" 2>&1 || true; fi
    # Exit 3 is a refusal with its reasons in the table. The wheelhouse has no flash-attn; the runs use sdpa.
    timeout -k 15 "${limit_s}" "$(medplay_bin)" probe --attention sdpa --output "${out}/probe.json" \
        > "${out}/probe.txt" 2>&1 || status=$?
    cat "${out}/probe.txt"
    finish "${status}" "medplay probe exit status ${status} (3: a refusal, reasons above)"
}

python_phase() {
    use_site
    local args=("${phase}")
    [[ -n "${part}" ]] && args+=("${part}")
    [[ "${cpu}" == 1 ]] && args+=(--cpu)
    timeout -k 15 "$((limit_s + 10))" "${python}" "${repo}/scripts/gpu_kit.py" "${args[@]}" --work "${work}" \
        --out "${out}" --steps "${STEPS:-3}" --limit-s "$((limit_s - 10))" --extra "$(gpu_overrides) ${EXTRA:-}"
}

ladder() {
    use_site
    local script="${repo}/scripts/learning_ladder.sh" status=0
    # The ladder's folder stays in the work folder between calls (each call runs one part); its console goes to OUT.
    # --cpu runs the tiny scale: the same parts at sizes that end in minutes.
    LADDER_DIR="${work}/ladder" MEDPLAY="$(medplay_bin)" timeout -k 15 "${limit_s}" bash "${script}" \
        "$([[ "${cpu}" == 1 ]] && echo tiny || echo gpu)" ${part:+"${part}"} > "${out}/ladder-console.txt" 2>&1 || status=$?
    # The table and the curves, once the compare part has written them.
    cp "${work}/ladder/ladder.json" "${work}/ladder/ladder.md" "${out}/" 2>/dev/null || true
    tail -n 30 "${out}/ladder-console.txt"
    finish "${status}" "scripts/learning_ladder.sh ${part:-} exit status ${status}; its files are in ${out}"
}

# The learning run: the ladder's parts in one call, RL sized to what the limit leaves (BUDGET_S), the files that
# decide in OUT: the console, the comparison, the seconds per part, and one archive of every part's log, the
# evaluations' per-note predictions, the training metrics and their curves.
learn() {
    use_site
    local scale parts status=0
    scale="$([[ "${cpu}" == 1 ]] && echo tiny || echo gpu)"
    case "${part}" in
        "") parts=(prepare sft rl compare) ;;
        sft) parts=(prepare sft) ;;
        rl) parts=(rl compare) ;;
        selfplay) parts=(selfplay compare) ;;
        *) echo "gpu_kit learn: PART is sft, rl, selfplay or nothing" >&2; exit 2 ;;
    esac
    local ladder_dir="${work}/ladder"
    # A run from the start begins in an empty folder; rl and selfplay go on from the SFT weights an earlier call left.
    [[ -z "${part}" || "${part}" == sft ]] && rm -rf "${ladder_dir}"
    LADDER_DIR="${ladder_dir}" MEDPLAY="$(medplay_bin)" BUDGET_S="$((limit_s - 20))" RL_STEPS="${STEPS:-200}" \
        EXTRA="$(gpu_overrides) ${EXTRA:-}" timeout -k 15 "${limit_s}" bash "${repo}/scripts/learning_ladder.sh" \
        "${scale}" "${parts[@]}" > "${out}/learn-console.txt" 2>&1 || status=$?
    cp "${ladder_dir}/ladder.md" "${ladder_dir}/ladder.json" "${ladder_dir}/times.tsv" "${out}/" 2>/dev/null || true
    (cd "${ladder_dir}" && tar -czf "${out}/learn-files.tar.gz" --ignore-failed-read logs report-* \
        ./*/validation/step_*/eval.json ./*/validation/step_*/eval.md ./*/validation/step_*/responses.jsonl \
        ./*/checkpoints/metrics.jsonl ./*/logs ./*/*.log \
        2>/dev/null) || true
    tail -n 40 "${out}/learn-console.txt"
    local trained
    trained="$("${python}" "${repo}/scripts/gpu_kit.py" games "${ladder_dir}" 2>&1 | tail -n 1)"
    finish "${status}" "scripts/learning_ladder.sh ${scale} ${parts[*]}: exit status ${status}; ${trained}"
}

case "${phase}" in
    install) install ;;
    probe) probe ;;
    ladder) ladder ;;
    learn) learn ;;
    *) python_phase ;;
esac
