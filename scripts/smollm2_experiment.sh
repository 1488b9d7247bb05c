#!/usr/bin/env bash
# SmolLM2-135M before SFT, after SFT and after self-play on CPU: docs/results/smollm2-cpu.md.
# Run from the repository root after `make env`:  scripts/smollm2_experiment.sh [WORK_DIR]
# Knobs (environment): SFT_STEPS (30), SFT_ROWS (4 a step), SFT_LR (5e-5), RL_STEPS (20, about an hour on 2 idle cores), EVAL_NOTES (40).
set -euo pipefail
work=${1:-build/smollm2-experiment}
medplay=${MEDPLAY:-.venv/bin/medplay}
sft_steps=${SFT_STEPS:-30} sft_rows=${SFT_ROWS:-4} sft_lr=${SFT_LR:-5e-5}
rl_steps=${RL_STEPS:-20} notes=${EVAL_NOTES:-40}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
mkdir -p "$work/logs"
model=$work/models/smollm2-135m

stage() {  # stage NAME COMMAND...: run one stage, its output in logs/NAME.log, its wall time in times.tsv
  local name=$1 start=$SECONDS; shift
  echo "== $name"
  "$@" >"$work/logs/$name.log" 2>&1
  printf '%s\t%s\n' "$name" "$((SECONDS - start))" | tee -a "$work/times.tsv"
}
evaluate() {  # evaluate MODEL NAME: greedy eval of the fixed subset (the first $notes benchmark notes)
  stage "eval-$2" "$medplay" eval --model "$1" --output "$work/eval-$2" --limit "$notes" \
    --max-new-tokens 256 --backend transformers
}

[ -d "$model" ] || stage prepare "$medplay" model prepare smollm2-135m --output "$model"
stage convert "$medplay" convert --output "$work/data"
evaluate "$model" base
stage sft "$medplay" sft profile=cpu-smoke medplay.output_dir="$work/run" medplay.data_dir="$work/data" \
  medplay.model.path="$PWD/$model" medplay.model.build_tiny=false \
  sft.optim.lr="$sft_lr" sft.optim.lr_warmup_steps_ratio=0.1 sft.trainer.total_training_steps="$sft_steps" \
  sft.data.train_batch_size="$sft_rows" sft.trainer.test_freq=-1
evaluate "$work/run/sft/model" sft
stage selfplay "$medplay" train profile=cpu-smoke medplay.output_dir="$work/run" medplay.data_dir="$work/data" \
  medplay.model.path="$PWD/$work/run/sft/model" medplay.model.build_tiny=false \
  data.max_prompt_length=1536 data.max_response_length=512 actor_rollout_ref.actor.optim.lr=1e-5 \
  actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes=1073741824 \
  trainer.total_training_steps="$rl_steps" trainer.save_freq=1 \
  ray_kwargs.ray_init.runtime_env.env_vars.OMP_NUM_THREADS="\"$OMP_NUM_THREADS\""
evaluate "$work/run/checkpoints" selfplay
stage report "$medplay" report --metrics "$work/run/checkpoints/metrics.jsonl" --output "$work/report"
