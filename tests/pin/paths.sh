#!/usr/bin/env bash
# Determinism, as docs/performance.md "Determinism" states it, on short CPU runs of the
# tiny task under fp32, fp16 + dynamic scaling and bf16:
#  1. the same path and thread count twice: metrics and weights bit for bit;
#  2. at 1, 2 and 3 threads: bit for bit on the reference GEMM
#     (AMPTRAIN_GEMM=reference, every bit amptrain's own: the element-wise
#     kernels and that GEMM are thread-count independent by construction);
#     on the default path's library GEMMs (oneDNN), whose sums may split by
#     thread count on some CPU, the final train and test loss within 1e-3
#     (relative) of 2 threads', and the script says whether the bits were
#     equal too;
#  3. every instruction-set path this CPU has (generic, avx2, avx512,
#     avx512_bf16): final training and test loss within 2e-3 (relative) of
#     the generic path's. Each path's GEMMs are checked against FP64 in
#     test_cpu_gemm; this is the end-to-end spread;
#  4. a run stopped by SIGTERM and resumed with another thread count warns
#     that its bits will differ, and finishes.
# usage: paths.sh AMPTRAIN
set -uo pipefail
A=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/tests/checkpoint/lib.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# (the config's dynamic scaler for all three: its keys are in the file)
policies=("fp32:--set precision.plugin=fp32" "fp16:--set precision.plugin=fp16"
    "bf16:--set precision.plugin=bf16")

run() { # DIR POLICY_ARGS [ENV=VALUE ...]
    local dir=$1 args=$2
    shift 2
    env "$@" "$A" train "$root/configs/tiny_fp16_dynamic.ini" --set run.device=cpu \
        --set train.steps=40 --set train.log_every=1 --set model.hidden=96,64 \
        --set data.batch_size=64 $args --out "$dir" >/dev/null 2>"$dir.log" ||
        fail "run $dir ($*) failed: $(tail -3 "$dir.log")"
}

for p in "${policies[@]}"; do
    name=${p%%:*} args=${p#*:}
    run "$W/$name.a" "$args" AMPTRAIN_THREADS=2
    run "$W/$name.b" "$args" AMPTRAIN_THREADS=2
    cmp -s <(digest "$W/$name.a") <(digest "$W/$name.b") || fail "$name: two identical runs differ"
    for t in 2 1 3; do
        run "$W/$name.ref$t" "$args" AMPTRAIN_THREADS=$t AMPTRAIN_GEMM=reference
        cmp -s <(digest "$W/$name.ref2") <(digest "$W/$name.ref$t") ||
            fail "$name: $t thread(s) give other bits than 2 on the reference GEMM"
    done
    same=""
    for t in 1 3; do
        run "$W/$name.t$t" "$args" AMPTRAIN_THREADS=$t
        d=$(losses_close "$W/$name.t$t" "$W/$name.a" 1e-3 test_loss) ||
            fail "$name: $t thread(s) differ from 2 by $d (relative train, test loss) on the default path, over 1e-3"
        cmp -s <(digest "$W/$name.a") <(digest "$W/$name.t$t") && same="$same $t"
    done
    echo "$name: repeatable; the reference GEMM identical at 1, 2 and 3 threads; the default path" \
        "($(grep -o '"isa": "[a-z0-9_]*"' "$W/$name.a/summary.json")) within 1e-3 at 1 and 3 threads," \
        "bit for bit at:${same:- none}"
    run "$W/$name.generic" "$args" AMPTRAIN_ISA=generic
    ref_train=$(value "$W/$name.generic" final_train_loss) ref_test=$(value "$W/$name.generic" test_loss)
    for isa in avx2 avx512 avx512_bf16; do
        if ! has_isa $isa; then
            echo "$name: no $isa path on this CPU"
            continue
        fi
        run "$W/$name.$isa" "$args" AMPTRAIN_ISA=$isa
        tr=$(value "$W/$name.$isa" final_train_loss) te=$(value "$W/$name.$isa" test_loss)
        awk -v a="$tr" -v b="$ref_train" -v c="$te" -v d="$ref_test" 'BEGIN {
            ea = (a > b ? a - b : b - a) / (b > 1 ? b : 1); ec = (c > d ? c - d : d - c) / (d > 1 ? d : 1);
            printf "  %.3g %.3g\n", ea, ec; exit !(ea <= 2e-3 && ec <= 2e-3) }' >"$W/diff" ||
            fail "$name: path $isa ends at train loss $tr / test loss $te, generic at $ref_train / $ref_test (over 2e-3)"
        echo "$name: $isa agrees with generic (relative difference in train, test loss:$(cat "$W/diff"))"
    done
done

# a resume on another thread count says so
run_dir=$W/resume
AMPTRAIN_THREADS=2 "$A" train "$root/configs/tiny_fp16_dynamic.ini" --set run.device=cpu \
    --set train.steps=4000 --set train.checkpoint_every=50 --out "$run_dir" >/dev/null 2>"$W/stop.log" &
pid=$!
wait_for_ckpt "$run_dir" "$pid" || fail "no checkpoint appeared"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 143 ] || fail "exit $rc after SIGTERM, expected 143: $(tail -3 "$W/stop.log")"
AMPTRAIN_THREADS=1 "$A" train "$root/configs/tiny_fp16_dynamic.ini" --set run.device=cpu \
    --set train.steps=4000 --set train.checkpoint_every=50 --resume "$run_dir" >/dev/null 2>"$W/resume.log" ||
    fail "the resume failed: $(tail -3 "$W/resume.log")"
grep -q "resuming with threads 1 where the checkpoint ran threads 2" "$W/resume.log" ||
    fail "no warning about the thread count: $(grep -i warn "$W/resume.log" | head -3)"
echo "resume on 1 thread of a 2-thread run: warned, finished"
echo "paths: all checks passed"
