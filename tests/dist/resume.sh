#!/bin/bash
# Kill/resume on 2 ranks: SIGTERM to mpirun mid-run (mpirun passes it to
# both ranks; they agree on the step to stop after, rank 0 writes the
# checkpoint, both exit 143), then `mpirun -np 2 ... --resume` ends with the
# same files as the same 2-rank run left alone. A checkpoint of 2 ranks is
# refused on 1, and one of 1 on 2 (exit 2, the message says how to resume).
# usage: resume.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
dist_start "$@"
cfg=$HERE/tiny.ini
# On SIGTERM, OpenMPI 4's mpirun waits odls_base_sigkill_timeout seconds
# (1 by default), sends the ranks SIGTERM, waits as long again and sends
# SIGKILL: the ranks get that long to finish the step and the checkpoint.
export OMPI_MCA_odls_base_sigkill_timeout=2
# Long enough that SIGTERM (which mpirun passes on only after the timeout
# above) arrives mid-run: about 12 s a run on this build and machine, from a
# 20000-step run timed first. A fixed count cannot fit both ends: 200000
# steps took about 12 s on the release build and 300 s under AddressSanitizer
# (the three runs then passed the test's 900 s), and 30000 steps (1.8 s)
# ended before the forwarded signal. Progress every 5000 steps: with a line
# every 50, the ranks' "stopped by" message was lost in mpirun's output
# forwarding during its shutdown (seen, not solved).
per=(--set train.checkpoint_every=200 --set train.log_every=5000)
t0=$(date +%s%N)
mpi 2 "$A" train "$cfg" --set train.steps=20000 "${per[@]}" --out "$W/timing" 2>"$W/timing.log" ||
    fail "the 20000-step timing run failed: $(tail -3 "$W/timing.log")"
ns=$(($(date +%s%N) - t0))
steps=$((12000000000 * 20000 / (ns > 0 ? ns : 1)))
[ "$steps" -ge 20000 ] || steps=20000
[ "$steps" -le 1000000 ] || steps=1000000
echo "20000 steps took $((ns / 1000000)) ms: $steps steps a run"
args=(--set train.steps=$steps "${per[@]}")

mpi 2 "$A" train "$cfg" "${args[@]}" --out "$W/ref" 2>"$W/ref.log" ||
    fail "the uninterrupted 2-rank run failed: $(tail -3 "$W/ref.log")"
mpi_bg 2 "$A" train "$cfg" "${args[@]}" --out "$W/run" 2>"$W/stop.log"
pid=$MPI_PID
wait_for_ckpt "$W/run" "$pid" || fail "no checkpoint appeared: $(tail -3 "$W/stop.log")"
sleep "1.$((RANDOM % 5))"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" != 0 ] || fail "the run finished before SIGTERM arrived; raise train.steps"
grep -Eq "stopped by SIGTERM after step [0-9]+ of $steps; checkpoint .*ckpt-[0-9]{8}\.amp" "$W/stop.log" ||
    fail "no 'stopped by SIGTERM' message: $(tail -5 "$W/stop.log")"
grep -q -- "continue with: mpirun -np 2 amptrain train --resume $W/run" "$W/stop.log" ||
    fail "the message does not say how to resume: $(grep continue "$W/stop.log")"
[ "$(grep -c 'stopped by' "$W/stop.log")" = 1 ] || fail "more than one rank reported the stop"
no_outputs "$W/run"
at=$(sed -nE 's/.*after step ([0-9]+) of.*/\1/p' "$W/stop.log")
ck=$W/run/checkpoints/ckpt-$(printf %08d "$at").amp
[ -f "$ck" ] || fail "stopped at step $at but there is no checkpoint of that step"

"$A" train "$cfg" "${args[@]}" --resume "$W/run" >"$W/one.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "resuming a 2-rank checkpoint in 1 process gave exit $rc, expected 2"
grep -q "written by a run on 2 ranks, and this run has 1.*Resume it with mpirun -np 2" "$W/one.log" ||
    fail "no clear refusal on 1 process: $(cat "$W/one.log")"
echo "2-rank checkpoint on 1 process: refused (exit 2)"

mpi 2 "$A" train "$cfg" "${args[@]}" --resume "$W/run" 2>"$W/resume.log" ||
    fail "--resume on 2 ranks failed: $(tail -3 "$W/resume.log")"
grep -q "resuming from .*ckpt-$(printf %08d "$at").amp: step $at of" "$W/resume.log" ||
    fail "did not resume from step $at"
same_outputs "$W/ref" "$W/run"
echo "SIGTERM to mpirun at step $at, resumed on 2 ranks: outputs identical to the uninterrupted run"

"$A" train "$cfg" --set train.steps=300 --set train.checkpoint_every=100 --out "$W/single" \
    2>"$W/single.log" || fail "1-process run failed"
mpi 2 "$A" train "$cfg" --set train.steps=300 --set train.checkpoint_every=100 \
    --resume "$W/single" >"$W/two.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "resuming a 1-process checkpoint on 2 ranks gave exit $rc, expected 2"
[ "$(grep -c "written by a run on 1 rank, and this run has 2" "$W/two.log")" = 1 ] ||
    fail "not one clear refusal on 2 ranks: $(cat "$W/two.log")"
echo "1-process checkpoint on 2 ranks: refused (exit 2)"
