#!/bin/bash
# The start-up re-executes amptrain at most once, with every variable the
# libraries read while loading: under an address-space limit too tight for
# OpenBLAS's buffer per core, with the wait policy unset, the run executes
# exactly twice (the first execution and one restart carrying
# OPENBLAS_NUM_THREADS=1, OMP_WAIT_POLICY=PASSIVE and
# OPENBLAS_THREAD_TIMEOUT=4), counted by AMPTRAIN_LOG=debug's "start-up:
# execution N" lines and, where strace works, by the execve calls of the
# executable. With every variable already set it executes once.
# usage: restart_once.sh AMPTRAIN WORK_DIR
set -u
. "$(dirname "$0")/../config/lib.sh" # A, W, TESTS, fail, expect
command -v prlimit >/dev/null || { echo "SKIP: prlimit (util-linux) not found"; exit 77; }
if ldd "$A" 2>/dev/null | grep -q 'libasan'; then
    echo "SKIP: built with AddressSanitizer, which cannot run under an address-space limit"
    exit 77
fi
CFG=$TESTS/../configs/tiny_fp16_dynamic.ini
# 350 MiB leaves less than one 128 MiB buffer plus the 256 MiB reserve on any
# number of cores (core/process/mem_limit.c), and a tiny run fits in it
LIMIT=$((350 * 1024 * 1024))
CLEAN=(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OPENBLAS_THREAD_TIMEOUT -u OPENBLAS_NUM_THREADS
       -u AMPTRAIN_STARTUP_PASS -u AMPTRAIN_STARTUP_STOP AMPTRAIN_LOG=debug)

expect 0 'test_acc' "${CLEAN[@]}" prlimit --as=$LIMIT "$A" train "$CFG" --set train.steps=2 --out "$W/limited"
n=$(grep -c 'start-up: execution' "$W/log")
[ "$n" = 2 ] || fail "under a limit with the wait policy unset: $n executions, expected 2: $(grep start-up "$W/log")"
grep -q '^amptrain: debug: start-up: execution 2$' "$W/log" || fail "no second execution: $(grep start-up "$W/log")"
[ "$(grep -c 'start-up: restarting once' "$W/log")" = 1 ] || fail "not one restart: $(grep start-up "$W/log")"
for v in OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 OPENBLAS_NUM_THREADS=1; do
    grep 'start-up: restarting once' "$W/log" | grep -q "$v" || fail "the restart did not carry $v: $(grep restarting "$W/log")"
done
echo "ok  under a memory limit, wait policy unset: 2 executions (one restart with all three variables)"

if strace -f -qq -e trace=execve -o "$W/strace" true 2>/dev/null; then
    rm -rf "$W/limited"
    "${CLEAN[@]}" strace -f -qq -e trace=execve -o "$W/strace" prlimit --as=$LIMIT "$A" train "$CFG" \
        --set train.steps=2 --out "$W/limited" >"$W/log" 2>&1 || fail "the traced run failed: $(tail -3 "$W/log")"
    n=$(grep -c "execve(\"$A\"" "$W/strace")
    [ "$n" = 2 ] || fail "strace counts $n execve of $A, expected 2: $(cat "$W/strace")"
    echo "ok  strace: the executable was exec'd twice"
else
    echo "strace cannot trace here: the execve count is left to the debug lines"
fi

expect 0 'test_acc' env -u AMPTRAIN_STARTUP_PASS OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 \
    OPENBLAS_NUM_THREADS=1 AMPTRAIN_LOG=debug prlimit --as=$LIMIT "$A" train "$CFG" --set train.steps=2 --out "$W/set"
[ "$(grep -c 'start-up: execution' "$W/log")" = 1 ] || fail "every variable set: not one execution: $(grep start-up "$W/log")"
echo "ok  every variable already set: 1 execution"
