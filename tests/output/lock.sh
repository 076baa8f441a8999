#!/bin/bash
# One process per run folder (issue 15): while a `train` writes DIR (held
# inside step 0 by the test scaler `block`, so the moment is known), a
# second `train --out DIR`, a `train --resume DIR` and an `ab --out DIR` are
# each refused with exit 2 and a message naming the holder's PID, and leave
# nothing behind; the first run then completes with its own files only.
# usage: lock.sh AMPTRAIN CONFIG WORK_DIR BAD_PLUGIN_DIR
set -u
A=$1 CFG=$2 W=$3
export AMPTRAIN_PLUGIN_PATH=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
D=$W/run

AMP_BLOCK_STEP=0 AMP_BLOCK_READY=$W/ready AMP_BLOCK_RELEASE=$W/release \
    "$A" train "$CFG" --set scaler.plugin=block --set train.steps=20 --out "$D" 2>"$W/first.log" &
pid=$!
for _ in $(seq 1 6000); do [ -e "$W/ready" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
[ -e "$W/ready" ] || fail "the first run never reached step 0: $(tail -3 "$W/first.log")"
before=$(ls -A "$D")

refused() { # NAME command...
    local name=$1
    shift
    "$@" >"$W/$name.log" 2>&1
    local rc=$?
    [ "$rc" = 2 ] || fail "$name: exit $rc while the folder is in use, expected 2: $(tail -3 "$W/$name.log")"
    grep -q "$D is in use by another process (PID $pid, amptrain train; lock file $D/.amptrain.lock)" \
        "$W/$name.log" || fail "$name: the message does not name the holder: $(tail -3 "$W/$name.log")"
    [ "$(ls -A "$D")" = "$before" ] || fail "$name: the refused run changed the folder: $(ls -A "$D")"
    echo "$name: refused, naming PID $pid"
}
refused second_train "$A" train "$CFG" --set scaler.plugin=block --set train.steps=20 --out "$D"
refused resume "$A" train "$CFG" --set scaler.plugin=block --set train.steps=20 --resume "$D"
sed '0,/^name = .*/s//name = other_arm/' "$CFG" >"$W/other.ini"
refused ab "$A" ab "$CFG" "$W/other.ini" --seeds 1 --set scaler.plugin=block --set train.steps=20 --out "$D"

touch "$W/release"
wait "$pid" || fail "the first run failed: $(tail -3 "$W/first.log")"
[ -s "$D/summary.json" ] || fail "the first run wrote no summary"
lines=$(grep -c '"step"' "$D/metrics.jsonl")
[ "$lines" -ge 1 ] && [ "$(tr -d '\000' <"$D/metrics.jsonl" | wc -c)" = "$(wc -c <"$D/metrics.jsonl")" ] ||
    fail "metrics.jsonl is damaged"
[ ! -e "$D/.amptrain.lock" ] || fail "the lock file outlived the run"
echo "the holder completed alone: $(ls -A "$D" | tr '\n' ' ')"
