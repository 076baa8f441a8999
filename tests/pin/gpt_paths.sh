#!/usr/bin/env bash
# Determinism of the GPT on the CPU (docs/performance.md "Determinism"), on short runs of
# tests/gpt/tiny_gpt.ini widened so the transformer ops' threaded loops
# really split (2 layers, 2 heads, 64 wide, block 32, batch 8: 16384
# elements per layernorm, 16384 attention scores per layer), under fp32,
# fp16 + dynamic scaling and bf16:
#  1. AMPTRAIN_THREADS=1 twice and AMPTRAIN_THREADS=2 twice: metrics and
#     weights bit for bit within each thread count;
#  2. 1 against 2 threads: the transformer ops and element-wise kernels are
#     thread-count independent by construction (rows per thread, column sums
#     in row order, integer counts), but oneDNN may split a GEMM's sum
#     differently, so the final training and validation losses must agree
#     within 1e-3 (relative); the script says whether the bits were equal;
#  3. every instruction-set path this CPU has against generic: within 2e-3.
# usage: gpt_paths.sh AMPTRAIN
set -uo pipefail
A=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/tests/checkpoint/lib.sh" # fail, has_isa, digest, value, losses_close
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

policies=("fp32:--set precision.plugin=fp32 --set scaler.plugin=none"
    "fp16:--set precision.plugin=fp16 --set scaler.plugin=dynamic"
    "bf16:--set precision.plugin=bf16 --set scaler.plugin=none")
run() { # DIR POLICY_ARGS [ENV=VALUE ...]
    local dir=$1 args=$2
    shift 2
    # shellcheck disable=SC2086 # the policy's --set pairs split on purpose
    env "$@" "$A" train "$root/tests/gpt/tiny_gpt.ini" --set run.device=cpu \
        --set train.steps=12 --set train.checkpoint_every=0 --set train.eval_every=6 \
        --set model.n_layer=2 --set model.n_embd=64 --set model.block_size=32 \
        --set data.batch_size=8 $args --out "$dir" >/dev/null 2>"$dir.log" ||
        fail "run $dir ($*) failed: $(tail -3 "$dir.log")"
}
close() { # DIR REF TOL: final train and validation loss within TOL (relative)
    losses_close "$1" "$2" "$3" val_loss >"$W/diff" ||
        fail "$1 and $2 differ in train/val loss by $(cat "$W/diff") (over $3)"
    cat "$W/diff"
}

for p in "${policies[@]}"; do
    name=${p%%:*} args=${p#*:}
    for t in 1 2; do
        run "$W/$name.t$t.a" "$args" AMPTRAIN_THREADS=$t
        run "$W/$name.t$t.b" "$args" AMPTRAIN_THREADS=$t
        cmp -s <(digest "$W/$name.t$t.a") <(digest "$W/$name.t$t.b") ||
            fail "$name: two runs at $t thread(s) differ"
    done
    same="other bits"
    cmp -s <(digest "$W/$name.t1.a") <(digest "$W/$name.t2.a") && same="the same bits"
    d=$(close "$W/$name.t2.a" "$W/$name.t1.a" 1e-3) || exit 1
    echo "$name: repeatable at 1 and at 2 threads; 1 vs 2 threads: $same (relative difference in train, val loss: $d)"
    run "$W/$name.generic" "$args" AMPTRAIN_ISA=generic
    for isa in avx2 avx512 avx512_bf16; do
        if ! has_isa $isa; then
            echo "$name: no $isa path on this CPU"
            continue
        fi
        run "$W/$name.$isa" "$args" AMPTRAIN_ISA=$isa
        d=$(close "$W/$name.$isa" "$W/$name.generic" 2e-3) || exit 1
        echo "$name: $isa agrees with generic (relative difference in train, val loss: $d)"
    done
done
echo "gpt paths: all checks passed"
