#!/bin/bash
# What `amptrain train` prints as it goes. On a terminal (a pty from
# script(1)): one live line redrawn with \r, with step/total, loss, the last
# evaluation, ms/step, samples/s (tok/s for a text model), elapsed and ETA,
# and each evaluation printed. Off a terminal: the step and eval lines as
# always, nothing redrawn.
# Usage: progress.sh AMPTRAIN TINY_SGD.ini TINY_GPT.ini WORK_DIR
set -u
A=$1 CFG=$2 GPT=$3 W=$4
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
# a terminal's output as lines: each redraw on its own, the clear-to-end-of-line codes dropped
lines() { tr '\r' '\n' <"$1" | sed $'s/\033\\[K//g'; }
rm -rf "$W" && mkdir -p "$W" || exit 1
command -v script >/dev/null || fail "script(1) (util-linux) is needed to give the run a terminal"
sets=(--set train.steps=600 --set train.eval_every=200)

# off a terminal: the lines as always
"$A" train "$CFG" "${sets[@]}" --out "$W/plain" 2>"$W/plain.log" || fail "the run failed: $(tail -3 "$W/plain.log")"
grep -q $'\r' "$W/plain.log" && fail "a \\r off a terminal"
grep -Eq "ETA|ms/step" "$W/plain.log" && fail "the live line off a terminal: $(grep -m1 ETA "$W/plain.log")"
bad=$(grep -Ev '^(step [0-9]+/600 epoch [0-9]+ loss [0-9.]+ scale [0-9.e+-]+ grad_norm [0-9.e+-]+( skipped)?|eval at step [0-9]+: test_loss [0-9.]+ test_acc [0-9.]+|amptrain: .*)$' "$W/plain.log")
[ -z "$bad" ] || fail "unexpected lines off a terminal: $bad"
# tiny_sgd.ini logs every 7 steps, and the last step
[ "$(grep -c '^step ' "$W/plain.log")" = 86 ] || fail "$(grep -c '^step ' "$W/plain.log") step lines, expected 86"
[ "$(grep -c '^eval at step ' "$W/plain.log")" = 2 ] || fail "not 2 eval lines: $(grep eval "$W/plain.log")"

# on a terminal: the live line
script -qec "'$A' train '$CFG' ${sets[*]} --out '$W/tty'" /dev/null >"$W/tty.log" 2>&1 </dev/null ||
    fail "the run on a terminal failed: $(tail -c 600 "$W/tty.log")"
live=$(lines "$W/tty.log" | grep -a '^step 600/600 |')
echo "$live" | grep -Eq '^step 600/600 \| loss [0-9.]+ \| test_loss [0-9.]+ \| [0-9.]+ ms/step \| [0-9]+ samples/s \| [0-9hms]+ \| ETA 0s' ||
    fail "no live line 'step 600/600 | loss ... | test_loss ... | ms/step | samples/s | elapsed | ETA': $(lines "$W/tty.log" | tail -5)"
grep -qa $'\rstep ' "$W/tty.log" || fail "the live line is not redrawn with \\r"
[ "$(lines "$W/tty.log" | grep -ac '^eval at step [0-9]*: test_loss')" = 2 ] ||
    fail "the evaluations are not printed on a terminal: $(lines "$W/tty.log" | tail -8)"
lines "$W/tty.log" | grep -aEq '^step [0-9]+/600 epoch' && fail "the plain step lines on a terminal"

# a text model counts tokens
script -qec "'$A' train '$GPT' --set train.steps=4 --set run.device=cpu --out '$W/gpt'" /dev/null \
    >"$W/gpt.log" 2>&1 </dev/null || fail "the text run on a terminal failed: $(tail -c 600 "$W/gpt.log")"
lines "$W/gpt.log" | grep -aEq '^step 4/4 \| .* [0-9]+ tok/s \|' ||
    fail "the text run's live line has no tok/s: $(lines "$W/gpt.log" | tail -4)"
echo "off a terminal: 86 step lines and 2 eval lines as before; on a terminal: $live"
