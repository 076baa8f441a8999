#!/bin/sh
# gpu_host_trips.sh AMPTRAIN CONFIG WORK_DIR: a few steps of the tiny GPT on
# the CUDA backend under fp8 (delayed scaling) and nvfp4 make no host round
# trip inside forward/backward: summary.json's
# backend.host_round_trips_per_step is 0 at its median and its max (the
# loss and skip-decision download after them does not count). Exits 77
# (skipped) without a visible CUDA device or a CUDA build
# (gpu_train_run.sh). POSIX sh.
set -u
[ $# -eq 3 ] || { echo "usage: gpu_host_trips.sh AMPTRAIN CONFIG WORK_DIR" >&2; exit 2; }
bin=$1 cfg=$2 work=$3
here=$(dirname "$0")
mkdir -p "$work" || exit 1
for p in fp8 nvfp4; do
    sh "$here/gpu_train_run.sh" "$bin" "$cfg" "$work/$p" '4 steps \(0 skipped\)' -- \
        --set precision.plugin=$p --set train.steps=4
    rc=$?
    [ "$rc" = 0 ] || exit "$rc"
    line=$(grep -o '"host_round_trips_per_step": {[^}]*}' "$work/$p/summary.json") ||
        { echo "FAIL $p: summary.json has no backend.host_round_trips_per_step" >&2; exit 1; }
    case $line in
    *'"median": 0, "max": 0, "steps": 4}') echo "ok $p host round trips per step n=4: $line" ;;
    *) echo "FAIL $p: host round trips inside forward/backward on the CUDA backend: $line" >&2
       exit 1 ;;
    esac
done
