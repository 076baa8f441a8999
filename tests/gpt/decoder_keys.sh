#!/usr/bin/env bash
# The decoder's Llama keys through the CLI (usage: decoder_keys.sh AMPTRAIN WORK_DIR):
#   - norm = rmsnorm with mlp = swiglu (intermediate = 24) trains
#     tests/gpt/tiny_gpt.ini under fp16 (the loss falls), config.ini records
#     the keys, and summary.json's telemetry has the three SwiGLU Linears
#     (gate_proj, up_proj, down_proj; no c_fc) each counting roundings;
#   - precision.layer.<glob> reaches them: gate_proj = f32 rounds nothing
#     (the SwiGLU middle is stored in the gate's dtype), up_proj still does;
#   - rmsnorm is another function than layernorm (the step-2 losses differ);
#   - norm = batchnorm and mlp = relu are exit 2 naming the key.
set -euo pipefail
amptrain=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../checkpoint/lib.sh"
cfg=$here/tiny_gpt.ini
rm -rf "$work"
mkdir -p "$work"

source "$here/tiny_lib.sh"
fwd_rounded() { # DIR LAYER: the layer's forward rounding count in summary.json
    grep -oE "\"name\": \"$2\", \"forward\": \{[^}]*\"rounded\": [0-9]+" "$1/summary.json" |
        sed -E 's/.*"rounded": //'
}

llama=(--set model.norm=rmsnorm --set model.mlp=swiglu --set model.intermediate=24)
train "$work/llama" "${llama[@]}"
first=$(loss_at "$work/llama" 1) last=$(loss_at "$work/llama" 12)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.1) }' ||
    fail "rmsnorm + swiglu: the loss did not fall: $first -> $last"
for key in 'norm = rmsnorm' 'mlp = swiglu' 'intermediate = 24'; do
    grep -q "^$key  ; --set" "$work/llama/config.ini" || fail "config.ini lacks '$key'"
done
for l in gate_proj up_proj down_proj; do
    n=$(fwd_rounded "$work/llama" "transformer.h.0.mlp.$l")
    [ -n "$n" ] && [ "$n" -gt 0 ] || fail "telemetry of mlp.$l: '$n' roundings"
done
! grep -q 'mlp.c_fc' "$work/llama/summary.json" || fail "a SwiGLU run still has mlp.c_fc"
echo "ok  rmsnorm + swiglu train under fp16: $first -> $last; gate/up/down_proj counted"

train "$work/glob" "${llama[@]}" --set 'precision.layer.transformer.h.*.mlp.gate_proj=f32'
g=$(fwd_rounded "$work/glob" transformer.h.0.mlp.gate_proj)
u=$(fwd_rounded "$work/glob" transformer.h.0.mlp.up_proj)
[ "$g" = 0 ] && [ "$u" -gt 0 ] || fail "layer glob gate_proj = f32: gate $g, up $u roundings"
echo "ok  precision.layer.transformer.h.*.mlp.gate_proj = f32: gate 0 roundings, up $u"

train "$work/ln" --set model.mlp=swiglu --set model.intermediate=24
[ "$(loss_at "$work/ln" 2)" != "$(loss_at "$work/llama" 2)" ] ||
    fail "layernorm and rmsnorm gave the same step-2 loss"
echo "ok  rmsnorm and layernorm differ at step 2: $(loss_at "$work/llama" 2) vs $(loss_at "$work/ln" 2)"

for bad in norm=batchnorm mlp=relu; do
    set +e
    "$amptrain" train "$cfg" --set "model.$bad" --out "$work/bad" >/dev/null 2>"$work/bad.log"
    rc=$?
    set -e
    [ $rc -eq 2 ] && grep -q -- "--set model.${bad%%=*}" "$work/bad.log" ||
        fail "model.$bad: exit $rc, $(cat "$work/bad.log")"
    no_metrics "$work/bad"
    echo "ok  model.$bad: exit 2, $(head -1 "$work/bad.log")"
done
