#!/bin/sh
# gpu_host_trips.sh AMPTRAIN CONFIG WORK_DIR: host round trips inside
# forward/backward on the CUDA backend, from summary.json's
# backend.host_round_trips_per_step, a few steps of the tiny GPT each:
#   fp8 (delayed scaling): 0 at the median and the max (the scales are
#     written on the device, the GEMM's descriptors cached);
#   fp8 current and nvfp4: exactly the CPU backend's count for the same run
#     (the CPU counts the ops that stand for a transfer: each current amax
#     and each NVFP4 tensor scale, which still come back to the host), so
#     the CUDA backend makes no round trip beyond those.
# The loss and skip-decision download after the backward does not count.
# Exits 77 (skipped) without a visible CUDA device or a CUDA build
# (gpu_train_run.sh). POSIX sh.
set -u
[ $# -eq 3 ] || { echo "usage: gpu_host_trips.sh AMPTRAIN CONFIG WORK_DIR" >&2; exit 2; }
bin=$1 cfg=$2 work=$3
here=$(dirname "$0")
mkdir -p "$work" || exit 1
trips() { # SUMMARY: the host_round_trips_per_step object
    grep -o '"host_round_trips_per_step": {[^}]*}' "$1" ||
        { echo "FAIL: $1 has no backend.host_round_trips_per_step" >&2; exit 1; }
}
# NAME WANT ARGS...: WANT is 0 or "cpu" (the CPU backend's line for ARGS)
check() {
    name=$1 want=$2
    shift 2
    sh "$here/gpu_train_run.sh" "$bin" "$cfg" "$work/$name" '4 steps \(0 skipped\)' -- \
        --set train.steps=4 "$@"
    rc=$?
    [ "$rc" = 0 ] || exit "$rc"
    got=$(trips "$work/$name/summary.json") || exit 1
    if [ "$want" = 0 ]; then
        want='"host_round_trips_per_step": {"median": 0, "max": 0, "steps_counted": 4}'
    else
        AMPTRAIN_THREADS=1 "$bin" train "$cfg" --set run.device=cpu --set train.steps=4 "$@" \
            --out "$work/$name.cpu" >/dev/null 2>"$work/$name.cpu.log" ||
            { echo "FAIL $name: the CPU run failed: $(tail -n 3 "$work/$name.cpu.log")" >&2; exit 1; }
        want=$(trips "$work/$name.cpu/summary.json") || exit 1
        case $want in *'"max": 0,'*) echo "FAIL $name: the CPU run counts none: $want" >&2; exit 1 ;; esac
    fi
    if [ "$got" = "$want" ]; then
        echo "ok $name host round trips per step n=4: $got"
    else
        echo "FAIL $name: on the CUDA backend $got, want $want" >&2
        exit 1
    fi
}
check fp8_delayed 0 --set precision.plugin=fp8 --set precision.recipe=delayed
check fp8_current cpu --set precision.plugin=fp8 --set precision.recipe=current
check nvfp4 cpu --set precision.plugin=nvfp4
