#!/bin/bash
# Never write over an input (issue 15): `train DIR/config.ini --out DIR`
# would rename the resolved config over the user's own, and an init file
# named DIR/weights.safetensors would be replaced by the run's weights. Both
# are refused with exit 2 before any work, naming the file, and the inputs
# stay byte for byte; `ab` refuses a config named DIR/ab.json the same way.
# usage: paths.sh AMPTRAIN CONFIG WORK_DIR
set -u
A=$1 CFG=$2 W=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W/exp1" "$W/exp2" "$W/exp3" || exit 1

cp "$CFG" "$W/exp1/config.ini"
"$A" train "$W/exp1/config.ini" --set train.steps=3 --out "$W/exp1" 2>"$W/config.log"
rc=$?
[ "$rc" = 2 ] || fail "config: exit $rc, expected 2: $(tail -3 "$W/config.log")"
grep -q "exp1/config.ini is an input of this run" "$W/config.log" || fail "config: $(tail -3 "$W/config.log")"
cmp -s "$CFG" "$W/exp1/config.ini" || fail "config: the user's config was changed"
[ "$(ls -A "$W/exp1")" = config.ini ] || fail "config: the refused run left $(ls -A "$W/exp1")"
echo "train exp1/config.ini --out exp1: refused, the config untouched"

"$A" train "$CFG" --set train.steps=3 --out "$W/exp2" 2>"$W/first.log" || fail "a first run failed"
cp "$W/exp2/weights.safetensors" "$W/init.saved"
"$A" train "$CFG" --set train.steps=3 --set "model.init=$W/exp2/weights.safetensors" --out "$W/exp2" \
    2>"$W/init.log"
rc=$?
[ "$rc" = 2 ] || fail "init: exit $rc, expected 2: $(tail -3 "$W/init.log")"
grep -q "exp2/weights.safetensors is an input of this run" "$W/init.log" || fail "init: $(tail -3 "$W/init.log")"
cmp -s "$W/init.saved" "$W/exp2/weights.safetensors" || fail "init: the init file was changed"
echo "[model] init = exp2/weights.safetensors --out exp2: refused, the file untouched"

sed '0,/^name = .*/s//name = other_arm/' "$CFG" >"$W/exp3/ab.json"
"$A" ab "$CFG" "$W/exp3/ab.json" --seeds 1 --set train.steps=3 --out "$W/exp3" 2>"$W/ab.log"
rc=$?
[ "$rc" = 2 ] || fail "ab: exit $rc, expected 2: $(tail -3 "$W/ab.log")"
grep -q "exp3/ab.json is an input of this run" "$W/ab.log" || fail "ab: $(tail -3 "$W/ab.log")"
grep -q "^name = other_arm" "$W/exp3/ab.json" || fail "ab: the config was changed"
echo "ab with a config named DIR/ab.json --out DIR: refused, the config untouched"
