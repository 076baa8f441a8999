#!/bin/bash
# The checkpoint class of issue 15, through the CLI:
#  - metrics.jsonl is the history: a checkpoint records its length and CRC
#    (no copy of every line: the checkpoint's size stays the same however
#    long the run), and --resume cuts it back to exactly that history;
#  - a metrics.jsonl that does not hold the checkpoint's history (removed)
#    gives a warning and the lines it can, never a failure;
#  - a full disk while writing metrics.jsonl (ulimit -f) stops the run at
#    that step with a checkpoint holding the lines that did not fit, exit 1;
#    --resume then ends identical to a run left alone;
#  - a checkpoint whose file name says another step is damaged: listed as
#    such and skipped on resume; a name amptrain never writes is ignored;
#  - pruning: with the two newest checkpoints damaged, a resume falls back and
#    its new checkpoints never cost the one it resumed from, nor themselves.
#  - a checkpoint written before MPOS existed (every metrics line in METR)
#    still resumes, with its whole history.
# usage: history.sh AMPTRAIN CONFIG_DIR WORK_DIR MAKE_OLD_CKPT
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3 OLD=$4
CFG=$CONFIGS/tiny_fp16_dynamic.ini
rm -rf "$W" && mkdir -p "$W" || exit 1
SETS=(--set run.device=cpu --set train.checkpoint_every=10 --set train.keep=5 --set train.log_every=1)

REF=$W/ref
"$A" train "$CFG" "${SETS[@]}" --out "$REF" 2>"$W/ref.log" || fail "reference run failed: $(tail -3 "$W/ref.log")"
# Every checkpoint is about the same size: none carries the history.
sizes=$(stat -c %s "$REF"/checkpoints/ckpt-*.amp | sort -u | wc -l)
first=$(stat -c %s "$REF/checkpoints/ckpt-00000110.amp") last=$(stat -c %s "$REF/checkpoints/ckpt-00000150.amp")
[ $((last - first)) -lt 256 ] || fail "checkpoints grow with the run ($first -> $last bytes): the history is in them"
echo "checkpoint sizes: $first .. $last bytes over 40 steps of history ($sizes distinct)"

# --- resume cuts metrics.jsonl back to the checkpoint's history --------------
D=$W/cut
mkdir -p "$D" && cp -r "$REF/checkpoints" "$REF/metrics.jsonl" "$D/" && rm "$D"/checkpoints/ckpt-00000150.amp
"$A" train "$CFG" "${SETS[@]}" --resume "$D" 2>"$W/cut.log" || fail "cut: resume failed: $(tail -3 "$W/cut.log")"
grep -q "resuming from .*ckpt-00000140\.amp" "$W/cut.log" || fail "cut: did not resume from 140"
! grep -q warning "$W/cut.log" || fail "cut: $(grep warning "$W/cut.log")"
same_outputs "$REF" "$D"
echo "resume: metrics.jsonl cut back to step 140's history and continued: identical"

# --- an old checkpoint: METR holds the whole history -------------------------
D=$W/old
mkdir -p "$D/checkpoints"
"$OLD" "$REF/checkpoints/ckpt-00000140.amp" "$REF/metrics.jsonl" "$D/checkpoints/ckpt-00000140.amp" ||
    fail "old: cannot make an old-format checkpoint"
[ "$(stat -c %s "$D/checkpoints/ckpt-00000140.amp")" -gt $((last + 20000)) ] ||
    fail "old: the old-format checkpoint does not carry the history"
"$A" checkpoints "$D" >/dev/null || fail "old: the old-format checkpoint does not validate"
"$A" train "$CFG" "${SETS[@]}" --resume "$D" 2>"$W/old.log" || fail "old: resume failed: $(tail -3 "$W/old.log")"
! grep -q warning "$W/old.log" || fail "old: $(grep warning "$W/old.log")"
same_outputs "$REF" "$D"
echo "an old checkpoint (history in METR, $(stat -c %s "$REF/checkpoints/ckpt-00000140.amp") -> $(stat -c %s "$D/checkpoints/ckpt-00000140.amp") bytes): resumed, identical"

# --- a history that is not there: a warning, the run goes on -----------------
D=$W/nohistory
mkdir -p "$D" && cp -r "$REF/checkpoints" "$D/" && rm "$D"/checkpoints/ckpt-00000150.amp
"$A" train "$CFG" "${SETS[@]}" --resume "$D" 2>"$W/nohistory.log" ||
    fail "nohistory: resume failed: $(tail -3 "$W/nohistory.log")"
grep -q "metrics.jsonl does not hold this checkpoint's history" "$W/nohistory.log" ||
    fail "nohistory: no warning: $(tail -3 "$W/nohistory.log")"
[ "$(head -c 11 "$D/metrics.jsonl")" = '{"step":141' ] || fail "nohistory: metrics.jsonl does not start at step 141"
echo "resume without metrics.jsonl: warned, the history restarts at step 141"

# --- a full disk while writing metrics.jsonl ------------------------------------
D=$W/full
LONG=(--set train.steps=400)
"$A" train "$CFG" "${SETS[@]}" "${LONG[@]}" --out "$W/ref400" 2>"$W/ref400.log" ||
    fail "full: reference run failed: $(tail -3 "$W/ref400.log")"
# bash's ulimit -f counts 1024-byte blocks: above a checkpoint (~36 KB), below
# the whole history (400 lines of ~190 bytes).
limit=40
(ulimit -f "$limit" && exec "$A" train "$CFG" "${SETS[@]}" "${LONG[@]}" --out "$D") 2>"$W/full.log"
rc=$?
[ "$rc" = 1 ] || fail "full: exit $rc under ulimit -f $limit, expected 1: $(tail -3 "$W/full.log")"
grep -Eq "^amptrain: .*/metrics\.jsonl: cannot write: File too large; stopped after step ([0-9]+) of 400 with checkpoint .*ckpt-[0-9]{8}\.amp, which keeps the lines that did not fit: make room, then continue with --resume" \
    "$W/full.log" || fail "full: no clear error: $(tail -3 "$W/full.log")"
at=$(sed -nE 's/.*stopped after step ([0-9]+) of.*/\1/p' "$W/full.log")
[ "$at" -lt 400 ] || fail "full: the failure was noticed only at the end (step $at)"
[ -f "$D/checkpoints/ckpt-$(printf %08d "$at").amp" ] || fail "full: no checkpoint of step $at"
no_outputs "$D"
"$A" train "$CFG" "${SETS[@]}" "${LONG[@]}" --resume "$D" 2>"$W/full.resume.log" ||
    fail "full: resume failed: $(tail -3 "$W/full.resume.log")"
same_outputs "$W/ref400" "$D"
echo "full disk on metrics.jsonl: stopped at step $at with a checkpoint; the resumed run matches"

# --- the step in the file name must be the step inside ---------------------------
D=$W/renamed
mkdir -p "$D" && cp -r "$REF/checkpoints" "$REF/metrics.jsonl" "$D/"
cp "$D/checkpoints/ckpt-00000130.amp" "$D/checkpoints/ckpt-00000150.amp"
# a name amptrain never writes (9 digits with a leading zero) is not a
# checkpoint: it must not be listed, read as ckpt-00000160.amp or pruned
cp "$D/checkpoints/ckpt-00000130.amp" "$D/checkpoints/ckpt-000000160.amp"
"$A" checkpoints "$D" >"$W/renamed.list" 2>&1 && fail "renamed: checkpoints exited 0"
grep -q "ckpt-00000150\.amp  DAMAGED: the file name says step 150 but it holds step 130" "$W/renamed.list" ||
    fail "renamed: not reported: $(cat "$W/renamed.list")"
! grep -q "160" "$W/renamed.list" || fail "renamed: a non-canonical name was listed: $(cat "$W/renamed.list")"
"$A" train "$CFG" "${SETS[@]}" --resume "$D" 2>"$W/renamed.log" || fail "renamed: resume failed"
grep -q "ckpt-00000150\.amp: the file name says step 150 but it holds step 130; trying the previous" "$W/renamed.log" ||
    fail "renamed: no warning: $(tail -3 "$W/renamed.log")"
grep -q "resuming from .*ckpt-00000140\.amp" "$W/renamed.log" || fail "renamed: did not fall back to 140"
echo "a checkpoint renamed to another step: reported and skipped"

# --- pruning never costs the last valid checkpoints ---------------------------
# keep = 2; 140 and 150 damaged; the resume falls back to 130 and, with
# checkpoint_every = 19, writes 133 only. Pruning to 2 by age alone would
# delete 133 and 130 and leave only the damaged two.
D=$W/prune
mkdir -p "$D" && cp -r "$REF/checkpoints" "$REF/metrics.jsonl" "$D/"
for s in 140 150; do
    ck=$D/checkpoints/ckpt-00000$s.amp
    head -c 100 "$ck" >"$ck.cut" && mv "$ck.cut" "$ck"
done
"$A" train "$CFG" --set run.device=cpu --set train.keep=2 --set train.checkpoint_every=19 --set train.log_every=1 \
    --resume "$D" 2>"$W/prune.log" || fail "prune: resume failed: $(tail -3 "$W/prune.log")"
grep -q "resuming from .*ckpt-00000130\.amp" "$W/prune.log" || fail "prune: did not fall back to 130"
for s in 130 133; do
    [ -f "$D/checkpoints/ckpt-00000$s.amp" ] || fail "prune: the valid ckpt-00000$s.amp was deleted: $(ls "$D/checkpoints")"
done
# and the next resume still finds a valid one
"$A" train "$CFG" --set run.device=cpu --set train.keep=2 --set train.checkpoint_every=19 --set train.log_every=1 \
    --resume "$D" 2>"$W/prune2.log" || fail "prune: the second resume failed: $(tail -3 "$W/prune2.log")"
grep -q "resuming from .*ckpt-00000133\.amp" "$W/prune2.log" || fail "prune: the second resume did not use 133"
echo "pruning with the two newest damaged: kept $(ls "$D/checkpoints" | tr '\n' ' ')"
