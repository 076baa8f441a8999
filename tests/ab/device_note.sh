#!/bin/bash
# [run] device = auto on a machine where no GPU is visible says once why it
# uses the CPU: `ab` with three arms prints the note once for the study (it
# opens every arm's config in one process), not once per arm; each run's
# train.log keeps its own. CUDA_VISIBLE_DEVICES= hides any GPU, so the note
# is due on every machine.
# usage: device_note.sh AMPTRAIN TINY_FP16_DYNAMIC.ini WORK_DIR
set -u
A=$1 CFG=$2 W=$3
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
rm -rf "$W" && mkdir -p "$W" || exit 1
grep -q '^device' "$CFG" && fail "$CFG sets [run] device; the test needs auto"
for arm in b c; do sed "s/^name = tiny_fp16_dynamic$/name = tiny_$arm/" "$CFG" >"$W/$arm.ini"; done
export CUDA_VISIBLE_DEVICES=
"$A" ab "$CFG" "$W/b.ini" "$W/c.ini" --seeds 2 --set train.steps=2 --out "$W/ab" >/dev/null 2>"$W/ab.log" ||
    fail "the study failed: $(tail -3 "$W/ab.log")"
n=$(grep -c 'device = auto: using the CPU' "$W/ab.log")
[ "$n" = 1 ] || fail "the study printed the device note $n times, expected once: $(grep 'device = auto' "$W/ab.log")"
for log in "$W"/ab/runs/*/seed-*/train.log; do
    grep -q 'device = auto: using the CPU' "$log" || fail "$log lacks its run's note"
done
echo "3 arms x 2 seeds: $(grep 'device = auto' "$W/ab.log")"
