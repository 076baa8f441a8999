#!/usr/bin/env bash
# The decoder's Llama keys through the CLI (usage: decoder_keys.sh AMPTRAIN WORK_DIR):
#   - norm = rmsnorm with mlp = swiglu (intermediate = 24) trains
#     tests/gpt/tiny_gpt.ini under fp16 (the loss falls), config.ini records
#     the keys, and summary.json's telemetry has the three SwiGLU Linears
#     (gate_proj, up_proj, down_proj; no c_fc) each counting roundings;
#   - precision.layer.<glob> reaches them: gate_proj = f32 rounds nothing
#     (the SwiGLU middle is stored in the gate's dtype), up_proj still does;
#   - rmsnorm is another function than layernorm (the step-2 losses differ);
#   - names = llama with position = rope, n_kv_head = 1 and an untied head
#     trains; telemetry has Hugging Face Llama's module names only, and a
#     precision.layer glob over model.layers.*.mlp.down_proj applies;
#   - norm = batchnorm, mlp = relu, position = rope under names = gpt2 and
#     n_kv_head = 3 (not dividing 2 heads) are exit 2 naming the key.
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

# A Llama: its module names, RoPE, multi-query attention, an untied head
lla=("${llama[@]}" --set model.names=llama --set model.position=rope --set model.n_kv_head=1
     --set model.tie_embeddings=false)
train "$work/names" "${lla[@]}" --set 'precision.layer.model.layers.*.mlp.down_proj=f32'
first=$(loss_at "$work/names" 1) last=$(loss_at "$work/names" 12)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.1) }' ||
    fail "names = llama: the loss did not fall: $first -> $last"
for l in model.embed_tokens model.layers.0.input_layernorm model.layers.0.self_attn.q_proj \
    model.layers.0.self_attn.k_proj model.layers.0.self_attn.v_proj model.layers.0.self_attn.o_proj \
    model.layers.0.self_attn model.layers.0.post_attention_layernorm model.layers.0.mlp.up_proj \
    model.norm lm_head; do
    n=$(fwd_rounded "$work/names" "$l")
    [ -n "$n" ] || fail "names = llama: no telemetry for $l"
done
[ "$(fwd_rounded "$work/names" model.layers.0.self_attn.k_proj)" -gt 0 ] &&
    [ "$(fwd_rounded "$work/names" model.layers.0.mlp.down_proj)" = 0 ] ||
    fail "names = llama: k_proj rounds nothing or down_proj = f32 rounds"
! grep -q 'transformer\.' "$work/names/summary.json" || fail "names = llama keeps a transformer.* layer"
echo "ok  names = llama, rope, n_kv_head = 1, untied: $first -> $last; HF module names, glob on down_proj"

for bad in norm=batchnorm mlp=relu position=rope n_kv_head=3; do
    set +e
    "$amptrain" train "$cfg" --set "model.$bad" --out "$work/bad" >/dev/null 2>"$work/bad.log"
    rc=$?
    set -e
    [ $rc -eq 2 ] && grep -q -- "--set model.${bad%%=*}" "$work/bad.log" ||
        fail "model.$bad: exit $rc, $(cat "$work/bad.log")"
    no_metrics "$work/bad"
    echo "ok  model.$bad: exit 2, $(head -1 "$work/bad.log")"
done
