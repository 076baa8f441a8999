#!/bin/bash
# Signals and streams (issue 15), each case at a known point: the test
# scaler `block` (tests/bad_plugins/block.c) holds the run inside a step
# until the test lets it go, so no case depends on guessing a moment.
#  - a second signal stops at once and still removes what the run was
#    writing (its temporaries): nothing but the lock file is left;
#  - SIGPIPE (`train ... | head -c1`) stops like SIGTERM: exit 141, a
#    checkpoint, the metrics history, and --resume ends identical to a run
#    left alone;
#  - Ctrl-C on `ab` (SIGINT to its whole process group, as a terminal sends
#    it) reaches the child once: the child finishes its step, checkpoints and
#    exits 130, and ab says the checkpoint is there.
# usage: signals.sh AMPTRAIN CONFIG_DIR WORK_DIR BAD_PLUGIN_DIR
set -u
. "$(dirname "$0")/lib.sh"
A=$1 W=$3 P=$4
HERE=$(cd "$(dirname "$0")" && pwd)
CFG=$HERE/tiny_sgd.ini
rm -rf "$W" && mkdir -p "$W" || exit 1
export AMPTRAIN_PLUGIN_PATH=$P
BLOCK=(--set scaler.plugin=block)

# wait_file FILE PID: until FILE exists (or PID exits, or 60 s)
wait_file() {
    local i
    for i in $(seq 1 6000); do
        [ -e "$1" ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

# --- a second signal: stop at once, remove the temporaries ----------------
D=$W/second
AMP_BLOCK_STEP=0 AMP_BLOCK_READY=$W/second.ready AMP_BLOCK_RELEASE=$W/never \
    "$A" train "$CFG" "${BLOCK[@]}" --out "$D" 2>"$W/second.log" &
pid=$!
wait_file "$W/second.ready" "$pid" || fail "second: the run never reached step 0: $(tail -3 "$W/second.log")"
ls "$D"/.metrics.jsonl.*.partial >/dev/null 2>&1 || fail "second: no metrics temporary to remove (test setup)"
# two different signals, so the kernel cannot merge them into one
kill -TERM "$pid"
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 130 ] || [ "$rc" = 143 ] || fail "second: exit $rc after two signals: $(tail -3 "$W/second.log")"
! grep -q "stopped by" "$W/second.log" || fail "second: the run did not stop at once: $(tail -3 "$W/second.log")"
left=$(ls -A "$D")
[ "$left" = ".amptrain.lock" ] || fail "second: the stopped run left files behind: $left"
echo "second signal: stopped at once (exit $rc), its temporaries removed"

# --- SIGPIPE: like SIGTERM ---------------------------------------------------
REF=$W/ref
"$A" train "$CFG" --set train.checkpoint_every=50 --out "$REF" 2>"$W/ref.log" ||
    fail "reference run failed: $(tail -3 "$W/ref.log")"
D=$W/pipe
# The progress lines go to a pipe whose reader leaves after one byte. ctest or
# a shell may start us with SIGPIPE ignored: give the run the default.
env --default-signal=PIPE "$A" train "$CFG" --set train.checkpoint_every=50 --out "$D" 2>&1 >/dev/null |
    head -c 1 >/dev/null
rc=${PIPESTATUS[0]}
[ "$rc" = 141 ] || fail "pipe: exit $rc when the reader of stderr left, expected 141 (128 + SIGPIPE)"
[ -n "$(newest_ckpt "$D")" ] || fail "pipe: no checkpoint after SIGPIPE"
[ -f "$D/metrics.jsonl" ] || fail "pipe: no metrics history after SIGPIPE"
no_outputs "$D"
"$A" checkpoints "$D" >/dev/null || fail "pipe: a damaged checkpoint"
"$A" train "$CFG" --set train.checkpoint_every=50 --resume "$D" 2>"$W/pipe.resume.log" ||
    fail "pipe: --resume failed: $(tail -3 "$W/pipe.resume.log")"
same_outputs "$REF" "$D"
echo "SIGPIPE: exit 141 with checkpoint $(basename "$(newest_ckpt "$D")"); the resumed run matches"

# --- ab: Ctrl-C reaches the child once ---------------------------------------
sed 's/^name = tiny_sgd$/name = tiny_sgd_b/' "$CFG" >"$W/b.ini"
cp "$CFG" "$W/a.ini"
S=$W/study
set -m # ab gets its own process group, as a terminal's foreground job has
AMP_BLOCK_STEP=0 AMP_BLOCK_READY=$W/ab.ready AMP_BLOCK_RELEASE=$W/ab.release \
    "$A" ab "$W/a.ini" "$W/b.ini" --seeds 1 "${BLOCK[@]}" --out "$S" 2>"$W/ab.log" &
abpid=$!
set +m
wait_file "$W/ab.ready" "$abpid" || fail "ab: the child never reached step 0: $(tail -3 "$W/ab.log")"
kill -INT -- "-$abpid" # the whole foreground group, as Ctrl-C does
sleep 0.2              # let a (wrongly) doubled signal land before the step ends
touch "$W/ab.release"
wait "$abpid"
rc=$?
[ "$rc" = 130 ] || fail "ab: exit $rc after Ctrl-C, expected 130: $(tail -3 "$W/ab.log")"
clog=$S/runs/tiny_sgd/seed-5/train.log
grep -q "stopped by SIGINT after step 1 of" "$clog" ||
    fail "ab: the child did not stop cleanly after its step: $(tail -3 "$clog")"
grep -q "stopped by SIGINT; its checkpoint of step 1 and its log are in" "$W/ab.log" ||
    fail "ab: no 'checkpoint and log are in' message: $(tail -3 "$W/ab.log")"
[ -f "$S/runs/tiny_sgd/seed-5/checkpoints/ckpt-00000001.amp" ] || fail "ab: the child wrote no checkpoint"
"$A" checkpoints "$S/runs/tiny_sgd/seed-5" >/dev/null || fail "ab: the child's checkpoint is damaged"
echo "ab: Ctrl-C reached the child once; it checkpointed step 1 and exited 130"
