#!/bin/bash
# `mpirun -np 2 amptrain train` through the CLI: rank 0 alone writes the
# outputs, metrics.csv and with [run] tensorboard the event file included
# (rank 1 runs in another folder, where nothing must appear), the
# summary says 2 ranks over MPI, two 2-rank runs give the same files, and
# 2 ranks x batch B give the same weights and metrics as one process with
# accumulate 2. A config error stops every rank with one message and exit 2;
# ranks started with different settings are refused (exit 2); a rank that
# fails alone while opening stops all ranks with its own message.
# usage: cli.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
dist_start "$@"
mkdir -p "$W/r0" "$W/r1" || exit 1
cfg=$HERE/tiny.ini

# rank 0 in r0/, rank 1 in r1/ (MPMD), both told --out out
two_ranks() { # OUT [args]
    local out=$1
    shift
    local extra=(--oversubscribe)
    [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
    "$MPIRUN" "${extra[@]}" -np 1 -wdir "$W/r0" "$A" train "$cfg" --out "$out" "$@" : \
        -np 1 -wdir "$W/r1" "$A" train "$cfg" --out "$out" "$@"
}

two_ranks a --set run.tensorboard=true 2>"$W/a.log" || fail "2-rank run failed: $(tail -5 "$W/a.log")"
for f in config.ini metrics.jsonl metrics.csv summary.json weights.safetensors; do
    [ -f "$W/r0/a/$f" ] || fail "rank 0 did not write $f"
done
[ "$(find "$W/r0/a/tensorboard" -name 'events.out.tfevents.*' | wc -l)" = 1 ] || fail "rank 0 did not write one event file"
[ -z "$(ls -A "$W/r1")" ] || fail "rank 1 wrote into its folder: $(ls -R "$W/r1")"
grep -q '"world_size": 2,' "$W/r0/a/summary.json" || fail "summary.json does not say world_size 2"
grep -q '"dist_transport": "mpi",' "$W/r0/a/summary.json" || fail "summary.json does not say mpi"
grep -Eq '"median_comm_ms": [0-9.e+-]+' "$W/r0/a/summary.json" || fail "no median_comm_ms"
[ "$(grep -c 'test_acc .* 120 steps' "$W/a.log")" = 1 ] || fail "not one final line: $(cat "$W/a.log")"
[ "$(grep -c '^step 1/120' "$W/a.log")" = 1 ] || fail "progress printed more than once"
! grep -q "rank 1" "$W/a.log" || fail "rank 1 spoke: $(grep 'rank 1' "$W/a.log")"
grep -q "on 2 ranks x $AMPTRAIN_THREADS thread(s) (" "$W/a.log" ||
    fail "the start line does not say the threads per rank: $(grep 'on 2 ranks' "$W/a.log")"
echo "2 ranks: outputs from rank 0 only, summary world_size 2 over mpi"

two_ranks b --set run.tensorboard=true 2>"$W/b.log" || fail "second 2-rank run failed: $(tail -5 "$W/b.log")"
same_outputs "$W/r0/a" "$W/r0/b"
echo "two 2-rank runs: identical outputs (timings masked)"

"$A" train "$cfg" --set train.accumulate=2 --out "$W/one" 2>"$W/one.log" ||
    fail "1-process run failed: $(tail -3 "$W/one.log")"
cmp "$W/r0/a/weights.safetensors" "$W/one/weights.safetensors" ||
    fail "2 ranks x 16 and 1 process x 16 x accumulate 2 end with different weights"
cmp <(mask "$W/r0/a/metrics.jsonl") <(mask "$W/one/metrics.jsonl") ||
    fail "2 ranks x 16 and 1 process x 16 x accumulate 2 log different metrics"
echo "2 ranks x batch 16 == 1 process x batch 16 x accumulate 2: same weights and metrics"

AMPTRAIN_LOG=debug mpi 2 "$A" train "$cfg" --set train.steps=20 --out "$W/debug" 2>"$W/debug.log" ||
    fail "the debug run failed: $(tail -3 "$W/debug.log")"
[ "$(grep -c 'replica check after step [0-9]*: all 2 ranks hold the same state' "$W/debug.log")" = 2 ] ||
    fail "AMPTRAIN_LOG=debug did not check the replicas every 10 steps: $(grep replica "$W/debug.log")"
grep -q 'gradients of [0-9]* parameters in 1 bucket of about 1024 KiB, as f32 over mpi' "$W/debug.log" ||
    fail "no bucket plan in the debug log"
echo "AMPTRAIN_LOG=debug: replica check at steps 10 and 20"

mpi 2 "$A" train "$cfg" --set dist.grad_dtype=bf16 --set train.steps=20 --out "$W/bf16" 2>"$W/bf16.log" ||
    fail "the bf16 run failed: $(tail -3 "$W/bf16.log")"
grep -q '"dist_buffer_bytes": [1-9]' "$W/bf16/summary.json" || fail "no bf16 send buffer in the summary"

printf '[optim]\nlr = fast\n' >"$W/bad.ini"
mpi 2 "$A" train "$W/bad.ini" --out "$W/bad" >"$W/bad.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "a config error on 2 ranks gave exit $rc, expected 2: $(cat "$W/bad.log")"
[ "$(grep -c "bad.ini:2: \[optim\] lr = 'fast': not a number" "$W/bad.log")" = 1 ] ||
    fail "not exactly one config error message: $(cat "$W/bad.log")"
echo "config error on 2 ranks: exit 2, one message"

two_ranks_differ() { # OUT RANK1_ARGS...: rank 1 gets extra arguments
    local out=$1
    shift
    local extra=(--oversubscribe)
    [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
    "$MPIRUN" "${extra[@]}" -np 1 -wdir "$W/r0" "$A" train "$cfg" --out "$out" : \
        -np 1 -wdir "$W/r1" "$A" train "$cfg" --out "$out" "$@"
}
two_ranks_differ lr --set optim.lr=0.5 >"$W/lr.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "ranks with different configs gave exit $rc, expected 2: $(cat "$W/lr.log")"
[ "$(grep -c 'the ranks were started with different settings.*resolved config: rank 0 [0-9a-f]* rank 1' "$W/lr.log")" = 1 ] ||
    fail "not one clear message for different configs: $(cat "$W/lr.log")"
[ ! -e "$W/r0/lr" ] || fail "the refused run created its output folder"
echo "2 ranks with different settings: refused (exit 2), one message"

two_ranks_differ nodata --set data.dataset=fashion_mnist --set data.path=/nonexistent >"$W/nodata.log" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "a rank that cannot load its data gave exit $rc, expected 1: $(cat "$W/nodata.log")"
grep -q '^amptrain: rank 1: .*/nonexistent' "$W/nodata.log" || fail "rank 1 did not say why: $(cat "$W/nodata.log")"
[ "$(grep -c '^amptrain:' "$W/nodata.log")" = 1 ] || fail "more than one message: $(cat "$W/nodata.log")"
echo "rank 1 cannot load its data: both ranks exit 1 with rank 1's message"
