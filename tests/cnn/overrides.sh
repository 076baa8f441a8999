#!/usr/bin/env bash
# Per-layer and per-op-class precision overrides reach the CNN, read from
# the per-layer telemetry of 2 fp16 steps on a Fashion-MNIST subset:
#   default             conv1 rounds its input, weights, output and gradients
#   layer.conv1 = f32   conv1 rounds nothing (forward and gradient counts 0),
#                       conv2 still rounds
#   op.conv = f32       every conv keeps FP32 inputs and weights: conv1's
#                       forward count is only its output's, fewer than the
#                       default's but not 0
# usage: overrides.sh AMPTRAIN
set -euo pipefail
amptrain=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# rounded NAME DIR: "<forward rounded> <grad rounded>" of layer NAME
rounded() {
    sed -n "s/.*\"name\": \"$1\", \"forward\": {[^}]*\"rounded\": \([0-9]*\)}, \"grad\": {[^}]*\"rounded\": \([0-9]*\)}.*/\1 \2/p" \
        "$2/summary.json"
}
run() { # name args...
    local name=$1
    shift
    "$amptrain" train "$root/configs/cnn_fashion_fp16_dynamic.ini" --set run.device=cpu \
        --set data.train_limit=256 --set data.test_limit=64 --set data.batch_size=32 \
        --set train.steps=2 "$@" --out "$work/$name" >"$work/$name.log" 2>&1 || {
        cat "$work/$name.log" >&2
        echo "overrides: run $name failed" >&2
        exit 1
    }
}
fail=0
check() { # condition message
    if eval "$1"; then echo "ok   $2"; else echo "FAIL $2" >&2; fail=1; fi
}
run default
run layer --set precision.layer.conv1=f32
run op --set precision.op.conv=f32
read -r d_f d_g <<<"$(rounded conv1 "$work/default")"
read -r l_f l_g <<<"$(rounded conv1 "$work/layer")"
read -r l2_f l2_g <<<"$(rounded conv2 "$work/layer")"
read -r o_f o_g <<<"$(rounded conv1 "$work/op")"
echo "conv1 rounded (forward, grad): default $d_f $d_g; layer.conv1=f32 $l_f $l_g; op.conv=f32 $o_f $o_g; conv2 under layer.conv1=f32: $l2_f $l2_g"
check '[ "$d_f" -gt 0 ] && [ "$d_g" -gt 0 ]' "fp16: conv1 rounds in both directions"
check '[ "$l_f" -eq 0 ] && [ "$l_g" -eq 0 ]' "layer.conv1 = f32: conv1 rounds nothing"
check '[ "$l2_f" -gt 0 ]' "layer.conv1 = f32: conv2 still rounds"
check '[ "$o_f" -gt 0 ] && [ "$o_f" -lt "$d_f" ]' "op.conv = f32: conv1 rounds its output only"
# the input (32x784 pixels a step, most nonzero) and the 320 weights are the difference
check '[ $((d_f - o_f)) -gt $((2 * 320)) ]' "op.conv = f32: conv1's input and weights are no longer rounded"
exit $fail
