#!/usr/bin/env bash
# The GPT's and the CNN's training numerics pinned, like mlp_pin.sh for the
# MLP: short CPU runs print their per-step metrics, evaluation, per-layer
# rounding telemetry and the SHA-256 of the saved weights (timings, paths
# and memory sizes left out), compared bit for bit with a committed digest.
#
# The committed digests are taken on AMPTRAIN_GEMM=reference (the FP64 GEMM
# of core/backend/cpu_gemm_ref.h), so they hold on every CPU: everything in
# them is amptrain's own arithmetic. `default` runs the library GEMMs the
# machine would pick; its digest holds only on one machine, and serves to
# compare two builds of amptrain side by side (a refactor must keep it):
#
#   model_pin.sh AMPTRAIN gpt|cnn                   check against the committed digest
#   model_pin.sh AMPTRAIN gpt|cnn --write           rewrite it (say why in the commit)
#   model_pin.sh AMPTRAIN gpt|cnn default FILE      write this machine's default-path digest
#   model_pin.sh AMPTRAIN gpt|cnn default FILE --check   compare with one written before
#
# Cases: GPT (tests/gpt/tiny_gpt.ini widened to 2 layers, 2 heads, 64 wide,
# block 32) for 15 steps under fp32, fp16 + dynamic scaling and bf16; the CNN
# of configs/cnn_fashion_fp16_dynamic.ini for 6 steps on 512 images;
# gpt_nvfp4: the same GPT for 8 steps under nvfp4's full recipe (16x16
# weight tiles, the Hadamard transform, stochastic rounding) and under 1x16
# weights, 41 wide so that rows and columns end in short blocks: the NVFP4
# emulation's bits on the ISA path in AMPTRAIN_ISA (77 where the CPU lacks it).
set -euo pipefail
amptrain=$1
model=${2:?usage: model_pin.sh AMPTRAIN gpt|gpt_nvfp4|cnn [--write | default FILE [--check]]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
expected=$here/${model}_pin.expected
mode=check
case ${3:-} in
"") export AMPTRAIN_GEMM=reference ;;
--write) export AMPTRAIN_GEMM=reference mode=write ;;
default)
    expected=${4:?model_pin: default needs a FILE}
    mode=write
    [ "${5:-}" = --check ] && mode=check ;;
*) echo "model_pin: expected --write or default FILE, got '$3'" >&2; exit 2 ;;
esac
. "$here/pin_lib.sh"
pin_start model_pin
# The CNN's convolutions take the batch in chunks whose size follows the
# thread count, and dW accumulates chunk by chunk (backend_cpu_cnn.c), so its
# digest holds at the thread count it was taken at: 2. The GPT's holds at any.
[ "$model" = cnn ] && export AMPTRAIN_THREADS=2
if [ -n "${AMPTRAIN_ISA:-}" ] && [ "$AMPTRAIN_ISA" != generic ]; then
    . "$root/tests/checkpoint/lib.sh" # has_isa
    if ! has_isa "$AMPTRAIN_ISA"; then
        echo "model_pin: this CPU has no $AMPTRAIN_ISA path"
        exit 77
    fi
fi
work=$PIN_WORK
PIN_SUMMARY='"(steps|skipped_steps|final_train_loss|test_loss|test_acc|val_loss|final_scale|params)"|"forward": \{'

gpt_shape=(--set model.n_layer=2 --set model.n_embd=64 --set model.block_size=32
    --set data.batch_size=8 --set train.steps=15 --set train.eval_every=5
    --set train.checkpoint_every=0)
{
    case $model in
    gpt)
        pin_case gpt_fp32 tests/gpt/tiny_gpt.ini "${gpt_shape[@]}" \
            --set precision.plugin=fp32 --set scaler.plugin=none
        pin_case gpt_fp16 tests/gpt/tiny_gpt.ini "${gpt_shape[@]}" \
            --set precision.plugin=fp16 --set scaler.plugin=dynamic
        pin_case gpt_bf16 tests/gpt/tiny_gpt.ini "${gpt_shape[@]}" \
            --set precision.plugin=bf16 --set scaler.plugin=none ;;
    gpt_nvfp4)
        nv_shape=(--set model.n_layer=2 --set model.n_head=1 --set model.n_embd=41
            --set model.block_size=24 --set data.batch_size=5 --set train.steps=8
            --set train.eval_every=4 --set train.checkpoint_every=0
            --set precision.plugin=nvfp4 --set scaler.plugin=none)
        pin_case gpt_nvfp4 tests/gpt/tiny_gpt.ini "${nv_shape[@]}" \
            --set precision.weight_blocks=2d --set precision.hadamard=1 \
            --set precision.stochastic_rounding=1
        pin_case gpt_nvfp4_1d tests/gpt/tiny_gpt.ini "${nv_shape[@]}" \
            --set precision.weight_blocks=1d --set precision.hadamard=1 \
            --set precision.stochastic_rounding=1 ;;
    cnn)
        pin_case cnn_fp16 configs/cnn_fashion_fp16_dynamic.ini --set train.steps=6 \
            --set data.train_limit=512 --set data.test_limit=256 --set data.batch_size=64 ;;
    *) echo "model_pin: expected gpt, gpt_nvfp4 or cnn, got '$model'" >&2; exit 2 ;;
    esac
} >"$work/digest.txt"
how="AMPTRAIN_GEMM=${AMPTRAIN_GEMM:-default}, $AMPTRAIN_THREADS thread(s)"
if [ $mode = write ]; then
    cp "$work/digest.txt" "$expected"
    echo "model_pin: wrote $expected ($how)"
    exit 0
fi
pin_same "$expected" "$work/digest.txt" "$model" "$how"
echo "model_pin: $(grep -c '^==' "$work/digest.txt") $model case(s) match bit for bit ($how)"
