#!/bin/bash
# One rank killed with SIGKILL mid-run: the other must not hang; the job
# ends with a non-zero status within 30 s and no rank process is left.
# usage: kill.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
MPIRUN=$1 A=$2 HERE=$3 W=$4
need_mpirun "$MPIRUN"
rm -rf "$W" && mkdir -p "$W" || exit 1
unset OMPI_MCA_odls_base_sigkill_timeout
mpi_bg 2 "$A" train "$HERE/tiny.ini" --set train.steps=100000000 --set train.log_every=500 \
    --out "$W/run" 2>"$W/run.log"
pid=$MPI_PID
for i in $(seq 1 1000); do
    grep -q '^step 500/' "$W/run.log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || fail "the run ended early: $(tail -3 "$W/run.log")"
    sleep 0.02
done
grep -q '^step 500/' "$W/run.log" || fail "the run did not get going"
# the rank processes are mpirun's children
. "$(dirname "$0")/rank_procs.sh"
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
    fail "rank 1 was killed $dt s ago and the job still runs"
fi
[ "$rc" != 0 ] || fail "the job exited 0 after rank 1 was killed"
# rank 0 is gone too
for i in $(seq 1 50); do alive "$r0" || break; sleep 0.1; done
! alive "$r0" || fail "rank 0 (pid $r0) is still running after the job ended"
grep -q "exited on signal 9" "$W/run.log" || fail "no message about the killed rank: $(tail -5 "$W/run.log")"
echo "rank 1 killed with SIGKILL: the job ended in $dt s with exit $rc; mpirun says:"
grep "exited on signal 9" "$W/run.log"
