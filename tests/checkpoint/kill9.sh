#!/bin/bash
# kill -9 at random moments, many times, with a checkpoint after every step
# (so most kills land inside a checkpoint write): after every kill each
# ckpt-*.amp is complete and valid, the next start resumes from the newest
# one without a warning, a killed writer's temporary is never taken for a
# checkpoint, and the run finally ends identical to an uninterrupted one.
# AMP_KILL_CYCLES sets the number of cycles (default 60).
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3
CFG=$CONFIGS/tiny_fp16_dynamic.ini
CYCLES=${AMP_KILL_CYCLES:-60}
rm -rf "$W" && mkdir -p "$W" || exit 1
SETS=(--set run.device=cpu --set train.steps=12000 --set train.keep=2)
EVERY=(--set train.checkpoint_every=1)

"$A" train "$CFG" "${SETS[@]}" --out "$W/ref" 2>"$W/ref.log" ||
    fail "reference run failed: $(tail -3 "$W/ref.log")"

D=$W/run
torn=0 resumed=0 last=0
for cycle in $(seq 1 "$CYCLES"); do
    newest=$(newest_ckpt "$D")
    # one log per cycle: a kill before the child opens it must not leave the
    # previous cycle's lines to be read as this one's
    log=$W/cycle-$cycle.log
    if [ -n "$newest" ]; then
        "$A" train "$CFG" "${SETS[@]}" "${EVERY[@]}" --resume "$D" 2>"$log" &
    else
        "$A" train "$CFG" "${SETS[@]}" "${EVERY[@]}" --out "$D" 2>"$log" &
    fi
    pid=$!
    # the first cycle gets as far as one checkpoint, however slow the machine
    [ "$cycle" = 1 ] && { wait_for_ckpt "$D" "$pid" || fail "the first run wrote no checkpoint: $(tail -3 "$log")"; }
    sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    if [ "$rc" = 0 ]; then
        [ "$cycle" -gt 50 ] || fail "cycle $cycle: the run finished before the kill; raise train.steps"
        break
    fi
    [ "$rc" = 137 ] || fail "cycle $cycle: exit $rc, expected 137 (killed): $(tail -3 "$log")"
    ! grep -q "warning" "$log" || fail "cycle $cycle: $(grep warning "$log")"
    if grep -q "resuming from" "$log"; then
        grep -q "resuming from $newest:" "$log" ||
            fail "cycle $cycle: did not resume from the newest checkpoint $newest: $(grep resuming "$log"); now: $(ls -la "$D/checkpoints")"
        resumed=$((resumed + 1))
    fi
    ls "$D"/checkpoints/.ckpt-*.tmp >/dev/null 2>&1 && torn=$((torn + 1))
    if [ -n "$(newest_ckpt "$D")" ]; then
        "$A" checkpoints "$D" >"$W/list.log" 2>&1 ||
            fail "cycle $cycle: a damaged checkpoint after kill -9: $(cat "$W/list.log")"
        step=$(basename "$(newest_ckpt "$D")" .amp)
        step=$((10#${step#ckpt-}))
        [ "$step" -ge "$last" ] || fail "cycle $cycle: the newest checkpoint went back from $last to $step"
        last=$step
    fi
done
[ "$last" -gt 0 ] || fail "no checkpoint was ever written"
# checkpoint_every only decides when to write: the last leg writes rarely.
"$A" train "$CFG" "${SETS[@]}" --set train.checkpoint_every=500 --resume "$D" 2>"$W/final.log" ||
    fail "the final resume failed: $(tail -3 "$W/final.log")"
! ls "$D"/checkpoints/.ckpt-*.tmp >/dev/null 2>&1 || fail "a stale temporary survived the final run"
same_outputs "$W/ref" "$D" noconfig
echo "kill -9: $cycle cycles ($resumed resumed before the kill, $torn killed mid-write leaving a" \
     "temporary), newest checkpoint at step $last; all checkpoints valid after every kill; the" \
     "final resume matches the uninterrupted run"
