#!/bin/bash
# Resume that just works: a run with --set's (one of them [optim] lr, which a
# resume may not change) stopped by SIGINT prints "continue with: ..."; that
# command, run exactly as printed, finishes the run with the same
# metrics.jsonl, summary.json, weights.safetensors and config.ini as the run
# left alone (same AMPTRAIN_THREADS). --resume needs no CONFIG (the
# checkpoint holds the run's config); a --set of a key that changes the math
# is refused naming it (exit 2); --set train.steps runs a finished run longer.
set -u
. "$(dirname "$0")/lib.sh"
A=$1 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
HERE=$(cd "$(dirname "$0")" && pwd)
export AMPTRAIN_THREADS=1
# the printed command names amptrain: this build's
amptrain() { "$A" "$@"; }

sets=(--set train.steps=1200 --set optim.lr=0.03 --set train.checkpoint_every=50)
"$A" train "$HERE/tiny_sgd.ini" "${sets[@]}" --out "$W/ref" 2>"$W/ref.log" ||
    fail "the uninterrupted run failed: $(tail -3 "$W/ref.log")"
"$A" train "$HERE/tiny_sgd.ini" "${sets[@]}" --out "$W/run" 2>"$W/stop.log" &
pid=$!
wait_for_ckpt "$W/run" "$pid" || fail "no checkpoint appeared"
sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 0 ] && fail "the run finished before SIGINT arrived; raise train.steps"
[ "$rc" = 130 ] || fail "exit $rc after SIGINT, expected 130: $(tail -3 "$W/stop.log")"
hint=$(sed -n 's/^amptrain: continue with: //p' "$W/stop.log")
[ -n "$hint" ] || fail "no 'continue with:' line: $(tail -3 "$W/stop.log")"
at=$(sed -nE 's/.*after step ([0-9]+) of.*/\1/p' "$W/stop.log")

# a --set that would change the math is refused by name, and changes nothing
"$A" train --resume "$W/run" --set optim.lr=0.1 2>"$W/refused.log"
rc=$?
[ "$rc" = 2 ] || fail "--resume with --set optim.lr: exit $rc, expected 2: $(cat "$W/refused.log")"
grep -q "cannot change \[optim\] lr on a resume" "$W/refused.log" ||
    fail "the refusal does not name [optim] lr: $(cat "$W/refused.log")"
"$A" train --resume "$W/run" --set model.hidden=8 2>"$W/refused2.log"
[ $? = 2 ] && grep -q "cannot change \[model\] hidden on a resume" "$W/refused2.log" ||
    fail "--set model.hidden on a resume was not refused by name: $(cat "$W/refused2.log")"

# the hint, verbatim
eval "$hint" 2>"$W/resume.log" || fail "'$hint' failed: $(tail -3 "$W/resume.log")"
grep -q "resuming from .*ckpt-$(printf %08d "$at").amp: step $at of 1200" "$W/resume.log" ||
    fail "'$hint' did not resume from step $at: $(tail -3 "$W/resume.log")"
same_outputs "$W/ref" "$W/run"
echo "SIGINT at step $at; '$hint' finished it: outputs identical to the uninterrupted run"

# a CONFIG given on a resume must agree: without the run's --set's it differs
"$A" train "$HERE/tiny_sgd.ini" --resume "$W/run" 2>"$W/disagree.log"
rc=$?
[ "$rc" = 2 ] || fail "--resume with a disagreeing CONFIG: exit $rc, expected 2: $(tail -3 "$W/disagree.log")"

# a finished run continues longer with --set train.steps, without CONFIG
"$A" train --resume "$W/run" --set train.steps=1300 2>"$W/longer.log" ||
    fail "--resume --set train.steps=1300 failed: $(tail -3 "$W/longer.log")"
grep -q '"steps": 1300' "$W/run/summary.json" || grep -q '"steps":1300' "$W/run/summary.json" ||
    fail "the longer run's summary.json does not say 1300 steps: $(head -c 600 "$W/run/summary.json")"
grep -q '^steps = 1300' "$W/run/config.ini" || fail "config.ini does not say steps = 1300"
# fewer steps than the checkpoint holds: refused, saying why
"$A" train --resume "$W/run" --set train.steps=10 2>"$W/shorter.log"
rc=$?
[ "$rc" = 2 ] && grep -q "at step 1300 already" "$W/shorter.log" ||
    fail "--set train.steps=10 on a run at step 1300: exit $rc: $(tail -3 "$W/shorter.log")"
echo "unsafe --set refused by name; a CONFIG that disagrees refused; train.steps extended a finished run"
