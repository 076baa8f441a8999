#!/bin/bash
# Nothing a run keeps grows with [train] steps: a run of 10^12 steps starts,
# trains, and a SIGTERM stops it with a checkpoint (amptrain once allocated
# per-step arrays up front and failed with "out of host memory"). And
# median_step_ms, a bounded streaming median past 4096 steps (amp_median),
# still lies between the quartiles of the step times the run logged.
# usage: huge_steps.sh AMPTRAIN CONFIG_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
A=$1 W=$3
CFG=$(cd "$(dirname "$0")" && pwd)/tiny_sgd.ini
rm -rf "$W" && mkdir -p "$W" || exit 1

D=$W/huge
"$A" train "$CFG" --set train.steps=1000000000000 --set train.checkpoint_every=20 --out "$D" \
    2>"$W/huge.log" &
pid=$!
wait_for_ckpt "$D" "$pid" || fail "huge: no checkpoint; the run said: $(tail -3 "$W/huge.log")"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 143 ] || fail "huge: exit $rc after SIGTERM, expected 143: $(tail -3 "$W/huge.log")"
grep -q "stopped by SIGTERM after step [0-9]* of 1000000000000; checkpoint" "$W/huge.log" ||
    fail "huge: no stop message: $(tail -3 "$W/huge.log")"
"$A" checkpoints "$D" >/dev/null || fail "huge: a damaged checkpoint"
echo "10^12 steps: $(grep -o 'stopped by SIGTERM after step [0-9]*' "$W/huge.log"), checkpointed"

# past the median's exact range: 5000 steps, every one logged
D=$W/median
"$A" train "$CFG" --set train.steps=5000 --set train.log_every=1 --out "$D" 2>"$W/median.log" ||
    fail "median: the run failed: $(tail -3 "$W/median.log")"
med=$(value "$D" median_step_ms)
sed -nE 's/.*"step_ms":([0-9.eE+-]+).*/\1/p' "$D/metrics.jsonl" | sort -g >"$W/ms"
n=$(wc -l <"$W/ms")
[ "$n" = 5000 ] || fail "median: $n step times logged, expected 5000"
q1=$(sed -n "$((n / 4))p" "$W/ms") q3=$(sed -n "$((3 * n / 4))p" "$W/ms")
awk -v m="$med" -v a="$q1" -v b="$q3" 'BEGIN { exit !(m >= a && m <= b) }' ||
    fail "median: median_step_ms $med is outside the quartiles [$q1, $q3] of the logged step times"
echo "median_step_ms $med lies within the logged quartiles [$q1, $q3]"
