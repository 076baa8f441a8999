#!/usr/bin/env bash
# Determinism of the CNN on the CPU (im2col + GEMM convolutions, the
# threaded pooling / batch-norm / conv loops), on short Fashion-MNIST runs
# (6 steps of 64 images) under fp32, fp16 + dynamic scaling and bf16:
#  1. the same path and thread count twice (1 thread, then 2): metrics and
#     weights bit for bit;
#  2. 1 against 2 threads on the default path: final train and test loss
#     within 2e-3 (relative). The CNN's own loops give every output to one
#     thread in a fixed order, but the convolutions take images in chunks
#     sized by the thread count (dW accumulates chunk by chunk), and the GEMM
#     library may split its sums by thread. The script says whether the runs
#     were bit for bit equal as well;
#  3. every instruction-set path this CPU has (generic, avx2, avx512,
#     avx512_bf16) within 2e-3 of the generic path's losses.
# usage: paths.sh AMPTRAIN
set -uo pipefail
A=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/checkpoint/lib.sh" # fail, has_isa, digest, value, losses_close
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

policies=("fp32:--set precision.plugin=fp32 --set scaler.plugin=none"
    "fp16:--set precision.plugin=fp16" "bf16:--set precision.plugin=bf16 --set scaler.plugin=none")
run() { # DIR POLICY_ARGS [ENV=VALUE ...]
    local dir=$1 args=$2
    shift 2
    # shellcheck disable=SC2086 # args are words
    env "$@" "$A" train "$root/configs/cnn_fashion_fp16_dynamic.ini" --set run.device=cpu \
        --set data.train_limit=256 --set data.test_limit=64 --set data.batch_size=64 \
        --set train.steps=6 --set train.log_every=1 $args --out "$dir" >/dev/null 2>"$dir.log" ||
        fail "run $dir ($*) failed: $(tail -3 "$dir.log")"
}
close() { # DIR REF_DIR: final train and test loss within 2e-3 (relative); prints the differences
    losses_close "$1" "$2" 2e-3 test_loss
}

for p in "${policies[@]}"; do
    name=${p%%:*} args=${p#*:}
    for t in 1 2; do
        run "$W/$name.t$t.a" "$args" AMPTRAIN_THREADS=$t
        run "$W/$name.t$t.b" "$args" AMPTRAIN_THREADS=$t
        cmp -s <(digest "$W/$name.t$t.a") <(digest "$W/$name.t$t.b") ||
            fail "$name: two identical runs on $t thread(s) differ"
    done
    d=$(close "$W/$name.t1.a" "$W/$name.t2.a") ||
        fail "$name: 1 and 2 threads differ by $d (relative train, test loss) > 2e-3"
    same="not bit for bit"
    cmp -s <(digest "$W/$name.t1.a") <(digest "$W/$name.t2.a") && same="bit for bit"
    echo "$name: repeatable at 1 and at 2 threads; 1 against 2 threads: $same, losses within $d" \
        "(path $(grep -o '"isa": "[a-z0-9_]*"' "$W/$name.t2.a/summary.json"))"
    run "$W/$name.generic" "$args" AMPTRAIN_ISA=generic AMPTRAIN_THREADS=2
    for isa in avx2 avx512 avx512_bf16; do
        if ! has_isa $isa; then
            echo "$name: no $isa path on this CPU"
            continue
        fi
        run "$W/$name.$isa" "$args" AMPTRAIN_ISA=$isa AMPTRAIN_THREADS=2
        d=$(close "$W/$name.$isa" "$W/$name.generic") ||
            fail "$name: path $isa differs from generic by $d (relative train, test loss) > 2e-3"
        echo "$name: $isa agrees with generic (relative difference in train, test loss: $d)"
    done
done
echo "cnn paths: all checks passed"
