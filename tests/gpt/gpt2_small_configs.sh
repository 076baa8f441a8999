#!/bin/bash
# gpt2_small_configs.sh AMPTRAIN WORK_DIR CONFIGS_DIR
# configs/gpt2_small_{fp32,bf16,fp8,nvfp4}.ini parse and build: each trains
# 2 steps with the width, context and vocabulary shrunk by --set (the 124M
# model is too slow for the suite; docs/performance.md has its runs), and
# the resolved config keeps GPT-2 small's depth, heads, the padded
# vocabulary and the shipped BPE tokenizer on the text dataset.
set -u
A=$1 W=$2 C=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
for p in fp32 bf16 fp8 nvfp4; do
    cfg=$C/gpt2_small_$p.ini
    for want in "n_layer = 12" "n_head = 12" "n_embd = 768" "block_size = 256" "vocab_size = 50304" \
                "tokenizer = ../tests/data/tokenizer/gpt2.json" "dataset = text" "plugin = $p"; do
        grep -qx "$want" "$cfg" || fail "$cfg lacks '$want'"
    done
    "$A" train "$cfg" --set model.n_embd=48 --set model.block_size=32 --set data.vocab_size=2048 \
        --set train.steps=2 --set train.eval_every=2 --set data.eval_iters=1 \
        --out "$W/$p" >"$W/$p.log" 2>&1 || fail "$p: exit $?: $(tail -3 "$W/$p.log")"
    [ "$(grep -c '"loss"' "$W/$p/metrics.jsonl")" -eq 2 ] || fail "$p: not 2 steps in metrics.jsonl"
    grep -q '"test_loss"' "$W/$p/metrics.jsonl" || fail "$p: no evaluation"
    grep -q "^tokenizer = .*/tests/data/tokenizer/gpt2.json " "$W/$p/config.ini" ||
        fail "$p: the run's config.ini does not name the shipped tokenizer"
    grep -q '"vocab_size": 2048' "$W/$p/vocab.json" || fail "$p: vocab.json: $(cat "$W/$p/vocab.json")"
    echo "ok  gpt2_small_$p.ini: 2 steps at a shrunk width"
done
