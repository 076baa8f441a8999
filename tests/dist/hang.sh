#!/bin/bash
# A rank that stops answering (rank 1 sleeps before its third step): rank 0
# gives up after [dist] timeout = 2 s, says so, and the whole job ends,
# well within 30 s. Then a rank that fails alone mid-run (test_dist fail):
# it says so and the job ends at once. Then a gradient collective that fails
# on rank 1 (test_dist fail_collective): rank 1 names it, closes its
# session without waiting for the peers, and the job ends within the timeout.
# usage: hang.sh MPIRUN TEST_DIST
set -u
. "$(dirname "$0")/lib.sh"
MPIRUN=$1
need_mpirun "$MPIRUN"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# run CASE: test_dist CASE on 2 ranks into $log; sets rc and dt (seconds)
run() {
    local t0
    t0=$(date +%s)
    mpi 2 "$TEST_DIST" "$1" >"$log" 2>&1
    rc=$?
    dt=$(($(date +%s) - t0))
}
TEST_DIST=$2
run hang
[ "$rc" != 0 ] || fail "the job exited 0 although rank 1 hung"
[ "$dt" -le 30 ] || fail "the job took $dt s to end after rank 1 hung (timeout 2 s)"
grep -q "rank 0: no word from the other ranks for [0-9]* s in the gradient reduce-scatter at step 3 .*; stopping all ranks" "$log" ||
    fail "no clear message from rank 0: $(cat "$log")"
echo "hung rank 1: rank 0 stopped the job after $dt s (exit $rc):"
grep "no word" "$log"

# A rank that fails alone (an error only it meets) stops the others at once.
run fail
[ "$rc" != 0 ] || fail "the job exited 0 although rank 1 failed"
[ "$dt" -le 30 ] || fail "the job took $dt s to end after rank 1 failed"
grep -q "amptrain: rank 1 failed (exit 1); stopping all ranks" "$log" ||
    fail "no message from the failing rank: $(cat "$log")"
! grep -q "amp_dist_exit returned\|went unnoticed" "$log" || fail "the job went on: $(cat "$log")"
echo "rank 1 failed alone: the job ended after $dt s (exit $rc)"

# A failed collective on one rank (the transport's error path).
run fail_collective
[ "$rc" != 0 ] || fail "the job exited 0 although rank 1's collective failed"
[ "$dt" -le 30 ] || fail "the job took $dt s to end after rank 1's collective failed (timeout 5 s)"
grep -q "amptrain: rank 1: .*the gradient collective of bucket 0 failed at step 3" "$log" ||
    fail "rank 1 did not name the failed collective: $(cat "$log")"
grep -q "rank 1: session closed after the failed collective" "$log" ||
    fail "rank 1 did not close its session: $(cat "$log")"
grep -q "amptrain: rank 1 failed (exit 1); stopping all ranks" "$log" ||
    fail "rank 1 did not stop the job: $(cat "$log")"
! grep -q "went unnoticed" "$log" || fail "the job went on: $(cat "$log")"
echo "rank 1's collective failed: the job ended after $dt s (exit $rc)"
