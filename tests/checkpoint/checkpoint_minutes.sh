#!/bin/bash
# Long runs checkpoint by default: [train] checkpoint_minutes (default 10)
# writes a checkpoint once that many minutes of training passed since the
# last one, without checkpoint_every; 0 turns it off. The checkpoints never
# change the run: its outputs equal a run without them (same
# AMPTRAIN_THREADS; config.ini differs in that key only).
set -u
. "$(dirname "$0")/lib.sh"
A=$1 W=$3 CFG=$(dirname "$0")/tiny_sgd.ini
export AMPTRAIN_THREADS=1
rm -rf "$W" && mkdir -p "$W" || exit 1

"$A" settings | grep -qx 'train.checkpoint_minutes = 10' ||
    fail "amptrain settings does not list train.checkpoint_minutes = 10"
"$A" train "$CFG" --set train.checkpoint_minutes=0 --out "$W/off" 2>"$W/off.log" ||
    fail "the run without checkpoints failed: $(tail -3 "$W/off.log")"
[ -z "$(newest_ckpt "$W/off")" ] || fail "checkpoint_minutes = 0 wrote $(newest_ckpt "$W/off")"
# 0.0005 minutes = 30 ms: a few checkpoints in a run of about a second
"$A" train "$CFG" --set train.checkpoint_minutes=0.0005 --out "$W/timed" \
    2>"$W/timed.log" || fail "the timed run failed: $(tail -3 "$W/timed.log")"
n=$(ls "$W/timed/checkpoints" 2>/dev/null | grep -c '^ckpt-.*\.amp$')
[ "$n" -ge 1 ] || fail "checkpoint_minutes = 0.0005 wrote no checkpoint in $(grep -o '"wall_seconds": [0-9.]*' "$W/timed/summary.json")"
grep -q "^checkpoint_every = 0  ; default" "$W/timed/config.ini" || fail "checkpoint_every is not its default 0"
same_outputs "$W/off" "$W/timed" noconfig
echo "checkpoint_minutes: $n checkpoint(s) kept of a $(grep -o '"wall_seconds": [0-9.]*' "$W/timed/summary.json") run; outputs identical to the run without"
