#!/bin/bash
# A run stopped by a real SIGTERM/SIGINT (it finishes the step, writes a
# checkpoint and exits 143/130) and continued with --resume ends with the
# same metrics.jsonl, summary.json (wall-clock fields masked),
# weights.safetensors and config.ini as the same run left alone.
# Variants: AdamW + FP16 dynamic scaling, SGD + momentum in FP32 with
# accumulate 3 and a cosine schedule, FP16 dynamic with accumulate 2.
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
HERE=$(cd "$(dirname "$0")" && pwd)

variant() {
    local name=$1 sig=$2 cfg=$3
    shift 3
    local ref="$W/$name.ref" run="$W/$name.run"
    "$A" train "$cfg" "$@" --set train.checkpoint_every=50 --out "$ref" 2>"$W/$name.ref.log" ||
        fail "$name: the uninterrupted run failed: $(tail -3 "$W/$name.ref.log")"
    "$A" train "$cfg" "$@" --set train.checkpoint_every=50 --out "$run" 2>"$W/$name.stop.log" &
    local pid=$!
    wait_for_ckpt "$run" "$pid" || fail "$name: no checkpoint appeared"
    # a random moment, short enough that a fast machine is still mid-run
    sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
    kill -"$sig" "$pid"
    wait "$pid"
    local rc=$? want=$([ "$sig" = INT ] && echo 130 || echo 143)
    [ "$rc" = 0 ] && fail "$name: the run finished before SIG$sig arrived; raise train.steps"
    [ "$rc" = "$want" ] || fail "$name: exit $rc after SIG$sig, expected $want: $(tail -3 "$W/$name.stop.log")"
    grep -Eq "stopped by SIG$sig after step [0-9]+ of [0-9]+; checkpoint .*ckpt-[0-9]{8}\.amp" \
        "$W/$name.stop.log" || fail "$name: no 'stopped by SIG$sig' message: $(tail -3 "$W/$name.stop.log")"
    grep -q -- "--resume $run" "$W/$name.stop.log" || fail "$name: the message does not say how to resume"
    no_outputs "$run"
    local at
    at=$(sed -nE 's/.*after step ([0-9]+) of.*/\1/p' "$W/$name.stop.log")
    [ -f "$run/checkpoints/ckpt-$(printf %08d "$at").amp" ] ||
        fail "$name: stopped at step $at but there is no checkpoint of that step"
    "$A" train "$cfg" "$@" --set train.checkpoint_every=50 --resume "$run" 2>"$W/$name.resume.log" ||
        fail "$name: --resume failed: $(tail -3 "$W/$name.resume.log")"
    grep -q "resuming from .*ckpt-$(printf %08d "$at").amp: step $at of" "$W/$name.resume.log" ||
        fail "$name: did not resume from step $at"
    same_outputs "$ref" "$run"
    echo "$name: SIG$sig at step $at, resumed: outputs identical to the uninterrupted run"
}

variant adamw_fp16_dynamic TERM "$CONFIGS/tiny_fp16_dynamic.ini" --set run.device=cpu \
    --set train.steps=3000
variant sgd_fp32_accumulate3 TERM "$HERE/tiny_sgd.ini"
variant fp16_dynamic_accumulate2 INT "$CONFIGS/tiny_fp16_dynamic.ini" --set run.device=cpu \
    --set train.steps=1500 --set train.accumulate=2
