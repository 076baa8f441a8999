#!/bin/bash
# What repeat.sh's comparison (lib.sh same_outputs) holds two runs to in
# memory: the process's own exact accounting (every memory_peak_bytes
# category and their total) must match, while device_used (cudaMemGetInfo's
# whole-device figure, which other processes on the GPU move) may differ.
# A 30-step CPU run, copied twice: one copy with device_used changed must
# compare equal, one with total changed must not.
# Usage: compare_memory.sh AMPTRAIN CONFIG_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
timeout 120 "$A" train "$CONFIGS/tiny_fp16_dynamic.ini" --set run.device=cpu --set train.steps=30 --set train.log_every=5 \
    --out "$W/a" 2>"$W/a.log" || fail "the run failed: $(tail -3 "$W/a.log")"
grep -qE '"device_used": [0-9]+' "$W/a/summary.json" || fail "no device_used in $W/a/summary.json"
cp -r "$W/a" "$W/device" && cp -r "$W/a" "$W/total" || exit 1
sed -i -E 's/"device_used": [0-9]+/"device_used": 123456789/' "$W/device/summary.json"
sed -i -E 's/"total": ([0-9]+)/"total": 1\1/' "$W/total/summary.json"
(same_outputs "$W/a" "$W/device") || fail "a different whole-device device_used made the runs differ"
if (same_outputs "$W/a" "$W/total") 2>/dev/null; then fail "a different total was not caught"; fi
echo "ok  device_used is not compared; the process's own total is"
