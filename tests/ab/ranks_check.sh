#!/bin/bash
# `amptrain ab --ranks 2`: every run is `mpirun -np 2 amptrain train`, the
# study produces its ab.json (checked against the schema) and report, every
# run's summary says 2 ranks and the report's memory panel is per rank. A bad
# --ranks value, or no mpirun on PATH, is a usage error (exit 2) before any
# run. A rank killed in the middle of an arm ends the study within 30 s with
# exit 1, naming the arm, the seed and what mpirun saw; no rank is left.
# usage: ranks_check.sh MPIRUN AMPTRAIN TEST_AB_CHECK CONFIG_A CONFIG_B WORKDIR
set -u
MPIRUN=$1 A=$2 CHECK=$3 CA=$4 CB=$5 W=$6
# the mpi tests' environment: copies through the shared segment (containers)
# and, under AddressSanitizer, OpenMPI's own leaks suppressed by library
. "$(dirname "$0")/../dist/lib.sh"
need_mpirun "$MPIRUN"
rm -rf "$W" && mkdir -p "$W" || exit 1
# ab finds mpirun on PATH: put the one the build found first
PATH=$(dirname "$(command -v "$MPIRUN")"):$PATH

"$A" ab "$CA" "$CB" --seeds 2 --ranks 2 --set run.device=cpu --out "$W/study" >"$W/study.out" 2>"$W/study.log" ||
    fail "ab --ranks 2 failed: $(tail -3 "$W/study.log")"
grep -q 'every run on 2 ranks' "$W/study.log" || fail "ab did not say the runs are on 2 ranks: $(head -3 "$W/study.log")"
"$CHECK" "$W/study" 2 --same-start || fail "ab.json of the 2-rank study does not pass the schema check"
grep -q '"ranks": 2,' "$W/study/ab.json" || fail "ab.json lacks \"ranks\": 2"
n=$(grep -l '"world_size": 2,' "$W"/study/runs/*/seed-*/summary.json | wc -l)
[ "$n" = 4 ] || fail "$n of 4 runs' summaries say world_size 2"
grep -q 'Peak memory per category, per rank (2 ranks)' "$W/study/report.html" ||
    fail "the report's memory panel is not per rank"
grep -q 'every run on <b>2</b> ranks' "$W/study/report.html" || fail "the report's header does not say 2 ranks"
echo "ab --ranks 2: 2 arms x 2 seeds, each run on 2 ranks; ab.json and report.html written, memory per rank"

for bad in 0 -1 two 1025 2x; do
    "$A" ab "$CA" "$CB" --ranks "$bad" --set run.device=cpu --out "$W/bad" >"$W/bad.log" 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "--ranks '$bad' gave exit $rc, expected 2: $(cat "$W/bad.log")"
    grep -q "^amptrain ab: --ranks '$bad': expected an integer in \[1, 1024\]" "$W/bad.log" ||
        fail "--ranks '$bad': no clear message: $(cat "$W/bad.log")"
done
"$A" ab "$CA" "$CB" --ranks '' --set run.device=cpu --out "$W/bad" >"$W/bad.log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q '^amptrain ab: --ranks needs a value' "$W/bad.log" ||
    fail "--ranks '' gave exit $rc: $(cat "$W/bad.log")"
[ ! -e "$W/bad" ] || fail "a refused study created its output folder"
echo "--ranks 0, -1, two, 1025, 2x, '': exit 2 with the accepted range"

PATH=/nonexistent "$A" ab "$CA" "$CB" --ranks 2 --set run.device=cpu --out "$W/nompi" >"$W/nompi.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "--ranks 2 without mpirun on PATH gave exit $rc, expected 2: $(cat "$W/nompi.log")"
grep -q '^amptrain ab: --ranks 2: no mpirun on PATH' "$W/nompi.log" || fail "no clear message: $(cat "$W/nompi.log")"
[ ! -e "$W/nompi" ] || fail "the refused study created its output folder"
echo "--ranks 2 without mpirun on PATH: exit 2, says so"

# the tiny set is 32 steps of 128 rows on one rank: 64 ranks leave no step
"$A" ab "$CA" "$CB" --ranks 64 --set run.device=cpu --out "$W/many" >"$W/many.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "--ranks 64 on the tiny set gave exit $rc, expected 2: $(cat "$W/many.log")"
grep -q 'on 64 ranks a step takes .* examples, but the training set has only' "$W/many.log" ||
    fail "--ranks 64: no clear message: $(cat "$W/many.log")"
echo "--ranks 64 with fewer steps than ranks per epoch: exit 2 before any run"

# one rank killed while the first arm trains
"$A" ab "$CA" "$CB" --seeds 1 --ranks 2 --set run.device=cpu --set train.steps=100000000 \
    --out "$W/kill" >"$W/kill.out" 2>"$W/kill.log" &
ab=$!
trap 'kill -KILL $ab 2>/dev/null' EXIT
for _ in $(seq 1 600); do
    grep -q "^step " "$W"/kill/runs/*/seed-*/train.log 2>/dev/null && break
    sleep 0.05
done
grep -q "^step " "$W"/kill/runs/*/seed-*/train.log 2>/dev/null || fail "no run started: $(cat "$W/kill.log")"
mpirun_pid=$(pgrep -P "$ab")
[ -n "$mpirun_pid" ] || fail "no mpirun under ab (pid $ab)"
. "$(dirname "$0")/../dist/rank_procs.sh"
rank_pids "$mpirun_pid"
[ -n "$R1" ] && [ -n "$R0" ] || fail "could not find the rank processes under mpirun $mpirun_pid"
t0=$(date +%s)
kill -KILL "$R1"
wait_end "$ab" 300
dt=$(($(date +%s) - t0))
[ -n "$RC" ] || fail "rank 1 was killed $dt s ago and ab still runs"
[ "$RC" = 1 ] || fail "ab exited $RC after a rank was killed, expected 1: $(tail -3 "$W/kill.log")"
for _ in $(seq 1 50); do alive "$R0" || alive "$mpirun_pid" || break; sleep 0.1; done
! alive "$R0" || fail "rank 0 (pid $R0) outlived the study"
! alive "$mpirun_pid" || fail "mpirun (pid $mpirun_pid) outlived the study"
grep -Eq "^amptrain ab: arm '[^']+' seed [0-9]+ failed: exit status [0-9]+; its log: .*train.log$" "$W/kill.log" ||
    fail "no message naming the arm and seed: $(tail -4 "$W/kill.log")"
grep -q "^  last line: mpirun noticed that process rank 1 .* exited on signal 9" "$W/kill.log" ||
    fail "the message does not say what mpirun saw: $(tail -4 "$W/kill.log")"
[ ! -e "$W/kill/ab.json" ] || fail "a failed study wrote ab.json"
echo "rank 1 killed: ab ended in $dt s with exit 1:"
tail -2 "$W/kill.log"
