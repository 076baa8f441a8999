#!/bin/bash
# A stop signal while amptrain starts is not lost: the start-up installs
# the stop handlers before its restart and carries a stop received before
# it across the exec, so the run stops as on any stop before the first
# step (exit 128 + signal, "stopped by SIGINT before the first step;
# nothing was written", no outputs). The runs are background jobs of this
# script, which start with SIGINT ignored, as in the report that lost one.
# Any other command stopped while starting exits 128 + signal too. Needs
# the test build's start-up pause (AMP_TEST_STARTUP_PAUSE,
# tests/testmodel/main.c) to hold the start-up still while the signal is sent.
# usage: signal.sh AMPTRAIN_TESTMODELS WORK_DIR
set -u
. "$(dirname "$0")/../config/lib.sh" # A, W, TESTS, fail
CFG=$TESTS/../configs/tiny_fp16_dynamic.ini

# stop_while_starting NAME SIGNAL CODE REGEX ENV... -- ARGS...: starts A in the
# background, sends SIGNAL once it says it paused, and checks its exit code
# and stderr.
stop_while_starting() {
    local name=$1 sig=$2 code=$3 re=$4
    shift 4
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" AMP_TEST_STARTUP_PAUSE=20 "$A" "$@" 2>"$W/$name.log" &
    local pid=$! i
    for ((i = 0; i < 1000; i++)); do
        grep -q 'start-up paused' "$W/$name.log" 2>/dev/null && break
        sleep 0.01
    done
    grep -q 'start-up paused' "$W/$name.log" || { kill -KILL $pid; fail "$name: the start-up never paused"; }
    kill -"$sig" $pid
    wait $pid
    local rc=$?
    [ "$rc" = "$code" ] || fail "$name: exit $rc after SIG$sig while starting (expected $code): $(cat "$W/$name.log")"
    grep -Eq -- "$re" "$W/$name.log" || fail "$name: no '$re' in: $(cat "$W/$name.log")"
}

RESTART=(-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OPENBLAS_THREAD_TIMEOUT AMPTRAIN_LOG=debug)
NORESTART=(OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 AMPTRAIN_LOG=debug)
STOPPED='^amptrain: stopped by SIGINT before the first step; nothing was written$'

stop_while_starting restart INT 130 "$STOPPED" "${RESTART[@]}" -- train "$CFG" --out "$W/restart"
grep -q 'start-up: execution 2' "$W/restart.log" || fail "restart: the run did not restart: $(cat "$W/restart.log")"
for f in metrics.jsonl summary.json weights.safetensors checkpoints; do
    [ ! -e "$W/restart/$f" ] || fail "restart: the stopped run wrote $f"
done
echo "ok  SIGINT before the restart: carried across it, exit 130, nothing written"

stop_while_starting norestart INT 130 "$STOPPED" "${NORESTART[@]}" -- train "$CFG" --out "$W/norestart"
! grep -q 'start-up: execution 2' "$W/norestart.log" || fail "norestart: restarted"
echo "ok  SIGINT while starting without a restart: exit 130"

stop_while_starting term TERM 143 '^amptrain: stopped by SIGTERM before the first step' \
    "${RESTART[@]}" -- train "$CFG" --out "$W/term"
echo "ok  SIGTERM while starting: exit 143"

stop_while_starting plugins INT 130 '^amptrain: stopped by SIGINT while starting; nothing was done$' \
    "${RESTART[@]}" -- plugins
echo "ok  plugins stopped while starting: exit 130"
