#!/bin/bash
# Relative paths, run from a working directory that is not the config's
# folder: a path in the config file is relative to the config's folder; a
# path given with --set is relative to the working directory, as a shell
# path is. Checked for [data] path, [model] init and a plugin path with
# `train`, and for [data] path with `ab` (its runs get the user's --set);
# config.ini names the file each resolved to, as an absolute path.
set -u
. "$(dirname "$0")/lib.sh"
CORPUS=$TESTS/../data/tinyshakespeare.txt
mkdir -p "$W/cfg" "$W/cwd" || exit 1
W=$(cd "$W" && pwd -P) # getcwd's spelling of the folder, as config.ini gives it
# Two corpora of different sizes, one beside the config, one in the working
# directory, under different names: a path resolved against the wrong folder
# names no file.
head -c 30000 "$CORPUS" >"$W/cfg/beside_config.txt"
head -c 40000 "$CORPUS" >"$W/cwd/in_cwd.txt"
sed 's/^dataset = text$/dataset = text\npath = beside_config.txt/' "$TESTS/gpt/tiny_gpt.ini" >"$W/cfg/run.ini"
grep -q '^path = beside_config.txt$' "$W/cfg/run.ini" || fail "could not write the config"
cd "$W/cwd" || exit 1
short=(--set train.steps=2 --set train.checkpoint_every=0)

# resolved RUN_DIR KEY: the file config.ini's (first) KEY names, without . and ..
resolved() {
    local v
    v=$(sed -n "s/^$2 = \([^ ]*\).*/\1/p" "$1/config.ini" | head -1)
    case $v in /*) readlink -m "$v" ;; *) echo "not absolute: $v" ;; esac
}

# 1. in the file: against the config's folder
expect 0 ' steps [(][0-9]+ skipped[)]' "$A" train ../cfg/run.ini "${short[@]}" --out file_path
[ "$(resolved file_path path)" = "$W/cfg/beside_config.txt" ] ||
    fail "[data] path = beside_config.txt in ../cfg/run.ini resolved to '$(resolved file_path path)', not $W/cfg/beside_config.txt"

# 2. on the command line: against the working directory
expect 0 ' steps [(][0-9]+ skipped[)]' "$A" train ../cfg/run.ini "${short[@]}" --set data.path=in_cwd.txt --out set_path
[ "$(resolved set_path path)" = "$W/cwd/in_cwd.txt" ] ||
    fail "--set data.path=in_cwd.txt resolved to '$(resolved set_path path)', not $W/cwd/in_cwd.txt"

# 3. [model] init from the command line
cp file_path/weights.safetensors start.safetensors || fail "the first run wrote no weights"
expect 0 ' steps [(][0-9]+ skipped[)]' "$A" train ../cfg/run.ini "${short[@]}" --set model.init=start.safetensors --out set_init
[ "$(resolved set_init init)" = "$W/cwd/start.safetensors" ] ||
    fail "--set model.init=start.safetensors resolved to '$(resolved set_init init)'"

# 4. a plugin path from the command line
so=$("$A" plugins | awk '$1 == "precision" && $2 == "fp16" { print $NF }')
[ -f "$so" ] || fail "amptrain plugins lists no fp16 precision plugin file: '$so'"
cp "$so" ./my_fp16.so || exit 1
expect 0 ' steps [(][0-9]+ skipped[)]' "$A" train ../cfg/run.ini "${short[@]}" --set precision.plugin=./my_fp16.so --out set_plugin
[ "$(resolved set_plugin plugin)" = "$W/cwd/my_fp16.so" ] ||
    fail "--set precision.plugin=./my_fp16.so resolved to '$(resolved set_plugin plugin)'"

# 5. ab: the runs get the --set from the same working directory
sed 's/^name = tiny_gpt$/name = tiny_gpt_b/' ../cfg/run.ini >../cfg/run_b.ini
expect 0 'report.html' "$A" ab ../cfg/run.ini ../cfg/run_b.ini --seeds 1 "${short[@]}" \
    --set data.path=in_cwd.txt --out ab
for arm in tiny_gpt tiny_gpt_b; do
    d=ab/runs/$arm/seed-7
    [ "$(resolved "$d" path)" = "$W/cwd/in_cwd.txt" ] ||
        fail "ab --set data.path=in_cwd.txt: arm $arm resolved it to '$(resolved "$d" path)'"
done
echo "in the file: against the config's folder; --set data.path, model.init, precision.plugin" \
    "and ab's --set: against the working directory"
