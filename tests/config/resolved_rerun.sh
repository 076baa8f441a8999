#!/bin/bash
# The config.ini a run writes re-runs that run exactly: train with values
# that are awkward for an INI line ('=', ':', ';' and '#' without a blank
# before, runs of blanks, blanks around a --set value, a line too long for
# the value and its origin comment, a config path holding a newline), then
# train again from the written config.ini: the same resolved keys and values
# and the same weights, bit for bit. Values an INI line cannot hold (';' or
# '#' after a blank or first, too long) are refused up front: exit 2 naming
# the key, nothing written.
set -u
. "$(dirname "$0")/lib.sh"
GPT=$TESTS/gpt/tiny_gpt.ini
SETS=(--set train.steps=2 --set train.eval_every=0 --set train.checkpoint_every=0)
corpus=$(cd "$TESTS/.." && pwd)/data/tinyshakespeare.txt
[ -f "$corpus" ] || fail "no $corpus"

# the resolved keys and values of a config.ini, without its comments
resolved() { sed -E '/^;/d; s/[[:blank:]]+;.*$//' "$1"; }

# rerun NAME CFG [args...]: trains CFG, then trains from its config.ini, and
# compares the two runs.
rerun() {
    local name=$1 cfg=$2
    shift 2
    expect 0 'done|step' "$A" train "$cfg" "${SETS[@]}" "$@" --out "$W/$name"
    expect 0 'done|step' "$A" train "$W/$name/config.ini" --out "$W/$name.again"
    [ -s "$W/$name/config.ini" ] || fail "$name: no config.ini"
    if ! cmp -s <(resolved "$W/$name/config.ini") <(resolved "$W/$name.again/config.ini"); then
        diff <(resolved "$W/$name/config.ini") <(resolved "$W/$name.again/config.ini") >&2
        fail "$name: the run from config.ini resolved another configuration"
    fi
    cmp "$W/$name/weights.safetensors" "$W/$name.again/weights.safetensors" ||
        fail "$name: the run from config.ini trained other weights"
}

# '=', ':', ';' and '#' without a blank before them, runs of blanks
odd="$W/a=b;c#d  e:f.txt"
cp "$corpus" "$odd"
rerun odd "$GPT" --set "data.path=$odd"
grep -Fxq "path = $odd  ; --set data.path" "$W/odd/config.ini" || fail "odd: $(grep '^path' "$W/odd/config.ini")"
# blanks around a --set value are dropped, as around a value in a file
rerun blanks "$GPT" --set "data.path=   $odd  "
grep -Fxq "path = $odd  ; --set data.path" "$W/blanks/config.ini" || fail "blanks: $(grep '^path' "$W/blanks/config.ini")"
# a value that fits a line, but not with its origin comment beside it
long=$W/$(printf 'x%.0s' $(seq 1 $((185 - ${#W} - 1))))
cp "$corpus" "$long"
[ ${#long} = 185 ] || fail "long path is ${#long} characters"
rerun long "$GPT" --set "data.path=$long"
grep -Fxq "path = $long" "$W/long/config.ini" || fail "long: $(grep -n 'path' "$W/long/config.ini")"
# a config path with a newline: the origin comments must stay comments
nl_cfg="$W/new
line.ini"
cp "$GPT" "$nl_cfg"
rerun newline "$nl_cfg" --set "data.path=$corpus"
# relative paths (to the config's folder), the config named relative to the
# current folder: config.ini, in another folder, must name the same files
mkdir -p "$W/rel/sub"
cp "$corpus" "$W/rel/sub/corpus.txt"
plugin=$(realpath --relative-to="$W/rel" "$(dirname "$A")/plugins/amp_precision_fp16.so")
[ -f "$W/rel/$plugin" ] || fail "no $W/rel/$plugin"
sed "s|^plugin = fp16\$|plugin = $plugin|; s|^dataset = text\$|dataset = text\npath = sub/corpus.txt|" \
    "$GPT" >"$W/rel/rel.ini"
(cd "$W" && rerun relative rel/rel.ini) || exit 1
grep -Fxq "path = $W/rel/sub/corpus.txt  ; rel/rel.ini:9" "$W/relative/config.ini" &&
    grep -Fxq "plugin = $W/rel/$plugin  ; rel/rel.ini:36" "$W/relative/config.ini" ||
    fail "relative paths: $(grep -E '^(path|plugin)' "$W/relative/config.ini")"
echo "ok  config.ini re-runs the same configuration and trains the same weights"

# Values no INI line can hold: refused, naming the key, nothing written.
refuse() {
    local value=$1 why=$2
    expect 2 "^amptrain: --set data\.path: \[data\] path = '.*': $why" \
        "$A" train "$GPT" "${SETS[@]}" --set "data.path=$value" --out "$W/refused"
    [ ! -e "$W/refused/config.ini" ] || fail "a refused run wrote $W/refused/config.ini"
}
refuse "$W/x ;y" "a value cannot hold ';' after a blank"
refuse "$W/x	#y" "a value cannot hold '#' after a blank"
refuse ";x" "a value cannot start with ';'"
refuse "#x" "a value cannot start with '#'"
refuse "/$(printf 'y%.0s' $(seq 1 200))" "too long for an INI line \(208 characters as 'key = value'. the limit is 197\)"
cfg=$(printf '[data]\npath =;x\n' | ini semicolon)
expect 2 "^amptrain: $cfg:2: \[data\] path = ';x': a value cannot start with ';'" "$A" train "$cfg" --out "$W/refused"
echo "ok  values an INI line cannot hold are refused up front"
