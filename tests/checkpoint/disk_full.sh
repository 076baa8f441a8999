#!/bin/bash
# A checkpoint write that fails for lack of space (here a file-size limit,
# `ulimit -f`, which makes write() fail with EFBIG once SIGXFSZ is ignored)
# stops the run with a clear error naming the file and exit 1; the previous
# checkpoint stays byte for byte, no temporary or output is left behind, and
# resuming without the limit still ends identical to an uninterrupted run.
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3
CFG=$CONFIGS/tiny_fp16_dynamic.ini
rm -rf "$W" && mkdir -p "$W" || exit 1
SETS=(--set run.device=cpu --set train.checkpoint_every=10)

"$A" train "$CFG" "${SETS[@]}" --out "$W/ref" 2>"$W/ref.log" || fail "reference run failed: $(tail -3 "$W/ref.log")"
D=$W/run
mkdir -p "$D/checkpoints" && cp "$W/ref/checkpoints/ckpt-00000130.amp" "$D/checkpoints/" || exit 1
cp "$D/checkpoints/ckpt-00000130.amp" "$W/saved.amp"
size=$(stat -c %s "$W/saved.amp")
# bash's ulimit -f counts 1024-byte blocks: below the next checkpoint's size,
# above every other file the run writes.
limit=$((size / 1024 - 4))
(ulimit -f "$limit" && exec "$A" train "$CFG" "${SETS[@]}" --resume "$D") 2>"$W/full.log"
rc=$?
[ "$rc" = 1 ] || fail "exit $rc under ulimit -f $limit, expected 1: $(tail -3 "$W/full.log")"
grep -Eq "^amptrain: .*/ckpt-00000140\.amp: cannot write the checkpoint: File too large \(the earlier checkpoints in .* are untouched; make room, then continue the run with --resume\)" \
    "$W/full.log" || fail "no clear error: $(tail -3 "$W/full.log")"
cmp "$W/saved.amp" "$D/checkpoints/ckpt-00000130.amp" || fail "the previous checkpoint changed"
[ "$(ls -A "$D/checkpoints")" = "ckpt-00000130.amp" ] ||
    fail "the failed write left files behind: $(ls -A "$D/checkpoints")"
no_outputs "$D"
"$A" checkpoints "$D" >/dev/null || fail "the previous checkpoint no longer validates"
"$A" train "$CFG" "${SETS[@]}" --resume "$D" 2>"$W/resume.log" || fail "resume failed: $(tail -3 "$W/resume.log")"
same_outputs "$W/ref" "$D"
echo "disk full: exit 1 with '$(grep -o 'cannot write the checkpoint: [A-Za-z ]*' "$W/full.log")'; checkpoint 130 untouched; the resumed run matches"
