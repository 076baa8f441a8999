#!/usr/bin/env bash
# The MLP's training numerics pinned: five short CPU runs across policies,
# scalers, optimizers, accumulation and a per-layer override print their
# per-step metrics, evaluation and per-layer telemetry, and the SHA-256 of
# the saved weights (timings, paths and memory sizes left out).
#
# A pin holds only bits amptrain computes itself. The GEMM libraries
# (OpenBLAS, oneDNN) pick their kernels by CPU model, so their last bits
# differ between an Intel and an AMD CPU, or an AVX2 and an AVX-512 one.
# So the pin is taken on AMPTRAIN_GEMM=reference (core/backend/
# cpu_gemm_ref.h: each output one FP64 sum of exact products, k ascending,
# rounded once to FP32), and the libraries are checked against it:
#
#   reference  AMPTRAIN_GEMM=reference: the digest must equal
#              tests/pin/mlp_pin.expected bit for bit, on the path in
#              AMPTRAIN_ISA (generic, avx2, avx512: every path's element-
#              wise kernels give the scalar functions' bits) and any thread
#              count (AMPTRAIN_THREADS, default 2). Everything in it is
#              amptrain's own arithmetic on the same inputs on every CPU:
#              the losses, gradient norms, scales, skips, every rounding
#              count, the weights' hash.
#   openblas,  the library GEMM on the path in AMPTRAIN_ISA: every step's
#   onednn     loss and gradient norm, and each case's final train loss,
#              test loss and test accuracy, within the tolerances below (per
#              policy) of mlp_pin.expected's (the FP64-reference run); the learning
#              rate and the step/skip structure equal. Rounding counts and
#              the weights' hash depend on the library's last bits and are
#              not compared.
#
# usage: mlp_pin.sh AMPTRAIN [reference|openblas|onednn] [--write]
# (--write regenerates mlp_pin.expected from a reference run: do it only in
# a commit that says why the numbers moved)
set -euo pipefail
amptrain=$1
which=${2:-reference}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
expected=$here/mlp_pin.expected
. "$root/tests/checkpoint/lib.sh" # has_isa

# Library GEMMs against the FP64 reference, relative, per policy (the case
# name's prefix). Measured on an AMD EPYC (Zen 5) with OpenBLAS (Haswell
# kernels) on every path and oneDNN on avx2, avx512 and avx512_bf16, largest
# over the paths: fp32 loss 1.1e-8, grad_norm 1.1e-8; fp16 6.5e-5, 1.5e-4;
# bf16 6.6e-4, 3.7e-3; test accuracy equal. An FP32 GEMM is within
# (k + 2) 2^-24 sum|a b| of FP64 (test_cpu_gemm); a 16-bit policy turns a
# last-bit difference into a whole 16-bit step now and then (2^-11 for
# fp16, 2^-8 for bf16), and training carries it on for up to 30 steps. The
# bounds are 10-100x the measured spread; a wrong kernel, a lost optimizer
# step or another scaler decision misses them by far.
#                 loss  grad_norm
TOLERANCES="fp32 1e-6 1e-6
            fp16 1e-3 2e-3
            bf16 1e-2 4e-2"
ACC_TOL=0.008 # absolute: test accuracy (2 of the 256 Fashion-MNIST test images)

case $which in
reference | openblas | onednn) export AMPTRAIN_GEMM=$which ;;
*)
    echo "mlp_pin: expected reference, openblas or onednn, got '$which'" >&2
    exit 2 ;;
esac
. "$here/pin_lib.sh"
pin_start mlp_pin
if [ -n "${AMPTRAIN_ISA:-}" ] && [ "$AMPTRAIN_ISA" != generic ] && ! has_isa "$AMPTRAIN_ISA"; then
    echo "mlp_pin: this CPU has no $AMPTRAIN_ISA path"
    exit 77
fi
work=$PIN_WORK
PIN_SUMMARY='"(steps|skipped_steps|final_train_loss|test_loss|test_acc|final_scale|params|underflow|overflow|rounded)"|"name": "fc'
run_case() { # name config args...: a config of configs/
    local name=$1 cfg=$2
    shift 2
    pin_case "$name" "configs/$cfg" "$@"
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
isa=$(grep -o '"isa": "[a-z0-9_]*"' "$work/fp32_sgd/summary.json" | cut -d'"' -f4)
gemm=$(grep -o '"f32": "[^"]*"' "$work/fp32_sgd/summary.json" | cut -d'"' -f4)
how="isa $isa, $AMPTRAIN_THREADS thread(s), f32 GEMM $gemm"

if [ "${3:-}" = "--write" ]; then
    [ "$which" = reference ] || { echo "mlp_pin: --write takes the reference GEMM's numbers" >&2; exit 2; }
    cp "$work/digest.txt" "$expected"
    echo "mlp_pin: wrote $expected ($how)"
    exit 0
fi
if [ "$which" = reference ]; then
    pin_same "$expected" "$work/digest.txt" MLP "$how"
    echo "mlp_pin: $(grep -c '^==' "$work/digest.txt") cases match bit for bit ($how)"
    exit 0
fi

# A library GEMM: the numbers of each line against the reference's.
awk -v tolerances="$TOLERANCES" -v acc_tol=$ACC_TOL '
BEGIN {
    n = split(tolerances, t, /[ \n]+/)
    for (i = 1; i + 2 <= n; i += 3) if (t[i] != "") { tl[t[i]] = t[i + 1]; tg[t[i]] = t[i + 2] }
}
function num(line, key,   m) { # the value of "key": in a metrics or summary line, or ""
    if (match(line, "\"" key "\": ?[-0-9.eE+]+")) {
        m = substr(line, RSTART, RLENGTH); sub(/^[^:]*: ?/, "", m); return m
    }
    return ""
}
function rel(a, b) { return (a > b ? a - b : b - a) / (b < 0 ? -b : (b > 0 ? b : 1)) }
function check(what, a, b, tol, absolute,   d) {
    d = absolute ? (a > b ? a - b : b - a) : rel(a, b)
    if (d > worst[policy, what]) worst[policy, what] = d
    if (d > tol) { printf "mlp_pin: %s line %d: %s %s, reference %s (%.3g > %g)\n", name, FNR, what, a, b, d, tol; bad++ }
}
FNR == NR { ref[FNR] = $0; nref = FNR; next }
{
    r = ref[FNR]
    if ($0 ~ /^== /) {
        name = $2; policy = substr(name, 1, 4); loss_tol = tl[policy]; gn_tol = tg[policy]
        if ($0 != r || loss_tol == "") { print "mlp_pin: case " $0 " (reference: " r "), no tolerance for " policy; bad++ }
        next
    }
    if ($0 ~ /^\{"step"/) { # a step or an evaluation: same step, lr, skip and scale decisions
        if (num($0, "step") != num(r, "step") || num($0, "lr") != num(r, "lr") ||
            ($0 ~ /"skipped":true/) != (r ~ /"skipped":true/) || num($0, "scale") != num(r, "scale")) {
            printf "mlp_pin: %s line %d: %s\n  reference: %s\n", name, FNR, $0, r; bad++; next
        }
        if (num(r, "loss") != "") check("loss", num($0, "loss"), num(r, "loss"), loss_tol, 0)
        if (num(r, "grad_norm") != "") check("grad_norm", num($0, "grad_norm"), num(r, "grad_norm"), gn_tol, 0)
        if (num(r, "test_loss") != "") check("loss", num($0, "test_loss"), num(r, "test_loss"), loss_tol, 0)
        if (num(r, "test_acc") != "") check("test_acc", num($0, "test_acc"), num(r, "test_acc"), acc_tol, 1)
        next
    }
    if (num(r, "final_train_loss") != "") check("loss", num($0, "final_train_loss"), num(r, "final_train_loss"), loss_tol, 0)
    if (num(r, "test_loss") != "") check("loss", num($0, "test_loss"), num(r, "test_loss"), loss_tol, 0)
    if (num(r, "test_acc") != "") check("test_acc", num($0, "test_acc"), num(r, "test_acc"), acc_tol, 1)
}
END {
    if (FNR != nref) { printf "mlp_pin: %d lines, the reference has %d\n", FNR, nref; bad++ }
    printf "largest differences (loss, grad_norm relative; test_acc):"
    for (p in tl) printf " %s %.2g %.2g %.2g;", p, worst[p, "loss"], worst[p, "grad_norm"], worst[p, "test_acc"]
    printf "\n"
    exit bad > 0
}' "$expected" "$work/digest.txt" >"$work/check.txt" || {
    cat "$work/check.txt" >&2
    echo "mlp_pin: the $which GEMMs moved the MLP's numbers past the tolerances ($how)" >&2
    exit 1
}
echo "mlp_pin: $(grep -c '^==' "$work/digest.txt") cases within the tolerances of the FP64 reference" \
    "($how); $(tail -1 "$work/check.txt")"
