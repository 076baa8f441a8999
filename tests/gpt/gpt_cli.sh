#!/usr/bin/env bash
# The GPT through the CLI (usage: gpt_cli.sh AMPTRAIN CONFIG_DIR WORK_DIR):
#   - a run stopped at its step-6 checkpoint and resumed ends with the same
#     metrics.jsonl, summary.json (timing masked), weights.safetensors and
#     config.ini as the run left alone (FP16 + dynamic scaler, evaluations
#     on both sides of the checkpoint);
#   - summary.json holds the validation loss, the run saved its vocabulary;
#   - `amptrain sample` from the finished run and from the step-12
#     checkpoint alone print the same text for the same seed, another seed
#     prints other text, the prompt comes first; bad prompts and non-text
#     runs are refused with exit 2.
set -euo pipefail
amptrain=$1
work=$3
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../checkpoint/lib.sh"
cfg=$here/tiny_gpt.ini
rm -rf "$work"
mkdir -p "$work"

"$amptrain" train "$cfg" --out "$work/ref" 2>"$work/ref.log" || { cat "$work/ref.log" >&2; fail "reference run"; }

# "stopped after step 6": the reference's folder as it stood then (the
# metrics history lives in metrics.jsonl; the resume cuts it back to the
# checkpoint's recorded length)
mkdir -p "$work/resumed/checkpoints"
cp "$work/ref/checkpoints/ckpt-00000006.amp" "$work/ref/checkpoints/vocab.json" "$work/resumed/checkpoints/"
cp "$work/ref/metrics.jsonl" "$work/resumed/"
"$amptrain" train "$cfg" --resume "$work/resumed" 2>"$work/resumed.log" ||
    { cat "$work/resumed.log" >&2; fail "resume"; }
grep -q "resuming from .*ckpt-00000006.amp" "$work/resumed.log" || fail "did not resume from step 6"
same_outputs "$work/ref" "$work/resumed"
[ "$(grep -c test_loss "$work/ref/metrics.jsonl")" -ge 3 ] || fail "expected evaluations at steps 4, 8, 12"
echo "ok  resumed GPT run equals the uninterrupted one"

# the validation loss in summary.json, the vocabulary beside the weights
summary=$work/ref/summary.json
val=$(sed -nE 's/^  "val_loss": (.*),$/\1/p' "$summary")
test=$(sed -nE 's/^  "test_loss": (.*),$/\1/p' "$summary")
[ -n "$val" ] && [ "$val" = "$test" ] || fail "summary.json: val_loss '$val', test_loss '$test'"
grep -q '"model": "gpt"' "$summary" || fail "summary.json does not name the gpt model"
grep -q '"vocab_size": 65,' "$work/ref/vocab.json" &&
    grep -q '"bytes": \[10, 32, 33,' "$work/ref/vocab.json" &&
    grep -q '"sha256": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"' "$work/ref/vocab.json" ||
    fail "vocab.json: $(cat "$work/ref/vocab.json")"
echo "ok  summary.json val_loss, vocab.json"

# sample: finished run vs its last checkpoint alone
"$amptrain" sample "$work/ref" --prompt "ROMEO:" --tokens 40 --seed 3 >"$work/s1.txt" 2>"$work/s1.log" ||
    { cat "$work/s1.log" >&2; fail "sample"; }
mkdir -p "$work/ckonly/checkpoints"
cp "$work/ref/checkpoints/ckpt-00000012.amp" "$work/ref/checkpoints/vocab.json" "$work/ckonly/checkpoints/"
"$amptrain" sample "$work/ckonly" --prompt "ROMEO:" --tokens 40 --seed 3 >"$work/s2.txt" 2>"$work/s2.log" ||
    { cat "$work/s2.log" >&2; fail "sample from a checkpoint"; }
cmp "$work/s1.txt" "$work/s2.txt" || fail "the checkpoint's sample differs from the finished run's"
"$amptrain" sample "$work/ref" --prompt "ROMEO:" --tokens 40 --seed 4 >"$work/s3.txt"
(cd "$work" && "$amptrain" sample ref --prompt "ROMEO:" --tokens 40 --seed 3 >"$work/s4.txt") ||
    fail "sample with a relative DIR"
cmp "$work/s1.txt" "$work/s4.txt" || fail "a relative DIR sampled other text"
! cmp -s "$work/s1.txt" "$work/s3.txt" || fail "seeds 3 and 4 sampled the same text"
head -c 6 "$work/s1.txt" | grep -qx "ROMEO:" || fail "the sample does not start with the prompt"
[ "$(wc -c <"$work/s1.txt")" -eq 47 ] || fail "expected 6 + 40 characters and a newline, got $(wc -c <"$work/s1.txt")"
"$amptrain" sample "$work/ref" --tokens 5 --temperature 0.5 --top-k 1 >/dev/null || fail "top-k 1"
echo "ok  sample: finished run == its checkpoint, seeded"

# a policy that mixes dtypes (attention core and LM head in FP32, one MLP in
# BF16, one LayerNorm output in FP32) runs through the operand conversions
"$amptrain" train "$cfg" --set precision.layer.transformer.h.0.attn=f32 \
    --set precision.layer.lm_head=f32 --set precision.layer.transformer.h.0.mlp.c_fc=bf16 \
    --set precision.layer.transformer.h.0.ln_2=f32 --out "$work/mixed" 2>"$work/mixed.log" ||
    { cat "$work/mixed.log" >&2; fail "mixed policy"; }
mixed=$(sed -nE 's/^  "val_loss": (.*),$/\1/p' "$work/mixed/summary.json")
awk -v a="$mixed" -v b="$val" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 0.05) }' ||
    fail "mixed policy val_loss $mixed, uniform fp16 $val"
echo "ok  mixed per-layer policy (val_loss $mixed vs $val)"

set +e
"$amptrain" sample "$work/ref" --prompt "é" --tokens 3 >/dev/null 2>"$work/bad.log"; rc=$?
[ $rc -eq 2 ] && grep -q "not in the run's vocabulary" "$work/bad.log" || fail "bad prompt: rc $rc"
"$amptrain" sample "$work/nonexistent" >/dev/null 2>"$work/bad.log"; rc=$?
[ $rc -eq 2 ] && grep -q "output folder of a" "$work/bad.log" || fail "not a run: rc $rc"
"$amptrain" sample "$work/ref" --tokens -3 >/dev/null 2>"$work/bad.log"; rc=$?
[ $rc -eq 2 ] || fail "--tokens -3: rc $rc"
"$amptrain" train "$cfg" --set model.name=mlp --out "$work/mlp" >/dev/null 2>"$work/bad.log"; rc=$?
[ $rc -eq 2 ] && grep -q "token sequences" "$work/bad.log" || fail "mlp on text: rc $rc"
"$amptrain" train "$cfg" --set model.n_head=3 --out "$work/heads" >/dev/null 2>"$work/bad.log"; rc=$?
[ $rc -eq 2 ] && grep -q "n_head" "$work/bad.log" || fail "n_embd 32 in 3 heads: rc $rc"
"$amptrain" train "$cfg" --set optim.min_lr=1 --out "$work/minlr" >/dev/null 2>"$work/bad.log"; rc=$?
[ $rc -eq 2 ] && grep -q "min_lr" "$work/bad.log" || fail "min_lr above lr: rc $rc"
printf 'short' >"$work/short.txt"
"$amptrain" train "$cfg" --set data.path="$work/short.txt" --out "$work/short" >/dev/null 2>"$work/bad.log"; rc=$?
[ $rc -eq 1 ] && grep -q "too few" "$work/bad.log" || fail "a 5-character text: rc $rc"
set -e
echo "ok  refusals"
