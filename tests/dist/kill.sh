#!/bin/bash
# One rank killed with SIGKILL mid-run: the other must not hang; the job
# ends with a non-zero status within 30 s and no rank process is left.
# Unsharded and sharded (ZeRO-1 and ZeRO-2, where rank 0 waits in the weights' gather
# or the checkpoint's), with checkpoints being written: every checkpoint
# left verifies (`amptrain checkpoints`; a temporary of one being written is
# not a checkpoint, and the next run in the folder removes it).
# usage: kill.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rank_procs.sh"
dist_start "$@"
unset OMPI_MCA_odls_base_sigkill_timeout
for shard in none optimizer gradients; do
    log=$W/run-$shard.log
    mpi_bg 2 "$A" train "$HERE/tiny.ini" --set train.steps=100000000 --set train.log_every=500 \
        --set train.checkpoint_every=50 --set train.keep=2 --set dist.shard=$shard \
        --out "$W/run-$shard" 2>"$log"
    pid=$MPI_PID
    for i in $(seq 1 1000); do
        grep -q '^step 500/' "$log" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || fail "shard=$shard: the run ended early: $(tail -3 "$log")"
        sleep 0.02
    done
    grep -q '^step 500/' "$log" || fail "shard=$shard: the run did not get going"
    # the rank processes are mpirun's children
    rank_pids "$pid"
    r1=$R1 r0=$R0
    [ -n "$r1" ] && [ -n "$r0" ] || fail "could not find the rank processes under mpirun $pid"
    t0=$(date +%s)
    kill -KILL "$r1"
    wait_end "$pid" 300
    rc=$RC
    dt=$(($(date +%s) - t0))
    if [ -z "$rc" ]; then
        kill -KILL "$pid" "$r0" 2>/dev/null
        fail "shard=$shard: rank 1 was killed $dt s ago and the job still runs"
    fi
    [ "$rc" != 0 ] || fail "shard=$shard: the job exited 0 after rank 1 was killed"
    # rank 0 is gone too
    for i in $(seq 1 50); do alive "$r0" || break; sleep 0.1; done
    ! alive "$r0" || fail "shard=$shard: rank 0 (pid $r0) is still running after the job ended"
    grep -q "exited on signal 9" "$log" || fail "shard=$shard: no message about the killed rank: $(tail -5 "$log")"
    # no checkpoint half-written: each verifies, and no temporary is left
    "$A" checkpoints "$W/run-$shard" >"$W/ckpts-$shard.log" 2>&1 ||
        fail "shard=$shard: a checkpoint does not verify: $(cat "$W/ckpts-$shard.log")"
    grep -q ' ok ' "$W/ckpts-$shard.log" || fail "shard=$shard: no checkpoint was written"
    ! grep -qv ' ok ' "$W/ckpts-$shard.log" || fail "shard=$shard: $(cat "$W/ckpts-$shard.log")"
    echo "shard=$shard: rank 1 killed with SIGKILL: the job ended in $dt s with exit $rc, $(grep -c ' ok ' "$W/ckpts-$shard.log") checkpoints left, all valid; mpirun says:"
    grep "exited on signal 9" "$log"
done
