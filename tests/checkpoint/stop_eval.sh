#!/bin/bash
# A stop signal during an evaluation (issue: a first SIGTERM gave no sign of
# life until a long evaluation ended):
#  - the run says at once that it stops, the evaluation ends at its next
#    batch, and the run checkpoints the step and exits 143 within a bound
#    (GPT with [data] eval_iters = 2^20: the whole evaluation would take
#    hours);
#  - the evaluation cut short is not logged, and --resume runs it before the
#    next step: the resumed run ends identical to one left alone.
# The test scaler `block` holds a step at a known point.
# usage: stop_eval.sh AMPTRAIN CONFIG_DIR WORK_DIR BAD_PLUGIN_DIR
set -u
. "$(dirname "$0")/lib.sh"
A=$1 C=$2 W=$3
export AMPTRAIN_PLUGIN_PATH=$4
SGD=$(cd "$(dirname "$0")" && pwd)/tiny_sgd.ini
rm -rf "$W" && mkdir -p "$W" || exit 1
BLOCK=(--set scaler.plugin=block)

# cpu_s PID: the CPU seconds PID has used (utime + stime)
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"; }
# wait_grep PATTERN FILE PID SECONDS: until FILE has a line matching PATTERN
wait_grep() {
    local i
    for i in $(seq 1 $(($4 * 100))); do
        grep -q "$1" "$2" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || { grep -q "$1" "$2" 2>/dev/null; return; }
        sleep 0.01
    done
    return 1
}

# --- a long evaluation stops early ------------------------------------------
D=$W/long
AMP_BLOCK_STEP=0 AMP_BLOCK_READY=$W/long.ready AMP_BLOCK_RELEASE=$W/long.release \
    "$A" train "$C/gpt_shakespeare_fp32.ini" "${BLOCK[@]}" --set run.device=cpu \
    --set data.eval_iters=1048576 --set train.eval_every=1 --set train.steps=3 --out "$D" \
    2>"$W/long.log" &
pid=$!
trap 'kill -KILL "$pid" 2>/dev/null' EXIT
for i in $(seq 1 12000); do [ -e "$W/long.ready" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
[ -e "$W/long.ready" ] || fail "long: the run never reached step 0: $(tail -3 "$W/long.log")"
t=$(cpu_s "$pid")
touch "$W/long.release"
# in the evaluation: a second of CPU after step 0's update (a step takes ms)
for i in $(seq 1 12000); do
    awk -v a="$(cpu_s "$pid")" -v b="$t" 'BEGIN { exit !(a - b >= 1) }' && break
    kill -0 "$pid" 2>/dev/null || fail "long: the run ended during its evaluation: $(tail -3 "$W/long.log")"
    sleep 0.01
done
kill -TERM "$pid"
wait_grep "amptrain: SIGTERM: stopping after the current step" "$W/long.log" "$pid" 10 ||
    fail "long: no word within 10 s of SIGTERM during the evaluation: $(tail -3 "$W/long.log")"
timeout 60 tail --pid="$pid" -f /dev/null ||
    fail "long: still evaluating 60 s after SIGTERM: $(tail -3 "$W/long.log")"
wait "$pid"
rc=$?
trap - EXIT
[ "$rc" = 143 ] || fail "long: exit $rc after SIGTERM, expected 143: $(tail -3 "$W/long.log")"
grep -q "stopped by SIGTERM after step 1 of 3; checkpoint $D/checkpoints/ckpt-00000001.amp" \
    "$W/long.log" || fail "long: no checkpoint of step 1: $(tail -3 "$W/long.log")"
! grep -q '"test_loss"' "$D/metrics.jsonl" || fail "long: the evaluation cut short was logged"
echo "long evaluation: said so at once, stopped at its next batch, checkpointed step 1 (exit 143)"

# --- resume runs the evaluation the stop cut short --------------------------
SET=(--set train.eval_every=1 --set train.steps=30)
REF=$W/ref
"$A" train "$SGD" "${SET[@]}" "${BLOCK[@]}" --out "$REF" 2>"$W/ref.log" || fail "reference run failed: $(tail -3 "$W/ref.log")"
D=$W/cut
# the signal comes while step 0 is held, so it meets the evaluation of step
# 1 at its first batch
AMP_BLOCK_STEP=0 AMP_BLOCK_READY=$W/cut.ready AMP_BLOCK_RELEASE=$W/cut.release \
    "$A" train "$SGD" "${SET[@]}" "${BLOCK[@]}" --out "$D" 2>"$W/cut.log" &
pid=$!
for i in $(seq 1 12000); do [ -e "$W/cut.ready" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
[ -e "$W/cut.ready" ] || fail "cut: the run never reached step 0: $(tail -3 "$W/cut.log")"
kill -TERM "$pid"
wait_grep "amptrain: SIGTERM: stopping" "$W/cut.log" "$pid" 10 || fail "cut: no word after SIGTERM"
touch "$W/cut.release"
wait "$pid"
rc=$?
[ "$rc" = 143 ] || fail "cut: exit $rc after SIGTERM, expected 143: $(tail -3 "$W/cut.log")"
! grep -q '"test_loss"' "$D/metrics.jsonl" || fail "cut: the evaluation cut short was logged"
"$A" train "$SGD" "${SET[@]}" "${BLOCK[@]}" --resume "$D" 2>"$W/cut.resume.log" ||
    fail "cut: --resume failed: $(tail -3 "$W/cut.resume.log")"
same_outputs "$REF" "$D"
echo "evaluation cut short at step 1: not logged; --resume ran it first and matches the run left alone"
