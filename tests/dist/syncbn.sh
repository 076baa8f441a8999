#!/bin/bash
# [dist] sync_batchnorm: the CNN (fp32, two batch-norm layers) on 2 ranks x
# batch B trains as one process x 2B: after 4 SGD steps with momentum every
# tensor, the running statistics included, is within 1e-6 of the one-process
# run (max |w2 - w1| / max(1, max |w1|); only the order of FP32/FP64
# additions differs), and the replica check after every step finds the
# running statistics the same bits on both ranks. With sync_batchnorm =
# false each rank normalises its own 16 rows: the same comparison must fail.
# With DEVICE cuda (label gpu) the same on 2 GPUs over NCCL, cuDNN held to
# its deterministic algorithms; it skips (77) without NCCL in the build or
# with fewer than 2 GPUs.
# usage: syncbn.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR [DEVICE HAVE_NCCL]
set -u
. "$(dirname "$0")/lib.sh"
MPIRUN=$1 A=$2 HERE=$3 W=$4 DEVICE=${5:-cpu}
need_mpirun "$MPIRUN"
[ "$DEVICE" = cuda ] && need_nccl_gpus "${6:-}" "sync batch norm over NCCL"
command -v python3 >/dev/null || { echo "SKIP: python3 (reads the weights) not found"; exit 77; }
rm -rf "$W" && mkdir -p "$W" || exit 1
root=$(cd "$HERE/../.." && pwd)
cfg=$root/configs/cnn_fashion_fp32.ini
# SGD: AdamW divides by sqrt(v), which turns the conv biases' gradients (zero
# in exact arithmetic, as batch norm takes the mean out; rounding noise here)
# into steps of +-lr whatever their size, so no summation order survives it.
# A small lr and few steps: an ulp's difference can flip a ReLU or max-pool
# decision somewhere in the batch, and each flip is a jump of order lr / rows
# that later steps amplify, at a step that depends on the GEMM kernels the
# CPU gets (seen at lr 0.01: 20 steps end 5.4e-7 apart on an AVX-512 CPU and
# 1.5e-5 on an AVX2-only AMD EPYC, 10 steps 3e-8 there). After 4 steps the
# AVX2 EPYC ends at most 6e-8 apart over seeds 1 to 3, and 4e-3 or more with
# each rank's own statistics: the bound sits between the two.
args=(--set run.device=$DEVICE --set run.deterministic=true --set run.seed=1 --set data.train_limit=1024 --set data.test_limit=64
      --set train.steps=4 --set train.eval_every=0 --set optim.name=sgd --set optim.lr=0.01
      --set optim.momentum=0.9 --set optim.weight_decay=0)
close() { python3 "$HERE/weights_close.py" "$1/weights.safetensors" "$2/weights.safetensors" 1e-6; }

"$A" train "$cfg" "${args[@]}" --set data.batch_size=32 --out "$W/one" 2>"$W/one.log" ||
    fail "one process x 32 failed: $(tail -3 "$W/one.log")"
# sync_batchnorm is on by default; check_every = 1 compares every rank's
# master array (batch norm's running statistics are in it) after each step
mpi 2 "$A" train "$cfg" "${args[@]}" --set data.batch_size=16 --set dist.check_every=1 \
    --out "$W/sync" 2>"$W/sync.log" || fail "2 ranks x 16 with sync batch norm failed: $(tail -3 "$W/sync.log")"
grep -q '^sync_batchnorm = true' "$W/sync/config.ini" ||
    fail "the run's config.ini does not record sync_batchnorm = true"
close "$W/sync" "$W/one" >"$W/sync.cmp" ||
    fail "2 ranks x 16 with sync batch norm is not within 1e-6 of one process x 32: $(cat "$W/sync.cmp")"
echo "sync: $(tail -1 "$W/sync.cmp"); running statistics the same bits on both ranks after every step"

mpi 2 "$A" train "$cfg" "${args[@]}" --set data.batch_size=16 --set dist.sync_batchnorm=false \
    --out "$W/off" 2>"$W/off.log" || fail "2 ranks x 16 without sync batch norm failed: $(tail -3 "$W/off.log")"
if close "$W/off" "$W/one" >"$W/off.cmp"; then
    fail "without sync batch norm 2 ranks x 16 still match one process x 32: the test cannot tell"
fi
echo "off: $(tail -1 "$W/off.cmp") (each rank's own statistics)"
