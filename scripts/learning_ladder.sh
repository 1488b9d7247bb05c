#!/usr/bin/env bash
# The learning ladder: from one base model, SFT -> RL on ground truth (assessor only, vanilla games, groups) ->
# self-play from the same SFT weights (joint, groups). Each RL rung's trainer scores the benchmark notes greedily in
# its own validation (the SFT weights before its first step, the trained weights after its last: no evaluation
# process of their own); `medplay eval --responses` scores those answers as `medplay eval` scores a model's,
# `medplay compare` writes ladder.json and ladder.md (Wilson intervals, McNemar p-values) and `medplay report` the
# training curves of the RL rungs. docs/results/ladder-cpu.md is its cpu run.
#
# Run from the repository root after `make env`:
#   scripts/learning_ladder.sh SCALE [PART...]
#   SCALE  tiny: the tiny random model and tiny sizes, a few minutes (tests/e2e/test_learning_ladder.py runs it)
#          cpu:  a real model (LADDER_MODEL) on 2 CPU cores (SmolLM2-135M: about 90 minutes on an idle machine)
#          gpu:  a real model (LADDER_MODEL) on one GPU: the whole 597-note benchmark, a full SFT epoch, 256 games a step
#   PART   prepare sft rl selfplay compare (default: all of them, in order).
#          A part stops by itself after PART_TIMEOUT_S seconds (gpu: 480; 0 = no limit) and saves; running the
#          same part again resumes it (verl resumes from the last checkpoint). `compare` takes the rungs evaluated.
#          An RL part also stops after a step at which a collapse alarm fired (docs/game.md, "Collapse monitors";
#          medplay.monitors.action=stop) and scores the benchmark on that step's weights before it ends.
# BUDGET_S (0 = none): the seconds the whole command may take. An RL part then stops (SIGTERM: it ends its current
#          step, saves, scores the benchmark and ends) STOP_RESERVE_S before the budget's end, the time for that
#          and the comparison. Its step cap (RL_STEPS) is only a ceiling then.
# EXTRA    more Hydra overrides for the sft and RL parts, space-separated (the GPU kit's attention settings).
# LADDER_MODEL  the real model of the cpu and gpu scales, one `medplay model prepare` knows: smollm2-135m (default,
#          SmolLM2-135M-Instruct) or gemma3-270m (Gemma 3 270M, the base model of the judge's family).
# Output: $LADDER_DIR (default build/ladder-SCALE): ladder.json, ladder.md, report-RUNG/, logs/,
#         times.tsv (seconds per part) and each rung's run folder (its benchmark scores in RUNG/validation/step_N/).
set -euo pipefail
usage="usage: scripts/learning_ladder.sh tiny|cpu|gpu [prepare|sft|rl|selfplay|compare ...]"
scale=${1:?$usage}
shift
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(prepare sft rl selfplay compare)
work=$(realpath -m "${LADDER_DIR:-build/ladder-$scale}")  # absolute: the runs change directory
model_name=${LADDER_MODEL:-smollm2-135m}
medplay=${MEDPLAY:-.venv/bin/medplay}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}

# Sizes per scale. RL rungs: ROWS seed rows a step x GROUP games each, optimizer updates on MINI rows at a time;
# both rungs run the same steps and rate.
case $scale in
  tiny)
    profile=cpu-smoke model=$work/sft-run/tiny-qwen3 prepare_model=false part_timeout=0
    sft=(sft.trainer.total_training_steps=2 sft.data.train_max_samples=16 sft.data.val_max_samples=8 sft.trainer.test_freq=2)
    notes=4
    rows=2 group=2 mini=2 steps=2 response=16 lr=1e-3
    run=(trainer.save_freq=1)
    ;;
  cpu)
    profile=cpu-smoke model=$work/models/$model_name prepare_model=true part_timeout=0
    sft=(sft.optim.lr=5e-5 sft.optim.lr_warmup_steps_ratio=0.1 sft.trainer.total_training_steps=30
         sft.data.train_batch_size=4 sft.trainer.test_freq=-1)
    notes=40
    rows=2 group=4 mini=2 steps=${RL_STEPS:-8} response=256 lr=1e-5
    run=(data.max_prompt_length=1536 trainer.save_freq=1
         actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes=1073741824
         "ray_kwargs.ray_init.runtime_env.env_vars.OMP_NUM_THREADS=\"$OMP_NUM_THREADS\"")
    ;;
  gpu)
    profile=80g model=$work/models/$model_name prepare_model=true part_timeout=480
    # A 135 M or 270 M model trains in full on any GPU profile's card: no LoRA, fp32 weights (80g is LoRA over a bf16 base).
    full=(actor_rollout_ref.model.lora_rank=0 actor_rollout_ref.actor.fsdp_config.model_dtype=fp32)
    sft=("${full[@]}" sft.optim.lr=5e-5 sft.optim.lr_warmup_steps_ratio=0.1 sft.trainer.total_epochs=1
         sft.trainer.test_freq=-1)
    # Eager vLLM: compiling and capturing CUDA graphs costs more start-up than a 135 M model's decoding gains in a
    # run of minutes. The rollout decodes a whole step's 256 games at once.
    notes=all
    # Four optimizer updates a step (mini-batches of 8 seeds x 8 games); epochs enough for any step cap (18 steps
    # make one pass over the 576 train seeds).
    rows=32 group=8 mini=8 steps=${RL_STEPS:-30} response=512 lr=1e-5
    # The disk floor keeps room for one of this model's checkpoints (fp32 weights, Adam's moments, the Hugging Face
    # copy: about 6 GiB at 270 M), not the 80g profile's 60 GiB of a 4B model's.
    run=("${full[@]}" trainer.save_freq=5 trainer.total_epochs=20 data.max_prompt_length=2048
         actor_rollout_ref.rollout.enforce_eager=true actor_rollout_ref.rollout.max_num_seqs=256
         medplay.resources.disk_floor_gib=8)
    ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
part_timeout=${PART_TIMEOUT_S:-$part_timeout}
budget=${BUDGET_S:-0}
stop_reserve=${STOP_RESERVE_S:-90}
stop_grace=60  # medplay.stop_grace_s of the RL parts
read -r -a extra <<<"${EXTRA:-}"
build_tiny=false
[ "$scale" != tiny ] || build_tiny=true
sft_model=$work/sft-run/sft/model

mkdir -p "$work/logs"
timed() {  # timed NAME COMMAND...: one part, its output in logs/NAME.log, its seconds in times.tsv
  local name=$1 start=$SECONDS code=0 limit=${limit_override:-$part_timeout}
  shift
  echo "== $name${limit_override:+ (stops after ${limit_override} s to keep the budget)}"
  if [ "$limit" -gt 0 ]; then
    # After SIGTERM a training part has its stop grace to save and end, then a margin before SIGKILL.
    timeout -k "$((stop_grace + 30))" "$limit" "$@" >"$work/logs/$name.log" 2>&1 || code=$?
  else
    "$@" >"$work/logs/$name.log" 2>&1 || code=$?
  fi
  printf '%s\t%s\t%s\n' "$name" "$((SECONDS - start))" "$code" | tee -a "$work/times.tsv"
  # A budgeted RL part stopped by its limit (timeout's 124, or 137 when it outlived its grace) counts as done
  # when it left a checkpoint with Hugging Face weights; `compare` takes its last validation, if it wrote one.
  if [ -n "${limit_override:-}" ] && { [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; }; then
    if compgen -G "$work/$name/checkpoints/global_step_*/actor/huggingface/*.safetensors" >/dev/null; then
      [ "$code" -eq 124 ] || echo "$name: stopped at the budget, ended by SIGKILL after its grace; its checkpoints are kept" >&2
      code=0
    fi
  fi
  if [ "$code" -ne 0 ]; then
    echo "$name: exit $code; its log: $work/logs/$name.log (a part stopped at its time limit resumes when run again)" >&2
    tail -20 "$work/logs/$name.log" >&2
    exit "$code"
  fi
}
rl() {  # rl RUNG VALIDATE_FIRST OVERRIDES...: groups of $group games per seed row from the SFT weights
  local rung=$1 validate_first=$2 limit_override=
  shift 2
  if [ "$budget" -gt 0 ]; then
    limit_override=$((budget - SECONDS - stop_reserve))
    if [ "$limit_override" -lt "$stop_reserve" ]; then
      echo "$rung: only ${limit_override} s of BUDGET_S=$budget left for training after ${SECONDS} s: not started" >&2
      exit 1
    fi
  fi
  # The benchmark notes are the validation set, scored greedily before the first step (VALIDATE_FIRST) and after
  # the last, however the run ends (the step cap, the budget's SIGTERM, a collapse alarm). A collapse alarm stops
  # the rung (monitors.action=stop): steps after a collapse would spend the budget on a degenerate policy.
  timed "$rung" "$medplay" train profile="$profile" medplay.output_dir="$work/$rung" medplay.data_dir="$work/data" \
    medplay.model.path="$sft_model" medplay.model.build_tiny=false medplay.judge.backend=rules \
    medplay.monitors.action=stop \
    medplay.stop_grace_s="$stop_grace" data.train_batch_size="$rows" actor_rollout_ref.rollout.n="$group" \
    actor_rollout_ref.actor.ppo_mini_batch_size="$mini" data.max_response_length="$response" \
    actor_rollout_ref.actor.optim.lr="$lr" trainer.total_training_steps="$steps" \
    data.val_files="$work/data/benchmark.parquet" \
    trainer.val_before_train="$validate_first" trainer.test_freq="$steps" \
    "${run[@]}" "${extra[@]}" "$@"
}
validation() {  # validation RUNG first|last: the folder of the rung's validation at step 0, or at its last step > 0
  local folder step found=
  for folder in "$work/$1"/validation/step_*; do
    [ -d "$folder" ] || continue
    step=${folder##*_}
    if [ "$2" = first ]; then
      [ "$step" -ne 0 ] || found=$folder
    elif [ "$step" -gt 0 ] && { [ -z "$found" ] || [ "$step" -gt "${found##*_}" ]; }; then
      found=$folder
    fi
  done
  echo "$found"
}

for part in "${parts[@]}"; do
  case $part in
    prepare)
      if $prepare_model && [ ! -f "$model/config.json" ]; then
        timed prepare-model "$medplay" model prepare "$model_name" --output "$model"
      fi
      notes_option=()
      [ "$notes" = all ] || notes_option=(--benchmark-notes "$notes")
      timed convert "$medplay" convert --output "$work/data" "${notes_option[@]}"
      ;;
    sft)
      timed sft "$medplay" sft profile="$profile" medplay.output_dir="$work/sft-run" medplay.data_dir="$work/data" \
        medplay.model.path="$model" medplay.model.build_tiny="$build_tiny" "${sft[@]}" "${extra[@]}"
      ;;
    rl) rl rl true medplay.training_mode=assessor medplay.adversarial_games=false ;;
    selfplay) rl selfplay false medplay.training_mode=joint medplay.adversarial_games=true ;;
    compare)
      # sft: the RL rung's validation before its first step; each RL rung: its validation after its last step.
      evals=()
      for rung in sft rl selfplay; do
        folder=$(if [ "$rung" = sft ]; then validation rl first; else validation "$rung" last; fi)
        if [ -z "$folder" ]; then  # a rung not run is left out; one run without its validation is said
          [ ! -d "$work/${rung/sft/rl}" ] || echo "compare: no benchmark validation of $rung in $work" >&2
          continue
        fi
        [ -f "$folder/eval.json" ] || timed "score-$rung" "$medplay" eval --responses "$folder" --output "$folder"
        evals+=(--eval "$rung=$folder")
      done
      timed compare "$medplay" compare "${evals[@]}" --output "$work" --stem ladder
      for rung in rl selfplay; do
        [ ! -f "$work/$rung/checkpoints/metrics.jsonl" ] || timed "report-$rung" "$medplay" report \
          --metrics "$work/$rung/checkpoints/metrics.jsonl" --output "$work/report-$rung"
      done
      cat "$work/ladder.md"
      ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
