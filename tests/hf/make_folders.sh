#!/bin/sh
# make_folders.sh SRC OUTDIR: writes the Hugging Face folders that
# tests/cmake/hf.cmake trains from, each made from the committed good ones
# (SRC/hf_gpt2, SRC/hf_gpt2_sharded) with one fault. POSIX sh, sed and head.
set -eu
src=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
# folder NAME FROM: a copy of SRC/FROM as OUTDIR/NAME, the one to damage.
folder() { cp -R "$src/$2" "$out/$1"; d=$out/$1; }

folder good hf_gpt2
folder ini_disagrees hf_gpt2
folder sharded hf_gpt2_sharded
folder no_config hf_gpt2;       rm "$d/config.json"
folder no_weights hf_gpt2;      rm "$d/model.safetensors"
folder unknown_type hf_gpt2;    sed -i 's/"model_type": "gpt2"/"model_type": "bert"/' "$d/config.json"
# a key the GPT cannot express (here a rope scaling a Llama config would carry)
folder unknown_key hf_gpt2;     sed -i 's/^{/{\n  "rope_scaling": {"type": "linear", "factor": 2.0},/' "$d/config.json"
folder layer_norm_eps hf_gpt2;  sed -i 's/"layer_norm_epsilon": [0-9.e-]*/"layer_norm_epsilon": 1e-06/' "$d/config.json"
folder activation hf_gpt2;      sed -i 's/"activation_function": "gelu_new"/"activation_function": "relu"/' "$d/config.json"
# the config says 16 positions, the weights hold 32
folder shape hf_gpt2;           sed -i 's/"n_positions": 32/"n_positions": 16/' "$d/config.json"
folder n_ctx hf_gpt2;           sed -i 's/^{/{\n  "n_ctx": 64,/' "$d/config.json"
folder bad_json hf_gpt2;        printf '{"model_type": "gpt2",' >"$d/config.json"
# the second shard cut short
folder truncated_shard hf_gpt2_sharded
f=$d/model-00002-of-00002.safetensors
head -c 1000 "$f" >"$f.part" && mv "$f.part" "$f"
# the index names a shard that is not there
folder missing_shard hf_gpt2_sharded
rm "$d/model-00001-of-00002.safetensors"
# the index puts a tensor in the wrong shard
folder wrong_shard hf_gpt2_sharded
sed -i 's/"_orig_mod.transformer.wte.weight": "model-0000[12]-of-00002.safetensors"/"_orig_mod.transformer.wte.weight": "model-00001-of-00002.safetensors"/' "$d/model.safetensors.index.json"
# Llama (SRC/hf_llama): the good folder, and the keys its family cannot express
folder llama_good hf_llama
folder llama_rope_type hf_llama
sed -i 's/"rope_type": "default"/"rope_type": "linear"/' "$d/config.json"
folder llama_rope_scaling hf_llama
sed -i 's/^{/{\n  "rope_scaling": {"type": "linear", "factor": 2.0},/' "$d/config.json"
folder llama_act hf_llama;      sed -i 's/"hidden_act": "silu"/"hidden_act": "gelu"/' "$d/config.json"
folder llama_bias hf_llama;     sed -i 's/"attention_bias": false/"attention_bias": true/' "$d/config.json"
folder llama_kv_heads hf_llama; sed -i 's/"num_key_value_heads": 2/"num_key_value_heads": 3/' "$d/config.json"
