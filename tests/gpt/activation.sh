#!/usr/bin/env bash
# The GPT's [model] activation through the CLI
# (usage: activation.sh AMPTRAIN DROP_CONFIG_KEY WORK_DIR):
#   - gelu (the default: nanoGPT's nn.GELU(), erf) and gelu_tanh both train
#     tests/gpt/tiny_gpt.ini (the loss falls) and are different functions
#     (the runs' losses differ); config.ini records the value;
#   - another value is exit 2 naming --set model.activation;
#   - a gelu_tanh checkpoint resumed under the default is refused, naming the
#     key; under gelu_tanh it ends identical to the uninterrupted run;
#   - a checkpoint from before the key existed (its config without the line)
#     ran gelu_tanh: resumed under the default it is refused the same way,
#     under gelu_tanh it ends identical; `sample` of a run folder whose
#     config.ini lacks the key builds the gelu_tanh model and says so (the
#     tiny model's text alone would not tell the two GELUs apart).
#   - [model] mlp = gelu_tanh is activation = gelu_tanh (see the end).
set -euo pipefail
amptrain=$1
drop_key=$2
work=$3
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../checkpoint/lib.sh"
cfg=$here/tiny_gpt.ini
rm -rf "$work"
mkdir -p "$work"

source "$here/tiny_lib.sh"

train "$work/gelu"
train "$work/tanh" --set model.activation=gelu_tanh
grep -q '^activation = gelu  ; default$' "$work/gelu/config.ini" ||
    fail "config.ini: $(grep activation "$work/gelu/config.ini")"
for run in gelu tanh; do
    first=$(loss_at "$work/$run" 1) last=$(loss_at "$work/$run" 12)
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.1) }' ||
        fail "$run: the loss did not fall: $first -> $last"
done
[ "$(loss_at "$work/gelu" 2)" != "$(loss_at "$work/tanh" 2)" ] ||
    fail "gelu and gelu_tanh gave the same step-2 loss: one function for both"
echo "ok  gelu (default) and gelu_tanh train: $(loss_at "$work/gelu" 1) -> $(loss_at "$work/gelu" 12)," \
    "$(loss_at "$work/tanh" 1) -> $(loss_at "$work/tanh" 12)"

set +e
"$amptrain" train "$cfg" --set model.activation=relu --out "$work/bad" >/dev/null 2>"$work/bad.log"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q -- "--set model.activation" "$work/bad.log" && grep -q gelu_tanh "$work/bad.log" ||
    fail "activation = relu: exit $rc, $(cat "$work/bad.log")"
no_metrics "$work/bad"
echo "ok  activation = relu: exit 2, $(head -1 "$work/bad.log")"

# resume_from NAME CKPT [ARGS...]: a folder holding only CKPT (and the history) resumed
resume_from() {
    local dir=$work/$1 ckpt=$2
    shift 2
    rm -rf "$dir"
    mkdir -p "$dir/checkpoints"
    cp "$ckpt" "$dir/checkpoints/"
    cp "$work/tanh/checkpoints/vocab.json" "$dir/checkpoints/"
    cp "$work/tanh/metrics.jsonl" "$dir/"
    "$amptrain" train "$cfg" "$@" --resume "$dir" >/dev/null 2>"$dir.log"
}
# tanh_only NAME CKPT WHAT: CKPT resumed under the default is refused (exit 2),
# naming the key; under gelu_tanh it ends identical to the uninterrupted run
tanh_only() {
    local name=$1 ckpt=$2 what=$3 rc=0
    resume_from "${name}_default" "$ckpt" || rc=$?
    [ $rc -eq 2 ] || fail "$what resumed under gelu: exit $rc"
    grep -q "\[model\] activation: checkpoint 'gelu_tanh', config 'gelu'" "$work/${name}_default.log" ||
        fail "$what: $(tail -2 "$work/${name}_default.log")"
    resume_from "${name}_resumed" "$ckpt" --set model.activation=gelu_tanh ||
        fail "$what under gelu_tanh: $(tail -2 "$work/${name}_resumed.log")"
    same_outputs "$work/tanh" "$work/${name}_resumed"
    echo "ok  $what: refused under gelu (exit 2), resumed under gelu_tanh identical"
}
ck6=$work/tanh/checkpoints/ckpt-00000006.amp
tanh_only tanh "$ck6" "a gelu_tanh checkpoint"
mkdir -p "$work/old"
"$drop_key" "$ck6" model activation "$work/old/ckpt-00000006.amp"
tanh_only old "$work/old/ckpt-00000006.amp" "a checkpoint from before [model] activation"

mkdir -p "$work/old_run"
cp "$work/tanh/weights.safetensors" "$work/tanh/vocab.json" "$work/old_run/"
grep -v '^activation = ' "$work/tanh/config.ini" >"$work/old_run/config.ini"
"$amptrain" sample "$work/tanh" --prompt "ROMEO:" --tokens 40 --seed 3 >"$work/s_tanh.txt"
"$amptrain" sample "$work/old_run" --prompt "ROMEO:" --tokens 40 --seed 3 >"$work/s_old.txt" 2>"$work/s_old.log"
cmp -s "$work/s_tanh.txt" "$work/s_old.txt" || fail "sample of an old run folder is not the gelu_tanh run's text"
grep -q "config.ini: no \[model\] activation: the run predates the key and ran activation = gelu_tanh" \
    "$work/s_old.log" || fail "sample of an old run folder: $(cat "$work/s_old.log")"
echo "ok  sample of a run folder from before the key: built with gelu_tanh, and says so"

# [model] mlp = gelu_tanh: the GELU MLP with the tanh form, the same run as
# activation = gelu_tanh bit for bit (config.ini records both keys); with
# activation = gelu beside it, exit 2 naming both; its checkpoint resumes
# under mlp = gelu_tanh to the same end, and `sample` builds it.
train "$work/mlp_tanh" --set model.mlp=gelu_tanh
grep -q '^mlp = gelu_tanh  ; --set model.mlp$' "$work/mlp_tanh/config.ini" &&
    grep -q '^activation = gelu_tanh  ; default$' "$work/mlp_tanh/config.ini" ||
    fail "mlp = gelu_tanh: config.ini has $(grep -E '^(mlp|activation) ' "$work/mlp_tanh/config.ini")"
same_outputs "$work/tanh" "$work/mlp_tanh" noconfig
rc=0
"$amptrain" train "$cfg" --set model.mlp=gelu_tanh --set model.activation=gelu --out "$work/mlp_bad" \
    >/dev/null 2>"$work/mlp_bad.log" || rc=$?
[ $rc -eq 2 ] && grep -q "^amptrain: --set model.activation: \[model\] activation = gelu disagrees with mlp = gelu_tanh" \
    "$work/mlp_bad.log" || fail "mlp = gelu_tanh, activation = gelu: exit $rc, $(cat "$work/mlp_bad.log")"
no_metrics "$work/mlp_bad"
mkdir -p "$work/mlp_resumed/checkpoints"
cp "$work/mlp_tanh/checkpoints/ckpt-00000006.amp" "$work/mlp_tanh/checkpoints/vocab.json" \
    "$work/mlp_resumed/checkpoints/"
cp "$work/mlp_tanh/metrics.jsonl" "$work/mlp_resumed/"
"$amptrain" train "$cfg" --set model.mlp=gelu_tanh --resume "$work/mlp_resumed" >/dev/null \
    2>"$work/mlp_resumed.log" || fail "mlp = gelu_tanh resumed: $(tail -2 "$work/mlp_resumed.log")"
same_outputs "$work/mlp_tanh" "$work/mlp_resumed"
"$amptrain" sample "$work/mlp_tanh" --prompt "ROMEO:" --tokens 40 --seed 3 >"$work/s_mlp.txt"
cmp -s "$work/s_tanh.txt" "$work/s_mlp.txt" || fail "sample of the mlp = gelu_tanh run is not the gelu_tanh run's text"
echo "ok  mlp = gelu_tanh: the activation = gelu_tanh run bit for bit; with activation = gelu exit 2;" \
    "resumed identical; sampled alike"
