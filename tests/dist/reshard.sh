#!/bin/bash
# A sharded run (ZeRO-1, fp32, AdamW) on 2 ranks stopped by SIGTERM, then
# resumed: on 2 ranks it ends with the uninterrupted run's files bit for
# bit; on 1 rank with batch_size 32 and on 4 ranks with batch_size 8 (the
# same 32 rows per step) the losses continue the uninterrupted run's, within
# FP32 summation order (the gradient sums split differently): every later
# step's loss within 1e-4 relative (measured 2026-12-02: 1.0e-5 on 1 rank,
# 1.7e-5 on 4, over 1400 steps). Another global batch
# is refused (exit 2) with the batch_size that keeps it.
# usage: reshard.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
dist_start "$@"
cfg=$W/fp32.ini
sed -e '/^growth_interval/d' -e 's/^plugin = dynamic/plugin = none/' \
    -e 's/^plugin = fp16/plugin = fp32/' "$HERE/tiny.ini" >"$cfg"
# a small lr keeps the loss far from 0 (relative differences mean something)
steps=1500
args=(--set model.hidden=128,64 --set optim.lr=0.0002 --set train.steps=$steps
      --set train.checkpoint_every=100 --set train.eval_every=0 --set train.log_every=1
      --set dist.shard=optimizer)

mpi 2 "$A" train "$cfg" "${args[@]}" --out "$W/ref" 2>"$W/ref.log" ||
    fail "the uninterrupted sharded run failed: $(tail -3 "$W/ref.log")"
mpi_bg 2 "$A" train "$cfg" "${args[@]}" --out "$W/run" 2>"$W/stop.log"
pid=$MPI_PID
wait_for_ckpt "$W/run" "$pid" || fail "no checkpoint appeared: $(tail -3 "$W/stop.log")"
# SIGTERM to the rank processes (mpirun's children): they agree on the step
kill -TERM $(pgrep -P "$pid") 2>/dev/null
wait "$pid"
at=$(sed -nE 's/.*stopped by SIGTERM after step ([0-9]+) of.*/\1/p' "$W/stop.log")
[ -n "$at" ] || fail "the run was not stopped by SIGTERM: $(tail -5 "$W/stop.log")"
no_outputs "$W/run"
for to in 1 2 4; do cp -r "$W/run" "$W/run-$to"; done

mpi 2 "$A" train "$cfg" "${args[@]}" --resume "$W/run-2" 2>"$W/resume-2.log" ||
    fail "resuming on 2 ranks failed: $(tail -3 "$W/resume-2.log")"
same_outputs "$W/ref" "$W/run-2"
echo "stopped at step $at, resumed on 2 ranks: the uninterrupted run's files, bit for bit"

"$A" train "$cfg" "${args[@]}" --resume "$W/run-1" >"$W/refused.log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "written by a run on 2 ranks, and this run has 1.*--set data.batch_size=32" "$W/refused.log" ||
    fail "another global batch on 1 rank: exit $rc, $(cat "$W/refused.log")"
echo "on 1 rank at batch_size 16: refused (exit 2), the message names batch_size=32"

# loss STEP lines of a metrics file, one "step loss" a line
losses() { sed -nE 's/^\{"step":([0-9]+),"epoch":[0-9]+,"loss":([^,]+),.*/\1 \2/p' "$1"; }
for to in 1 4; do
    b=$((32 / to))
    if [ $to = 1 ]; then
        "$A" train "$cfg" "${args[@]}" --set data.batch_size=$b --resume "$W/run-$to" 2>"$W/resume-$to.log"
    else
        mpi $to "$A" train "$cfg" "${args[@]}" --set data.batch_size=$b --resume "$W/run-$to" 2>"$W/resume-$to.log"
    fi || fail "resuming on $to rank(s) at batch_size $b failed: $(tail -3 "$W/resume-$to.log")"
    grep -q "resuming a checkpoint of 2 ranks on $to with the same 32 rows per step" "$W/resume-$to.log" ||
        fail "no warning that the sums split differently: $(head -5 "$W/resume-$to.log")"
    worst=$(join <(losses "$W/ref/metrics.jsonl") <(losses "$W/run-$to/metrics.jsonl") |
        awk -v at="$at" '$1 > at { d = ($2 - $3) / $2; if (d < 0) d = -d; if (d > m) m = d; n++ }
                         END { if (n == 0) print "none"; else printf "%.3g\n", m }')
    [ "$worst" != none ] || fail "no step after $at to compare on $to rank(s)"
    awk -v w="$worst" 'BEGIN { exit !(w <= 1e-4) }' ||
        fail "resumed on $to rank(s): the losses differ by up to $worst from the uninterrupted run's"
    echo "stopped at step $at, resumed on $to rank(s) at batch_size $b: every later loss within $worst (relative) of the uninterrupted run's"
done
