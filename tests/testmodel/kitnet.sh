#!/bin/bash
# kitnet (tests/testmodel/kitnet.c, written with the layer kit alone) trains
# through the CLI under fp32, fp16 + dynamic scaling and bf16: every run
# ends, its loss goes down and it beats chance on the test split, the
# 16-bit runs end near the FP32 one (the oracle), and the
# kit's rounding points show in its telemetry (conv and head round under the
# 16-bit policies, nothing does under fp32).
# usage: kitnet.sh AMPTRAIN_TESTMODELS WORK_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../checkpoint/lib.sh"
A=$1 W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1

# field NAME FILE: a number from summary.json
field() { sed -nE "s/.*\"$1\": ([-0-9.e+]*).*/\1/p" "$2" | head -1; }
# rounded LAYER FILE: "<forward rounded> <grad rounded>"
rounded() {
    sed -n "s/.*\"name\": \"$1\", \"forward\": {[^}]*\"rounded\": \([0-9]*\)}, \"grad\": {[^}]*\"rounded\": \([0-9]*\)}.*/\1 \2/p" "$2"
}

for case in "fp32 none" "fp16 dynamic" "bf16 none"; do
    set -- $case
    name=kn_$1
    cat >"$W/$name.ini" <<INI
[run]
name = $name
seed = 3
device = cpu
[data]
dataset = tiny
train_size = 512
test_size = 256
features = 16
classes = 3
batch_size = 32
[model]
name = kitnet
channels = 4
[optim]
name = adamw
lr = 0.01
[train]
steps = 200
log_every = 1
[precision]
plugin = $1
[scaler]
plugin = $2
INI
    "$A" train "$W/$name.ini" --out "$W/$name" >"$W/$name.log" 2>&1 ||
        fail "kitnet $1 run failed: $(tail -3 "$W/$name.log")"
    s=$W/$name/summary.json
    first=$(sed -nE 's/.*"loss":([-0-9.e+]*).*/\1/p' "$W/$name/metrics.jsonl" | head -1)
    last=$(field final_train_loss "$s") acc=$(field test_acc "$s")
    awk -v f="$first" -v l="$last" -v a="$acc" 'BEGIN { exit !(l == l && l < 0.7 * f && a > 0.5) }' ||
        fail "kitnet $1: loss $first -> $last, test accuracy $acc (wanted a drop by 30% and > 0.5)"
    read -r cf cg <<<"$(rounded conv "$s")"
    read -r hf hg <<<"$(rounded head "$s")"
    [ -n "$cf" ] && [ -n "$hf" ] || fail "kitnet $1: summary.json lacks the conv/head telemetry"
    if [ "$1" = fp32 ]; then
        [ "$cf$cg$hf$hg" = 0000 ] || fail "kitnet fp32 rounded something: conv $cf/$cg, head $hf/$hg"
    else
        [ "$cf" -gt 0 ] && [ "$cg" -gt 0 ] && [ "$hf" -gt 0 ] && [ "$hg" -gt 0 ] ||
            fail "kitnet $1: a rounding point is not counted: conv $cf/$cg, head $hf/$hg"
    fi
    [ "$1" = fp32 ] && ref=$last
    awk -v l="$last" -v r="$ref" 'BEGIN { d = l - r; exit !((d < 0 ? -d : d) <= 1e-3 + 0.1 * r) }' ||
        fail "kitnet $1: final loss $last, the fp32 run's $ref (wanted within 1e-3 + 10%)"
    echo "kitnet $1: loss $first -> $last, test accuracy $acc, rounded conv $cf/$cg head $hf/$hg"
done
echo "kitnet: ok"
