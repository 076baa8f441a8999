#!/bin/bash
# AMPTRAIN_PLUGIN_PATH has no limit on its entries: with 40 folders before
# it, the built-in plugin folder is still searched (a run finds fp16 and
# dynamic by name, `plugins -v` lists every folder), and a plugin in the
# last entry is found.
set -u
. "$(dirname "$0")/lib.sh"
CFG=$TESTS/../configs/tiny_fp16_dynamic.ini
path=
for i in $(seq 1 40); do
    mkdir -p "$W/d$i" && path=$path${path:+:}$W/d$i
done
expect 0 'test_loss' env AMPTRAIN_PLUGIN_PATH="$path" "$A" train "$CFG" --set run.device=cpu \
    --set train.steps=2 --out "$W/run"
expect 0 '^precision +fp16 ' env AMPTRAIN_PLUGIN_PATH="$path" "$A" plugins -v
for i in 1 17 40; do grep -Eq "^ +$W/d$i\$" "$W/log" || fail "plugins -v does not list $W/d$i"; done
[ "$(grep -Ec "^ +$W/d[0-9]+\$" "$W/log")" = 40 ] || fail "plugins -v lists $(grep -Ec "^ +$W/d" "$W/log") of 40 folders"
# a copy of the scaler plugin under another name in the 40th folder
cp "$(dirname "$A")/plugins/amp_scaler_none.so" "$W/d40/amp_scaler_none.so"
expect 2 "scaler plugin 'none' is ambiguous: amp_scaler_none\.so is in 2 folders .*$W/d40/amp_scaler_none\.so" \
    env AMPTRAIN_PLUGIN_PATH="$path" "$A" train "$CFG" --set run.device=cpu --set scaler.plugin=none \
    --out "$W/run2"
echo "ok  40 AMPTRAIN_PLUGIN_PATH entries: every folder searched, the built-in one too"
