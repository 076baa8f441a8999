#!/usr/bin/env bash
# A nanoGPT state_dict through [model] init (usage: init_tied.sh AMPTRAIN
# MAKE_TIED_INIT WORK_DIR). The GPT ties lm_head.weight to
# transformer.wte.weight; make_tied_init writes, from a run's weights, the
# tie under both names (the state_dict), under lm_head.weight alone
# (safetensors' save_model) and under both with different values:
#   - both names and lm_head.weight alone train exactly as the run's own
#     weights.safetensors does (metrics and weights bit for bit), one of
#     them named by [model] init in a config file;
#   - a torch.compile'd model's state_dict (names under "_orig_mod.") with
#     an older nanoGPT's causal-mask buffers (attn.bias) trains the same too,
#     the prefix stripped and the buffers skipped, each said once;
#   - two different copies, and a file with neither name, are refused, naming
#     both tensors, before anything is written: exit 2, like every other
#     [model] init file that does not fit the model (tests/cmake/bad_inputs.cmake).
set -euo pipefail
amptrain=$1
make_init=$2
work=$3
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../checkpoint/lib.sh"
cfg=$here/tiny_gpt.ini
rm -rf "$work"
mkdir -p "$work"

train() { # DIR CONFIG ARGS...: a run that must succeed
    local dir=$1 config=$2
    shift 2
    "$amptrain" train "$config" --set train.steps=6 --set train.checkpoint_every=0 "$@" \
        --out "$dir" >/dev/null 2>"$dir.log" || { cat "$dir.log" >&2; fail "run $dir ($*)"; }
}

train "$work/base" "$cfg"
"$make_init" "$work/base/weights.safetensors" "$work"
train "$work/own" "$cfg" --set model.init="$work/base/weights.safetensors"

# the state_dict, named in a config file (relative to it)
sed '/^\[model\]/a init = state_dict.safetensors' "$cfg" >"$work/state_dict.ini"
train "$work/both" "$work/state_dict.ini"
same_outputs "$work/own" "$work/both" noconfig
echo "ok  lm_head.weight and transformer.wte.weight, equal: trains as the run's own weights"
train "$work/head_only" "$cfg" --set model.init="$work/save_model.safetensors"
same_outputs "$work/own" "$work/head_only" noconfig
echo "ok  lm_head.weight alone: trains as the run's own weights"
train "$work/compiled" "$cfg" --set model.init="$work/compiled.safetensors"
same_outputs "$work/own" "$work/compiled" noconfig
grep -q "compiled.safetensors: the names' '_orig_mod.' prefix (torch.compile) was stripped" \
    "$work/compiled.log" || fail "compiled: the prefix not said: $(cat "$work/compiled.log")"
grep -q "compiled.safetensors: skipped a buffer that is not a parameter (_orig_mod.transformer.h.0.attn.bias)" \
    "$work/compiled.log" || fail "compiled: the buffers not said: $(cat "$work/compiled.log")"
echo "ok  _orig_mod. names with attn.bias buffers: trains as the run's own weights"

refused() { # NAME REGEX: init from NAME.safetensors is refused, saying REGEX
    local rc=0
    "$amptrain" train "$cfg" --set model.init="$work/$1.safetensors" --out "$work/$1" \
        >/dev/null 2>"$work/$1.log" || rc=$?
    [ $rc -eq 2 ] && grep -q "$2" "$work/$1.log" || fail "$1: exit $rc: $(cat "$work/$1.log")"
    no_metrics "$work/$1"
    echo "ok  $1 refused (exit 2): $(head -1 "$work/$1.log")"
}
refused differ "holds both 'transformer.wte.weight' and 'lm_head.weight'.*they differ (element 1:"
refused no_head "no tensor 'transformer.wte.weight' nor 'lm_head.weight'"
