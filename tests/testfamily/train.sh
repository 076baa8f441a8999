#!/bin/bash
# The INT8 test family (tests/testfamily/int8.c, written only against
# core/formats/family.h) trains the tiny GPT through the CLI: the policy
# int8test puts every GEMM operand in its format, amptrain_testmodels
# registers the family. The run ends, its loss falls as the FP32 run's
# does (within 5% at the end), and summary.json's scaled-operand
# telemetry names the family and carries its own field for every role.
# The plain amptrain, which does not register the family, refuses the same
# policy at config time (exit 2, naming the layer and the operand).
# usage: train.sh AMPTRAIN_TESTMODELS AMPTRAIN PLUGIN_DIR WORK_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../checkpoint/lib.sh"
T=$1 A=$2 P=$3 W=$4
cfg=$HERE/../gpt/tiny_gpt.ini
rm -rf "$W" && mkdir -p "$W" || exit 1
export AMPTRAIN_PLUGIN_PATH=$P AMPTRAIN_THREADS=${AMPTRAIN_THREADS:-2}
common=(--set scaler.plugin=none --set train.steps=40 --set train.checkpoint_every=0)

loss_at() { sed -nE "s/^\{\"step\":$2,.*\"loss\":([^,]*),.*/\1/p" "$1/metrics.jsonl"; }

"$T" train "$cfg" --set precision.plugin=fp32 "${common[@]}" --out "$W/fp32" >"$W/fp32.log" 2>&1 ||
    fail "fp32 run failed: $(tail -3 "$W/fp32.log")"
"$T" train "$cfg" --set precision.plugin=int8test "${common[@]}" --out "$W/int8" >"$W/int8.log" 2>&1 ||
    fail "int8 run failed: $(tail -3 "$W/int8.log")"
f0=$(loss_at "$W/fp32" 1) f1=$(loss_at "$W/fp32" 40) i0=$(loss_at "$W/int8" 1) i1=$(loss_at "$W/int8" 40)
awk -v a="$i0" -v b="$i1" -v r="$f1" 'BEGIN { d = b - r; exit !(b == b && b < 0.85 * a && (d < 0 ? -d : d) <= 0.05 * r) }' ||
    fail "int8: loss $i0 -> $i1, the fp32 run's $f0 -> $f1 (wanted a 15% drop, within 5% of fp32's)"
s=$W/int8/summary.json
for role in input weight grad_output; do
    n=$(grep -o "\"role\": *\"$role\", *\"format\": *\"int8\"[^}]*\"int8_step\": *[0-9.e-]*" "$s" |
        grep -vc '"int8_step": *0$')
    [ "$n" -gt 0 ] || fail "int8: summary.json has no int8 $role operand with a nonzero step"
done
echo "int8 family: loss $i0 -> $i1 (fp32 $f0 -> $f1), telemetry for every role"

"$A" train "$cfg" --set precision.plugin=int8test "${common[@]}" --out "$W/plain" >"$W/plain.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "amptrain without the family: exit $rc (wanted 2): $(tail -3 "$W/plain.log")"
grep -q "precision plugin 'int8test' gives layer '[^']*' (input operand) an unknown format (no number-format family serves it)" "$W/plain.log" ||
    fail "amptrain without the family: $(tail -3 "$W/plain.log")"
echo "unregistered: refused as it should be"
echo "testfamily: ok"
