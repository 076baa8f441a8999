#!/bin/sh
# expect_no_gpu.sh REGEX AMPTRAIN CONFIG [ARG]...
# On a machine WITHOUT a visible GPU: runs `AMPTRAIN train CONFIG
# --set run.device=cuda [ARG]...` and passes when it exits with status 1 and
# its stderr matches the extended regular expression REGEX (the "no CUDA
# device is visible" message). Where a GPU is visible (`nvidia-smi -L`
# lists one, or the run trains on cuda) the check does not apply and the
# script exits 77 (CTest: skipped).
# POSIX sh only.
set -u
[ $# -ge 3 ] || { echo "usage: expect_no_gpu.sh REGEX AMPTRAIN CONFIG [ARG]..." >&2; exit 2; }
re=$1
bin=$2
config=$3
shift 3

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "a GPU is visible (nvidia-smi -L): this check is for machines without one: skipped"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/expect_no_gpu.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$bin" train "$config" --set run.device=cuda --out "$tmp/out" "$@" \
    >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?

# CUDA saw a device that nvidia-smi did not (no nvidia-smi in a container):
# the run then trained on the GPU and this check does not apply. A run that
# "succeeded" on any other backend is a silent fallback and fails below.
if [ "$rc" = 0 ] && grep -Eq ' scaler on cuda,' "$tmp/stderr"; then
    echo "CUDA sees a device although nvidia-smi does not: skipped"
    exit 77
fi

fail=0
if [ "$rc" != 1 ]; then
    echo "expect_no_gpu: exit status $rc, expected 1" >&2
    fail=1
fi
if ! grep -Eq -- "$re" "$tmp/stderr"; then
    echo "expect_no_gpu: stderr does not match: $re" >&2
    fail=1
fi
if [ -e "$tmp/out/summary.json" ] || [ -e "$tmp/out/metrics.jsonl" ]; then
    echo "expect_no_gpu: the failed run wrote outputs in $tmp/out" >&2
    fail=1
fi
if [ "$fail" -ne 0 ]; then
    echo "--- stdout:" >&2
    cat "$tmp/stdout" >&2
    echo "--- stderr:" >&2
    cat "$tmp/stderr" >&2
    exit 1
fi
echo "amptrain train --set run.device=cuda failed as expected (exit 1): $(head -n 1 "$tmp/stderr")"
exit 0
