#!/bin/bash
# On DEVICE (cpu or cuda), with no signal and no timing involved:
#  - the same config run twice ends with the same metrics.jsonl, summary.json
#    (wall-clock fields masked), weights.safetensors and config.ini;
#  - a run resumed from one of its middle checkpoints (copied into a fresh
#    folder) ends with those same files.
# With cuda this is the GPU's repeatability (fixed-order reductions, one
# stream, cuBLAS on one GPU) and its exact --resume. Where no CUDA device is
# visible it exits 77 (skipped) and prints amptrain's reason.
# Usage: repeat.sh AMPTRAIN CONFIG_DIR WORK_DIR [cpu|cuda]
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3 DEV=${4:-cpu}
HERE=$(cd "$(dirname "$0")" && pwd)
case $DEV in cpu | cuda) ;; *) echo "repeat.sh: device '$DEV': expected cpu or cuda" >&2; exit 2 ;; esac
rm -rf "$W" && mkdir -p "$W" || exit 1

# variant NAME CONFIG EVERY MID [--set ...]: checkpoints every EVERY steps,
# the resume starts from step MID.
variant() {
    local name=$1 cfg=$2 every=$3 mid=$4
    shift 4
    local sets=(--set run.device="$DEV" "$@" --set train.checkpoint_every="$every" --set train.keep=1000)
    local a=$W/$name.a b=$W/$name.b c=$W/$name.c
    if ! "$A" train "$cfg" "${sets[@]}" --out "$a" 2>"$a.log"; then
        # no GPU, or a build without CUDA (scripts/sanitize.sh builds so)
        local why="no CUDA device is visible|built without CUDA"
        if [ "$DEV" = cuda ] && grep -Eq "$why" "$a.log"; then
            echo "skipped: $(grep -Em1 "$why" "$a.log")"
            exit 77
        fi
        fail "$name: the first run failed: $(tail -3 "$a.log")"
    fi
    "$A" train "$cfg" "${sets[@]}" --out "$b" 2>"$b.log" ||
        fail "$name: the second run failed: $(tail -3 "$b.log")"
    same_outputs "$a" "$b"
    local ck
    ck=ckpt-$(printf %08d "$mid").amp
    [ -f "$a/checkpoints/$ck" ] || fail "$name: no checkpoint $ck in $a/checkpoints"
    # the folder as an interrupted run leaves it: a checkpoint and the history
    mkdir -p "$c/checkpoints" && cp "$a/checkpoints/$ck" "$c/checkpoints/" && cp "$a/metrics.jsonl" "$c/" || exit 1
    "$A" train "$cfg" "${sets[@]}" --resume "$c" 2>"$c.log" ||
        fail "$name: --resume failed: $(tail -3 "$c.log")"
    grep -q "resuming from .*$ck: step $mid of" "$c.log" || fail "$name: did not resume from step $mid"
    same_outputs "$a" "$c"
    echo "$name on $DEV: two runs identical; resumed from step $mid: identical"
}

# AdamW, FP16 with dynamic scaling (skipped steps, scale growth).
variant fp16_dynamic_adamw "$CONFIGS/tiny_fp16_dynamic.ini" 20 60
# SGD + momentum in FP32, accumulate 3, cosine with warm-up, GELU, evaluations.
variant sgd_fp32_accumulate3 "$HERE/tiny_sgd.ini" 100 100 --set train.steps=300
# BF16 with the hysteresis scaler.
variant bf16_hysteresis "$CONFIGS/tiny_fp16_dynamic.ini" 25 50 --set precision.plugin=bf16 \
    --set scaler.plugin=hysteresis --set train.steps=100
# FP8 (delayed scaling, a short amax history that wraps; current scaling):
# the scales and amax histories travel in the checkpoint, so the resumed
# run logs the same per-layer fp8 telemetry and ends with the same weights.
# SGD + momentum, accumulate 3 (the stats merge over micro-batches).
variant fp8_delayed "$HERE/tiny_sgd.ini" 20 40 --set precision.plugin=fp8 \
    --set precision.amax_history_len=7 --set train.steps=80 --set train.log_every=1
variant fp8_current "$HERE/tiny_sgd.ini" 20 40 --set precision.plugin=fp8 \
    --set precision.recipe=current --set train.steps=80
# NVFP4 (the full recipe): stochastic rounding keyed by (seed, step, tensor,
# element) and the Hadamard signs by (seed, step), so the resumed run draws
# the same bits; 3 micro-batches (each quantize of a step its own key).
variant nvfp4 "$HERE/tiny_sgd.ini" 20 40 --set precision.plugin=nvfp4 --set train.steps=80 \
    --set train.log_every=1
