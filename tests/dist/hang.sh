#!/bin/bash
# A rank that stops answering (rank 1 sleeps before its third step): rank 0
# gives up after [dist] timeout = 2 s, says so, and the whole job ends,
# well within 30 s. Then a rank that fails alone mid-run (test_dist fail):
# it says so and the job ends at once.
# usage: hang.sh MPIRUN TEST_DIST
set -u
. "$(dirname "$0")/lib.sh"
MPIRUN=$1
need_mpirun "$MPIRUN"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
t0=$(date +%s)
mpi 2 "$2" hang >"$log" 2>&1
rc=$?
dt=$(($(date +%s) - t0))
[ "$rc" != 0 ] || fail "the job exited 0 although rank 1 hung"
[ "$dt" -le 30 ] || fail "the job took $dt s to end after rank 1 hung (timeout 2 s)"
grep -q "rank 0: no word from the other ranks for [0-9]* s in the gradient reduce-scatter at step 3 .*; stopping all ranks" "$log" ||
    fail "no clear message from rank 0: $(cat "$log")"
echo "hung rank 1: rank 0 stopped the job after $dt s (exit $rc):"
grep "no word" "$log"

# A rank that fails alone (an error only it meets) stops the others at once.
t0=$(date +%s)
mpi 2 "$2" fail >"$log" 2>&1
rc=$?
dt=$(($(date +%s) - t0))
[ "$rc" != 0 ] || fail "the job exited 0 although rank 1 failed"
[ "$dt" -le 30 ] || fail "the job took $dt s to end after rank 1 failed"
grep -q "amptrain: rank 1 failed (exit 1); stopping all ranks" "$log" ||
    fail "no message from the failing rank: $(cat "$log")"
! grep -q "amp_dist_exit returned\|went unnoticed" "$log" || fail "the job went on: $(cat "$log")"
echo "rank 1 failed alone: the job ended after $dt s (exit $rc)"
