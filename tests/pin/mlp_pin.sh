#!/usr/bin/env bash
# The MLP's numbers pinned: five short CPU runs across policies, scalers,
# optimizers, accumulation and a per-layer override print their per-step
# metrics, evaluation and per-layer telemetry, and the SHA-256 of the saved
# weights. Timings, paths and memory sizes are left out; everything else
# must match tests/pin/mlp_pin.expected bit for bit.
#
# The numbers depend on the GEMM library and its kernels, so each expected
# file names the execution path it pins, and the script sets it:
#   mlp_pin.expected           the default path: oneDNN GEMMs on the avx512
#                              path, 2 threads (skipped, 77, without AVX-512)
#   mlp_pin_openblas.expected  OpenBLAS sgemm with the element-wise kernels
#                              of the path in AMPTRAIN_ISA (default avx2): the
#                              numbers from before the CPU speed work, which
#                              every path's kernels must still give
#
# usage: mlp_pin.sh AMPTRAIN [default|openblas] [--write]   (--write
# regenerates that expected file: do it only in a commit that says why the
# numbers moved)
set -euo pipefail
amptrain=$1
which=${2:-default}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
case $which in
default)
    expected=$here/mlp_pin.expected
    for f in avx512f avx512bw avx512vl avx512dq; do
        grep -qw "$f" /proc/cpuinfo || { echo "mlp_pin: no $f here: the default pin is for AVX-512 machines"; exit 77; }
    done
    export AMPTRAIN_ISA=avx512 AMPTRAIN_GEMM=onednn AMPTRAIN_THREADS=2 ;;
openblas)
    expected=$here/mlp_pin_openblas.expected
    export AMPTRAIN_ISA=${AMPTRAIN_ISA:-avx2} AMPTRAIN_GEMM=openblas AMPTRAIN_THREADS=1
    case $AMPTRAIN_ISA in
    avx2) need="avx2 fma f16c" ;;
    avx512) need="avx2 fma f16c avx512f avx512bw avx512vl avx512dq" ;;
    *) need="" ;;
    esac
    for f in $need; do
        grep -qw "$f" /proc/cpuinfo || { echo "mlp_pin: no $f here for the $AMPTRAIN_ISA path"; exit 77; }
    done ;;
*)
    echo "mlp_pin: expected default or openblas, got '$which'" >&2
    exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run_case() { # name config args...
    local name=$1 cfg=$2
    shift 2
    "$amptrain" train "$root/configs/$cfg" --set run.device=cpu --set train.log_every=1 \
        "$@" --out "$work/$name" >/dev/null 2>"$work/$name.log" || {
        cat "$work/$name.log" >&2
        echo "mlp_pin: case $name failed" >&2
        exit 1
    }
    echo "== $name"
    sed -E 's/,"(step_ms|cpu_ms)":[^,}]*//g' "$work/$name/metrics.jsonl"
    grep -E '"(steps|skipped_steps|final_train_loss|test_loss|test_acc|final_scale|params|underflow|overflow|rounded)"|"name": "fc' \
        "$work/$name/summary.json"
    echo "weights $(sha256sum <"$work/$name/weights.safetensors" | cut -d' ' -f1)"
}

{
    run_case fp16_dynamic tiny_fp16_dynamic.ini --set train.steps=30
    run_case fp16_none tiny_fp16_none.ini --set train.steps=20
    run_case bf16_fashion fashion_bf16.ini --set data.train_limit=1024 --set data.test_limit=256 \
        --set train.steps=12 --set train.accumulate=2 --set data.batch_size=32
    run_case fp32_sgd fashion_fp32.ini --set data.train_limit=1024 --set data.test_limit=256 \
        --set train.steps=10 --set data.batch_size=64 --set optim.name=sgd --set optim.lr=0.05
    run_case fp16_override fashion_fp16_dynamic.ini --set data.train_limit=1024 \
        --set data.test_limit=256 --set train.steps=10 --set data.batch_size=64 \
        --set model.activation=gelu --set precision.layer.fc2=f32
} >"$work/digest.txt"

if [ "${3:-}" = "--write" ]; then
    cp "$work/digest.txt" "$expected"
    echo "mlp_pin: wrote $expected"
    exit 0
fi
if ! diff -u "$expected" "$work/digest.txt"; then
    echo "mlp_pin: the MLP's numbers moved (diff above: expected, then now)" >&2
    exit 1
fi
echo "mlp_pin: $(grep -c '^==' "$work/digest.txt") cases match bit for bit ($which: isa $AMPTRAIN_ISA, $AMPTRAIN_GEMM, $AMPTRAIN_THREADS thread(s))"
