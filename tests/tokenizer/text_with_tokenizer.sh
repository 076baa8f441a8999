#!/bin/bash
# text_with_tokenizer.sh AMPTRAIN WORK_DIR
# [data] dataset = text with [data] tokenizer: the corpus encoded with the
# BPE as the run opens it gives, bit for bit, the losses and weights of
# dataset = tokens on the ids `amptrain tokenize` wrote (the last tenth of
# the ids validate in both); `sample` decodes with the tokenizer and draws
# the same text from both runs; the resume fingerprint covers the tokenizer
# file; vocab_size pads the vocabulary only with a tokenizer.
. "$(dirname "$0")/lib.sh"
GPT=$here/../gpt/tiny_gpt.ini
C=(--set train.steps=4 --set train.eval_every=2 --set train.checkpoint_every=2)
"$A" tokenize --tokenizer "$D/gpt2.json" --out "$W/tok" "$CORPUS" >"$W/tok.out" 2>"$W/tok.log" ||
    fail "tokenize: $(tail -3 "$W/tok.log")"
"$A" train "$GPT" "${C[@]}" --set data.dataset=tokens --set data.tokenizer="$D/gpt2.json" \
    --set data.train_tokens="$W/tok/train.bin" --set data.val_tokens="$W/tok/val.bin" \
    --out "$W/tokens" >"$W/tokens.log" 2>&1 || fail "tokens run: $(tail -5 "$W/tokens.log")"
"$A" train "$GPT" "${C[@]}" --set data.tokenizer="$D/gpt2.json" \
    --out "$W/text" >"$W/text.log" 2>&1 || fail "text run with a tokenizer: $(tail -5 "$W/text.log")"
[ "$(grep -c '"loss"' "$W/text/metrics.jsonl")" -ge 4 ] || fail "too few metrics lines"
grep -q '"test_loss"' "$W/text/metrics.jsonl" || fail "no evaluation in the text run"
if ! cmp -s <(mask "$W/tokens/metrics.jsonl") <(mask "$W/text/metrics.jsonl"); then
    diff <(mask "$W/tokens/metrics.jsonl") <(mask "$W/text/metrics.jsonl") | head -6 >&2
    fail "text + tokenizer gives other losses than tokens on the ids of amptrain tokenize"
fi
cmp "$W/tokens/weights.safetensors" "$W/text/weights.safetensors" ||
    fail "text + tokenizer trains other weights than tokens on the same ids"
grep -q '"vocab_size": 2048' "$W/text/vocab.json" && grep -q '"tokenizer": ' "$W/text/vocab.json" ||
    fail "vocab.json of a text run with a tokenizer: $(cat "$W/text/vocab.json")"
echo "ok  text + [data] tokenizer: the losses and weights of tokens on amptrain tokenize's ids"

S=(--prompt "ROMEO: my lord" --tokens 30 --top-k 50 --seed 3)
"$A" sample "$W/text" "${S[@]}" >"$W/s_text.txt" 2>"$W/s.log" || fail "sample (text): $(cat "$W/s.log")"
"$A" sample "$W/tokens" "${S[@]}" >"$W/s_tokens.txt" 2>>"$W/s.log" || fail "sample (tokens): $(cat "$W/s.log")"
head -c 14 "$W/s_text.txt" | grep -qx "ROMEO: my lord" || fail "sample does not start with the prompt"
[ "$(stat -c %s "$W/s_text.txt")" -ge 45 ] || fail "30 tokens gave $(cat "$W/s_text.txt")"
cmp "$W/s_text.txt" "$W/s_tokens.txt" || fail "the same weights and seed sampled other text"
echo "ok  sample decodes a text run through its tokenizer (the tokens run's text)"

# The fingerprint: the checkpoint at step 2 resumes on its tokenizer and
# refuses an edited one (a space added: the same ids, another file).
rm "$W/text/checkpoints/ckpt-00000004.amp"
cp "$D/gpt2.json" "$W/tk.json"
R=("${C[@]}" --set data.tokenizer="$W/tk.json")
"$A" train "$GPT" "${R[@]}" --out "$W/fp" >"$W/fp.log" 2>&1 || fail "fp run: $(tail -3 "$W/fp.log")"
rm "$W/fp/checkpoints/ckpt-00000004.amp"
was=$(sha256sum "$W/tk.json" | cut -d' ' -f1)
printf ' ' >>"$W/tk.json"
expect 2 "the data differs from the checkpoint's: $W/tk\\.json has sha256 [0-9a-f]{64} .* with sha256 $was" \
    "$W/fp_changed.log" -- "$A" train "$GPT" "${R[@]}" --resume "$W/fp"
cp "$D/gpt2.json" "$W/tk.json"
expect 0 "resuming from .*ckpt-00000002\\.amp" "$W/fp_ok.log" -- "$A" train "$GPT" "${R[@]}" --resume "$W/fp"
cmp "$W/fp/weights.safetensors" "$W/text/weights.safetensors" || fail "the resumed run trained other weights"
echo "ok  the resume fingerprint covers the tokenizer file"

# vocab_size pads with a tokenizer (a larger model, same data); without one
# it is refused by name on the text dataset.
"$A" train "$GPT" --set train.steps=1 --set train.eval_every=0 --set train.checkpoint_every=0 \
    --set data.tokenizer="$D/gpt2.json" --set data.vocab_size=2112 --out "$W/pad" >"$W/pad.log" 2>&1 ||
    fail "padded vocabulary: $(tail -3 "$W/pad.log")"
grep -q '"vocab_size": 2112' "$W/pad/vocab.json" || fail "padded: $(cat "$W/pad/vocab.json")"
expect 2 "\\[data\\] vocab_size = 2112 on dataset = text needs a \\[data\\] tokenizer" "$W/nopad.log" -- \
    "$A" train "$GPT" --set train.steps=1 --set data.vocab_size=2112 --out "$W/nopad"
echo "ok  vocab_size pads a tokenizer's vocabulary; without a tokenizer exit 2"
