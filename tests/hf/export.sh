#!/usr/bin/env bash
# export.sh AMPTRAIN SRC_DATA WORK_DIR: `amptrain export RUN --hf OUT` round
# trip through the CLI.
#   - a GPT run started from the GPT-2 folder SRC_DATA/hf_gpt2 (2 steps) is
#     exported; config.json names the run's architecture; the folder read
#     back as [model] init (one step at lr 1e-12, which moves no weight)
#     ends with the run's own weights.safetensors, byte for byte: export and
#     the loader are inverses (the Conv1D transposes included);
#   - a Llama run (from SRC_DATA/hf_llama) exports a LlamaForCausalLM
#     folder whose config.json has the run's sizes and which loads back as
#     the run's weights;
#   - a run of another model, and a missing --hf, are exit 2.
# That transformers reads the folder and computes amptrain's logits is
# test_hf_gpt2's check on tests/data/hf_gpt2_exported and hf_llama_exported,
# which must be what export writes (checked below).
set -euo pipefail
A=$1
SRC=$2
W=$3
here=$(cd "$(dirname "$0")" && pwd)
cfg=$here/../bad_inputs/base_hf.ini
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W"
mkdir -p "$W"
"$A" train "$cfg" --set model.init="$SRC/hf_gpt2" --set train.steps=2 --out "$W/run" 2>"$W/run.log" ||
    fail "train: $(tail -3 "$W/run.log")"
"$A" export "$W/run" --hf "$W/hf" >"$W/export.log" 2>&1 || fail "export: $(cat "$W/export.log")"
for kv in '"model_type": "gpt2"' '"n_layer": 2' '"n_head": 4' '"n_embd": 64' '"n_positions": 32' \
          '"vocab_size": 65' '"activation_function": "gelu_new"'; do
    grep -qF "$kv" "$W/hf/config.json" || fail "config.json lacks $kv: $(cat "$W/hf/config.json")"
done
"$A" train "$cfg" --set model.init="$W/hf" --set train.steps=1 --set optim.lr=1e-12 \
    --set optim.momentum=0 --out "$W/back" 2>"$W/back.log" || fail "init from the export: $(tail -3 "$W/back.log")"
cmp -s "$W/run/weights.safetensors" "$W/back/weights.safetensors" ||
    fail "the exported folder did not load back as the run's weights"
echo "ok  export -> [model] init: the run's weights byte for byte"

# A Llama run (from SRC_DATA/hf_llama, 2 steps) exported: a LlamaForCausalLM
# config.json with the run's sizes, read back as the run's weights. Adam's
# step at lr 1e-12 moves a weight below about 1e-5 by a few ulps, so the
# weights are compared within 1e-6 relative (the GPT-2 fixture has none so
# small; transposes or names gone wrong are off by far more).
"$A" train "$cfg" --set model.init="$SRC/hf_llama" --set train.steps=2 --out "$W/lrun" 2>"$W/lrun.log" ||
    fail "train llama: $(tail -3 "$W/lrun.log")"
"$A" export "$W/lrun" --hf "$W/lhf" >"$W/lexport.log" 2>&1 || fail "export llama: $(cat "$W/lexport.log")"
for kv in '"model_type": "llama"' '"num_hidden_layers": 2' '"num_attention_heads": 4' \
          '"num_key_value_heads": 2' '"hidden_size": 64' '"intermediate_size": 128' \
          '"max_position_embeddings": 32' '"vocab_size": 65' '"rms_norm_eps": 1e-05' \
          '"rope_theta": 10000' '"tie_word_embeddings": false' '"hidden_act": "silu"'; do
    grep -qF "$kv" "$W/lhf/config.json" || fail "llama config.json lacks $kv: $(cat "$W/lhf/config.json")"
done
"$A" train "$cfg" --set model.init="$W/lhf" --set train.steps=1 --set optim.lr=1e-12 \
    --out "$W/lback" 2>"$W/lback.log" || fail "init from the llama export: $(tail -3 "$W/lback.log")"
python3 - "$W/lrun/weights.safetensors" "$W/lback/weights.safetensors" <<'PY' ||
import json, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return {k: struct.unpack("<%df" % ((v["data_offsets"][1] - v["data_offsets"][0]) // 4),
                             b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
bad = [k for k in a if any(abs(x - y) > 1e-6 * abs(x) + 1e-12 for x, y in zip(a[k], b[k]))]
print("llama weights back:", len(a), "tensors", "differ: " + " ".join(bad) if bad else "all within 1e-6")
sys.exit(1 if bad else 0)
PY
    fail "the exported Llama folder did not load back as the run's weights"
echo "ok  llama export -> [model] init: config.json has the run's sizes, the weights come back"

# The committed folders that transformers' from_pretrained was run on
# (SRC_DATA/hf_{gpt2,llama}_exported, read by test_hf_gpt2 against its
# logits) are what export writes today: the same config.json, byte for
# byte, and the same tensors (names, dtypes, shapes; the values depend on
# the two steps' summation order).
for pair in "hf:hf_gpt2_exported" "lhf:hf_llama_exported"; do
    new=$W/${pair%%:*} old=$SRC/${pair#*:}
    cmp -s "$new/config.json" "$old/config.json" ||
        fail "export writes another config.json than $old's: $(diff "$old/config.json" "$new/config.json")"
    python3 - "$new/model.safetensors" "$old/model.safetensors" <<'PY' ||
import json, struct, sys
def header(p):
    b = open(p, "rb").read(1 << 20)
    h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
    h.pop("__metadata__", None)
    return {k: (v["dtype"], tuple(v["shape"])) for k, v in h.items()}
a, b = header(sys.argv[1]), header(sys.argv[2])
sys.exit(0 if a == b else "tensors differ: " + str(sorted(set(a.items()) ^ set(b.items()), key=str)[:6]))
PY
        fail "export writes other tensors than $old/model.safetensors"
done
echo "ok  the committed exported folders are what export writes"

rc=0
"$A" train "$here/../bad_inputs/base_tiny.ini" --out "$W/mlp" 2>/dev/null >/dev/null
"$A" export "$W/mlp" --hf "$W/mlp_hf" 2>"$W/mlp.log" || rc=$?
[ $rc -eq 2 ] && grep -q "a \[model\] name = mlp run; --hf writes GPT-2 folders" "$W/mlp.log" ||
    fail "an MLP run: exit $rc, $(cat "$W/mlp.log")"
[ ! -e "$W/mlp_hf" ] || fail "an MLP run: $W/mlp_hf was written"
rc=0
"$A" export "$W/run" 2>"$W/nohf.log" || rc=$?
[ $rc -eq 2 ] && grep -q "\-\-hf OUT_DIR is required" "$W/nohf.log" || fail "no --hf: exit $rc"
echo "ok  an MLP run and a missing --hf: exit 2"
