#!/usr/bin/env bash
# train_reference.sh AMPTRAIN SRC_DATA WORK_DIR: amptrain's CLI training the
# Hugging Face fixtures against PyTorch + transformers training the same
# folders on the same batches (SRC_DATA/hf_train_reference.json, written by
# scripts/hf_train_reference.py; tests/hf/train_compare.py says what is
# compared and why the bounds are what they are):
#   - `amptrain train train_ref.ini` (20 AdamW steps at FP32) from
#     SRC_DATA/hf_gpt2 and from SRC_DATA/hf_llama: the losses of
#     metrics.jsonl and the weights of the run's `export --hf` folder
#     against the FP64 PyTorch run;
#   - `amptrain train bf16_step.ini` from SRC_DATA/hf_llama (one SGD step at
#     lr 1, bf16 policy): the loss and the gradients (the weights' change)
#     against autocast-bf16's.
set -euo pipefail
A=$1
SRC=$2
W=$3
here=$(cd "$(dirname "$0")" && pwd)
ref=$SRC/hf_train_reference.json
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W"
mkdir -p "$W"
for m in hf_gpt2 hf_llama; do
    "$A" train "$here/train_ref.ini" --set model.init="$SRC/$m" --out "$W/$m" >"$W/$m.log" 2>&1 ||
        fail "train $m: $(tail -3 "$W/$m.log")"
    "$A" export "$W/$m" --hf "$W/${m}_hf" >>"$W/$m.log" 2>&1 || fail "export $m: $(tail -3 "$W/$m.log")"
    echo "$m, 20 FP32 AdamW steps:"
    python3 "$here/train_compare.py" fp32 "$ref" "$m" "$W/$m/metrics.jsonl" \
        "$W/${m}_hf/model.safetensors" || fail "$m: amptrain's FP32 run is not PyTorch's"
done
"$A" train "$here/bf16_step.ini" --set model.init="$SRC/hf_llama" --out "$W/bf16" >"$W/bf16.log" 2>&1 ||
    fail "train bf16: $(tail -3 "$W/bf16.log")"
"$A" export "$W/bf16" --hf "$W/bf16_hf" >>"$W/bf16.log" 2>&1 || fail "export bf16: $(tail -3 "$W/bf16.log")"
echo "hf_llama, one bf16 step:"
python3 "$here/train_compare.py" bf16 "$ref" hf_llama "$W/bf16/metrics.jsonl" \
    "$SRC/hf_llama/model.safetensors" "$W/bf16_hf/model.safetensors" ||
    fail "hf_llama: amptrain's bf16 step is not autocast's"
