#!/bin/bash
# train_on_tokenized.sh AMPTRAIN WORK_DIR
# The corpus tokenized by `amptrain tokenize` (default --val-fraction 0.1:
# the last tenth of the ids in val.bin) trains 3 steps of the tiny GPT on
# [data] dataset = tokens with the vocabulary the command printed; the
# splits hold every id once, in order.
. "$(dirname "$0")/lib.sh"
"$A" tokenize --tokenizer "$D/gpt2.json" --out "$W/tok" "$CORPUS" >"$W/tok.out" 2>"$W/tok.log" ||
    fail "tokenize: $(tail -3 "$W/tok.log")"
grep -q "train.bin: 359261 tokens, .*val.bin: 39917 tokens (raw uint16); vocab_size = 2048" \
    "$W/tok.out" || fail "unexpected summary: $(cat "$W/tok.out")"
cat "$W/tok/train.bin" "$W/tok/val.bin" | cmp - "$D/gpt2_corpus.bin" ||
    fail "train.bin + val.bin are not the corpus's ids in order"
vocab=$(sed -n 's/.*vocab_size = \([0-9]*\)$/\1/p' "$W/tok.out")
"$A" train "$here/../gpt/tiny_gpt.ini" --set train.steps=3 --set train.eval_every=3 \
    --set train.checkpoint_every=0 --set data.dataset=tokens --set data.vocab_size="$vocab" \
    --set data.train_tokens="$W/tok/train.bin" --set data.val_tokens="$W/tok/val.bin" \
    --out "$W/run" >"$W/run.log" 2>&1 || fail "train: $(tail -5 "$W/run.log")"
[ "$(grep -c '"loss"' "$W/run/metrics.jsonl")" -ge 3 ] || fail "too few metrics lines"
grep -q "vocab_size = 2048" "$W/run/config.ini" || fail "the run's config.ini lacks vocab_size = 2048"
echo "ok  3 steps on the tokenized corpus (vocab_size $vocab)"

# Failures leave nothing behind and say why: an unreadable second TEXT (exit
# 1), a tokenizer.json amptrain does not read (exit 2, naming what).
"$A" tokenize --tokenizer "$D/gpt2.json" --out "$W/bad" "$CORPUS" "$W/missing.txt" 2>"$W/bad.log"
rc=$?
[ $rc -eq 1 ] || fail "a missing TEXT: exit $rc, not 1"
grep -q "missing.txt" "$W/bad.log" || fail "a missing TEXT is not named: $(cat "$W/bad.log")"
[ -z "$(ls -A "$W/bad" 2>/dev/null)" ] || fail "a failed tokenize left files: $(ls -A "$W/bad")"
sed 's/"normalizer": null/"normalizer": {"type": "NFKC"}/' "$D/gpt2.json" >"$W/nfkc.json"
"$A" tokenize --tokenizer "$W/nfkc.json" --out "$W/bad" "$CORPUS" 2>"$W/nfkc.log"
rc=$?
[ $rc -eq 2 ] || fail "a normalizer: exit $rc, not 2"
grep -q "nfkc.json: normalizer NFKC is not supported" "$W/nfkc.log" ||
    fail "the normalizer is not named: $(cat "$W/nfkc.log")"
"$A" tokenize --help | grep -q -- "--val-fraction F" || fail "--help lacks --val-fraction"
echo "ok  failures: exit 1 / 2 with the file named, nothing written"
