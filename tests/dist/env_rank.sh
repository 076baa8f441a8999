#!/bin/bash
# A bad AMPTRAIN_* value on one rank under mpirun is refused before MPI
# starts, and the message says which rank (from the launcher's variables:
# OMPI_COMM_WORLD_RANK here); the job ends, not 0, with no rank left.
# usage: env_rank.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
dist_start "$@"

# bad_on RANK: AMPTRAIN_THREADS=garbage on RANK only
bad_on() {
    local r=$1
    timeout 120 "$MPIRUN" --oversubscribe $([ "$(id -u)" = 0 ] && echo --allow-run-as-root) -np 2 \
        sh -c "if [ \"\$OMPI_COMM_WORLD_RANK\" = $r ]; then export AMPTRAIN_THREADS=garbage; fi; exec \"\$0\" \"\$@\"" \
        "$A" train "$HERE/tiny.ini" --set dist.timeout=20 --out "$W/bad$r" >"$W/bad$r.log" 2>&1
    local rc=$?
    [ "$rc" != 124 ] || fail "rank $r: the job still ran after 120 s: $(head -5 "$W/bad$r.log")"
    [ "$rc" != 0 ] || fail "rank $r: the job exited 0 with AMPTRAIN_THREADS=garbage"
    grep -q "^amptrain: rank $r: AMPTRAIN_THREADS=garbage: expected an integer in \[1, 1024\]$" "$W/bad$r.log" ||
        fail "rank $r: the message does not name the rank: $(grep -i garbage "$W/bad$r.log")"
    ! pgrep -f -- "--out $W/bad$r" >/dev/null || fail "rank $r: a rank process is left"
    echo "ok  AMPTRAIN_THREADS=garbage on rank $r: '$(grep -m1 garbage "$W/bad$r.log")'"
}
bad_on 1
bad_on 0
