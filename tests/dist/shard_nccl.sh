#!/bin/bash
# [dist] shard = optimizer (ZeRO-1) and shard = gradients (ZeRO-2) over
# NCCL on 2 GPUs: the buckets reduce-scattered with ncclReduceScatter
# (ncclReduce where a bucket has one owner) and the working copies gathered
# with ncclAllGather in device memory; under shard = gradients each bucket
# written into a device slot that is zeroed for the next bucket only after
# NCCL's stream has read it. Under fp32 and bf16, 50 steps of the tiny MLP
# (2953 parameters: padding on 2 ranks; bucket_kb = 1: 3 buckets, so the
# slots are reused every step) with shard = optimizer and gradients against
# shard = none, all on NCCL:
#   - weights.safetensors bit for bit, and every metric but grad_norm (the
#     losses, scales, skips, rounding counts) equal: on 2 ranks every
#     element's sum is one FP32 addition, x0 + x1 = x1 + x0, whether NCCL
#     all-reduces, reduce-scatters or reduces; the optimizer is per element;
#     the owner's rounding into the working dtype is the cast's;
#   - grad_norm within 2e-9 relative: a sharded rank's sum of squares covers
#     its slice and the ranks' partial sums are added, in FP64, so the sum
#     is grouped otherwise (at most (n - 1) 2^-53 = 3.3e-13 relative for n =
#     2953 non-negative terms), and metrics.jsonl prints 10 digits (one unit
#     of the last is at most 1e-9 relative). tiny.ini does not clip, so the
#     norm does not reach the weights;
#   - summary.json's bytes sent per rank counted as on MPI (shard.sh):
#     gradients 4 (n - its slice) sharded, 4 (n - its piece) + 4 its piece
#     unsharded; weights (2 or 4) x its slice on 2 ranks.
#   - under shard = gradients each rank's grads arena is its padded half;
# and with grad_dtype = bf16 (bf16 buckets, the slots' rounded copies) the
# same: shard = gradients against shard = none bitwise.
# Then a sharded bf16 run with checkpoints, cut back to its step-25
# checkpoint and resumed with shard = none, ends with the uninterrupted
# unsharded run's weights and metrics (grad_norm as above).
# Skips (77) without NCCL in the build or with fewer than 2 GPUs.
# usage: shard_nccl.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR HAVE_NCCL
set -u
. "$(dirname "$0")/lib.sh"
MPIRUN=$1 A=$2 HERE=$3 W=$4
need_nccl_gpus "$5" "ZeRO-1 and ZeRO-2 over NCCL"
need_mpirun "$MPIRUN"
command -v python3 >/dev/null || { echo "SKIP: python3 (reads the metrics) not found"; exit 77; }
rm -rf "$W" && mkdir -p "$W" || exit 1
n=2953 np=2
base=(--set run.device=cuda --set model.hidden=47,24 --set train.steps=50 --set train.eval_every=0
      --set dist.bucket_kb=1)
# fp32 and bf16 without a loss scaler: the tiny config less its [scaler] keys
cfg=$W/noscale.ini
sed -e '/^growth_interval/d' -e 's/^plugin = dynamic/plugin = none/' "$HERE/tiny.ini" >"$cfg"

# same_metrics REF RUN WHAT: every metric equal, grad_norm within 2e-9 relative
same_metrics() {
    python3 - "$1/metrics.jsonl" "$2/metrics.jsonl" <<'PY' || fail "$3: other metrics (above)"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
if len(a) != len(b):
    sys.exit(f"{len(a)} against {len(b)} lines")
worst = 0.0
for x, y in zip(a, b):
    for k in set(x) | set(y):
        if k in ("step_ms", "cpu_ms"):
            continue
        if k == "grad_norm" and k in x and k in y:
            d = abs(x[k] - y[k]) / max(abs(x[k]), 1e-30)
            worst = max(worst, d)
            if d > 2e-9:
                sys.exit(f"step {x.get('step')}: grad_norm {x[k]!r} against {y[k]!r}")
        elif x.get(k) != y.get(k):
            sys.exit(f"step {x.get('step')}: {k} {x.get(k)!r} against {y.get(k)!r}")
print(f"grad_norm within {worst:.2g} relative")
PY
}

for prec in fp32 bf16; do
    for shard in none optimizer gradients; do
        mpi $np "$A" train "$cfg" "${base[@]}" --set precision.plugin=$prec --set dist.shard=$shard \
            --out "$W/$prec-$shard" 2>"$W/$prec-$shard.log" ||
            fail "$prec shard=$shard on NCCL failed: $(tail -3 "$W/$prec-$shard.log")"
        grep -q '"dist_transport": "nccl"' "$W/$prec-$shard/summary.json" ||
            fail "$prec shard=$shard did not run over NCCL"
    done
    ref=$W/$prec-none
    for shard in optimizer gradients; do
        run=$W/$prec-$shard
        cmp "$ref/weights.safetensors" "$run/weights.safetensors" ||
            fail "$prec: shard=$shard ends with other weights than shard=none on NCCL"
        norm=$(same_metrics "$ref" "$run" "$prec shard=$shard against shard=none") || exit 1
        wsize=2
        [ $prec = fp32 ] && wsize=4
        sums=$(sent_bytes "$ref" "$run" $n $np $wsize "$prec shard=$shard over NCCL") || exit 1
        echo "2 GPUs $prec over NCCL: shard=$shard == shard=none bitwise (weights, losses); $norm;" \
             "bytes sent a step by both ranks as on MPI (shard=none, shard=$shard): $sums"
    done
    want=$(( ( (n + np - 1) / np * 4 + 255) / 256 * 256 ))
    for ((r = 0; r < np; r++)); do
        g=$(rank_field "$W/$prec-gradients" $r grads)
        [ "$g" = "$want" ] || fail "$prec shard=gradients rank $r: grads $g bytes (want $want)"
    done
done

# grad_dtype = bf16 under shard = gradients: the slots rounded to bf16
for shard in none gradients; do
    mpi $np "$A" train "$cfg" "${base[@]}" --set precision.plugin=bf16 --set dist.grad_dtype=bf16 \
        --set dist.shard=$shard --out "$W/wire-$shard" 2>"$W/wire-$shard.log" ||
        fail "grad_dtype=bf16 shard=$shard on NCCL failed: $(tail -3 "$W/wire-$shard.log")"
done
cmp "$W/wire-none/weights.safetensors" "$W/wire-gradients/weights.safetensors" ||
    fail "grad_dtype=bf16: shard=gradients ends with other weights than shard=none on NCCL"
norm=$(same_metrics "$W/wire-none" "$W/wire-gradients" "grad_dtype=bf16 shard=gradients") || exit 1
echo "2 GPUs grad_dtype=bf16 over NCCL: shard=gradients == shard=none bitwise; $norm"

# a sharded checkpoint resumes unsharded
args=("${base[@]}" --set precision.plugin=bf16 --set train.checkpoint_every=25 --set train.keep=2)
mpi $np "$A" train "$cfg" "${args[@]}" --set dist.shard=optimizer --out "$W/cut" 2>"$W/cut.log" ||
    fail "the sharded run with checkpoints failed: $(tail -3 "$W/cut.log")"
ls "$W/cut/checkpoints/ckpt-00000025.amp" >/dev/null || fail "no checkpoint of step 25"
rm -f "$W/cut/checkpoints/ckpt-00000050.amp" "$W/cut/weights.safetensors"
mpi $np "$A" train "$cfg" "${args[@]}" --set dist.shard=none --resume "$W/cut" 2>"$W/resume.log" ||
    fail "resuming the sharded checkpoint unsharded failed: $(tail -3 "$W/resume.log")"
cmp "$W/bf16-none/weights.safetensors" "$W/cut/weights.safetensors" ||
    fail "25 sharded + 25 unsharded steps on NCCL end with other weights than 50 unsharded steps"
norm=$(same_metrics "$W/bf16-none" "$W/cut" "25 sharded + 25 unsharded steps") || exit 1
echo "2 GPUs bf16: 25 steps shard=optimizer, resumed with shard=none: the 50 unsharded steps' weights; $norm"
