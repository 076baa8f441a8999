#!/bin/bash
# --resume refuses what it must and falls back where it can:
#  - a checkpoint of another model shape, scaler plugin or config value:
#    exit 2 with a message naming the difference, checkpoints untouched;
#  - a truncated or bit-flipped newest checkpoint: a warning naming it, the
#    previous one is used, and the run still ends identical to an
#    uninterrupted one;
#  - every checkpoint damaged: exit 1; no checkpoint at all: exit 2;
#  - a fresh run into a folder holding checkpoints: exit 2.
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3
CFG=$CONFIGS/tiny_fp16_dynamic.ini
rm -rf "$W" && mkdir -p "$W" || exit 1

# A finished run that kept checkpoints 110..150; drop 150 so that resuming
# has steps left to run.
REF=$W/ref
SETS=(--set run.device=cpu --set train.checkpoint_every=10 --set train.keep=5)
"$A" train "$CFG" "${SETS[@]}" --out "$REF" 2>"$W/ref.log" ||
    fail "reference run failed: $(tail -3 "$W/ref.log")"
rm "$REF/checkpoints/ckpt-00000150.amp"
[ "$(ls "$REF/checkpoints" | wc -l)" = 4 ] || fail "keep = 5 did not keep 5 checkpoints"
# A run folder as an interrupted run leaves it: its checkpoints and its
# metrics.jsonl history (longer than any checkpoint's: a resume cuts it back).
fresh() {
    rm -rf "$W/$1" && mkdir -p "$W/$1" && cp -r "$REF/checkpoints" "$REF/metrics.jsonl" "$W/$1/" &&
        echo "$W/$1"
}
sums() { (cd "$1/checkpoints" && cksum ckpt-*.amp); }

D=$(fresh shape)
before=$(sums "$D")
expect 2 "ckpt-00000140\.amp: model shape differs: the checkpoint holds mlp: fc1\.weight \[64, 32\], fc1\.bias \[64\], fc2\.weight \[10, 64\], fc2\.bias \[10\] \(2762 parameters\); the config gives mlp: fc1\.weight \[48, 32\]" \
    "$W/shape.log" -- "$A" train "$CFG" --set model.hidden=48 --resume "$D"
no_outputs "$D"
[ "$(sums "$D")" = "$before" ] || fail "a refused resume changed the checkpoints"
cmp -s "$REF/metrics.jsonl" "$D/metrics.jsonl" || fail "a refused resume changed metrics.jsonl"

D=$(fresh scaler)
expect 2 "written with scaler plugin 'dynamic' 1\.0\.0; this run uses 'hysteresis' 1\.0\.0" \
    "$W/scaler.log" -- "$A" train "$CFG" --set scaler.plugin=hysteresis --resume "$D"
no_outputs "$D"

D=$(fresh lr)
expect 2 "differs from the checkpoint's in 1 key that changes the math: \[optim\] lr: checkpoint '0\.003', config '0\.001'" \
    "$W/lr.log" -- "$A" train "$CFG" --set optim.lr=0.001 --resume "$D"

# Printing-only keys may change on resume.
D=$(fresh log_every)
expect 0 "resuming from .*ckpt-00000140\.amp" "$W/log_every.log" -- \
    "$A" train "$CFG" --set train.log_every=5 --set train.checkpoint_every=3 --resume "$D"

D=$(fresh truncated)
ck=$D/checkpoints/ckpt-00000140.amp
head -c $(($(stat -c %s "$ck") / 2)) "$ck" >"$ck.cut" && mv "$ck.cut" "$ck"
expect 1 "ckpt-00000140\.amp  DAMAGED: truncated" "$W/truncated.list" -- "$A" checkpoints "$D"
expect 0 "ckpt-00000140\.amp: truncated: [0-9]+ of [0-9]+ bytes; trying the previous checkpoint" \
    "$W/truncated.log" -- "$A" train "$CFG" "${SETS[@]}" --resume "$D"
grep -q "resuming from .*ckpt-00000130\.amp: step 130" "$W/truncated.log" || fail "did not fall back to step 130"
same_outputs "$REF" "$D"

D=$(fresh flipped)
ck=$D/checkpoints/ckpt-00000140.amp
off=$(($(stat -c %s "$ck") / 3))
printf '\x5a' | dd of="$ck" bs=1 seek="$off" conv=notrunc status=none
cmp -s "$ck" "$REF/checkpoints/ckpt-00000140.amp" && fail "the byte flip did not change the file"
expect 0 "ckpt-00000140\.amp: section [A-Z]{4}: CRC mismatch .*; trying the previous checkpoint" \
    "$W/flipped.log" -- "$A" train "$CFG" "${SETS[@]}" --resume "$D"
grep -q "resuming from .*ckpt-00000130\.amp" "$W/flipped.log" || fail "did not fall back to step 130"
same_outputs "$REF" "$D"

D=$(fresh all_damaged)
for ck in "$D"/checkpoints/ckpt-*.amp; do : >"$ck"; done
expect 1 "no valid checkpoint in .*checkpoints \(4 found, all damaged" "$W/all.log" -- \
    "$A" train "$CFG" --resume "$D"
no_outputs "$D"

mkdir -p "$W/empty"
expect 2 "--resume .*empty: no checkpoint in" "$W/empty.log" -- "$A" train "$CFG" --resume "$W/empty"
no_metrics "$W/empty"
[ -z "$(ls -A "$W/empty")" ] || fail "a refused resume left files in an empty folder: $(ls -A "$W/empty")"
expect 2 "--resume .*missing: no checkpoint in" "$W/missing.log" -- "$A" train "$CFG" --resume "$W/missing"
[ ! -e "$W/missing" ] || fail "--resume of a missing folder created it"

D=$(fresh restart)
expect 2 "holds 4 checkpoints of an earlier run: continue it with .*--resume" "$W/restart.log" -- \
    "$A" train "$CFG" --out "$D"
[ "$(sums "$D")" = "$(sums "$REF")" ] || fail "a refused fresh run changed the checkpoints"
echo "refusals: shape, scaler, config value refused; truncated and flipped checkpoints fell back to step 130 with identical outputs"
