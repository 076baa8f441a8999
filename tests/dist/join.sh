#!/bin/bash
# A rank that never joins: the others give up after [dist] timeout = 2 s with
# a clear message (they used to wait forever), and the job ends well within
# 30 s, with no rank process left.
#  - rank 1 never starts MPI (it sleeps before amptrain starts): rank 0 waits
#    in MPI_Init, whose launcher fence has no timeout of its own;
#  - rank 1 is stuck while it starts (the test scaler `block` holds it in its
#    plugin's init): rank 0 names rank 1 as the one that did not join.
# usage: join.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR BAD_PLUGIN_DIR
set -u
. "$(dirname "$0")/lib.sh"
dist_start "$@"
export AMPTRAIN_PLUGIN_PATH=$5

# late JOB_NAME RANK1_SETUP [train args...]: runs the job with RANK1_SETUP
# run in rank 1's shell first; checks it ends (bounded), non-zero, leaving no
# rank behind
late() {
    local name=$1 setup=$2
    shift 2
    local t0 rc dt
    t0=$(date +%s)
    timeout 120 "$MPIRUN" --oversubscribe $([ "$(id -u)" = 0 ] && echo --allow-run-as-root) \
        -np 2 -x AMPTRAIN_PLUGIN_PATH \
        sh -c "if [ \"\$OMPI_COMM_WORLD_RANK\" = 1 ]; then $setup; fi; exec \"\$0\" \"\$@\"" \
        "$A" train "$HERE/tiny.ini" --set dist.timeout=2 --out "$W/$name" "$@" >"$W/$name.log" 2>&1
    rc=$?
    dt=$(($(date +%s) - t0))
    [ "$rc" != 124 ] || fail "$name: the job still ran after 120 s: $(head -5 "$W/$name.log")"
    [ "$rc" != 0 ] || fail "$name: the job exited 0 although rank 1 never joined"
    [ "$dt" -le 30 ] || fail "$name: the job took $dt s to end (timeout 2 s)"
    ! pgrep -f -- "--out $W/$name" >/dev/null || fail "$name: a rank process is left"
    echo "$name: ended after $dt s (exit $rc)"
}

late before_mpi "sleep 60"
grep -q "amptrain: rank 0: not all 2 ranks joined MPI within \[dist\] timeout = 2 s" "$W/before_mpi.log" ||
    fail "before_mpi: no clear message from rank 0: $(head -5 "$W/before_mpi.log")"
grep "amptrain: rank 0" "$W/before_mpi.log"

late in_start "export AMP_BLOCK_INIT=train AMP_BLOCK_RELEASE=$W/never" --set scaler.plugin=block
grep -q "amptrain: rank 0: rank 1 of 2 did not join within \[dist\] timeout = 2 s" "$W/in_start.log" ||
    fail "in_start: rank 0 did not name rank 1: $(head -5 "$W/in_start.log")"
grep "amptrain: rank 0" "$W/in_start.log"
