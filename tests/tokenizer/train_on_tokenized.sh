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

# [data] tokenizer instead of vocab_size: the same run (the vocabulary is the
# tokenizer's), bit for bit; `sample` encodes the prompt and decodes with it.
"$A" train "$here/../gpt/tiny_gpt.ini" --set train.steps=3 --set train.eval_every=3 \
    --set train.checkpoint_every=0 --set data.dataset=tokens --set data.tokenizer="$D/gpt2.json" \
    --set data.train_tokens="$W/tok/train.bin" --set data.val_tokens="$W/tok/val.bin" \
    --out "$W/run_tok" >"$W/run_tok.log" 2>&1 || fail "train with a tokenizer: $(tail -5 "$W/run_tok.log")"
cmp <(mask "$W/run/metrics.jsonl") <(mask "$W/run_tok/metrics.jsonl") ||
    fail "[data] tokenizer gives other losses than vocab_size = $vocab"
"$A" train "$here/../gpt/tiny_gpt.ini" --set train.steps=1 --set data.dataset=tokens \
    --set data.tokenizer="$D/gpt2.json" --set data.vocab_size=2000 \
    --set data.train_tokens="$W/tok/train.bin" --set data.val_tokens="$W/tok/val.bin" \
    --out "$W/run_small" >"$W/run_small.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "vocab_size = 2000 is smaller than the vocabulary of \[data\] tokenizer" \
    "$W/run_small.log" || fail "vocab_size below the tokenizer's: exit $rc, $(tail -2 "$W/run_small.log")"
echo "ok  [data] tokenizer gives the vocabulary: the same losses; a smaller vocab_size is exit 2"
S=(--prompt "ROMEO: my lord" --tokens 30 --top-k 50)
"$A" sample "$W/run_tok" "${S[@]}" --seed 3 >"$W/s3a.txt" 2>"$W/s.log" || fail "sample: $(cat "$W/s.log")"
"$A" sample "$W/run_tok" "${S[@]}" --seed 3 >"$W/s3b.txt" 2>>"$W/s.log" || fail "sample: $(cat "$W/s.log")"
"$A" sample "$W/run_tok" "${S[@]}" --seed 4 >"$W/s4.txt" 2>>"$W/s.log" || fail "sample: $(cat "$W/s.log")"
head -c 14 "$W/s3a.txt" | grep -qx "ROMEO: my lord" || fail "sample does not start with the prompt"
[ "$(stat -c %s "$W/s3a.txt")" -ge 45 ] || fail "30 tokens gave $(cat "$W/s3a.txt")"
cmp -s "$W/s3a.txt" "$W/s3b.txt" || fail "the same seed sampled other text"
! cmp -s "$W/s3a.txt" "$W/s4.txt" || fail "seeds 3 and 4 sampled the same text"
"$A" sample "$W/run" --tokens 3 >/dev/null 2>"$W/s_none.log"
rc=$?
[ $rc -eq 2 ] && grep -q "without a \[data\] tokenizer" "$W/s_none.log" ||
    fail "sample of a tokens run without a tokenizer: exit $rc, $(cat "$W/s_none.log")"
echo "ok  sample of a tokens run through its tokenizer; without one exit 2"

# Progress: on a terminal (script(1) gives one) a line updated in place with
# the share done; off a terminal plain lines, one per file.
script -qec "'$A' tokenize --tokenizer '$D/gpt2.json' --out '$W/tty' '$CORPUS' '$CORPUS'" /dev/null \
    >"$W/tty.txt" || fail "tokenize on a terminal: $(cat "$W/tty.txt")"
grep -q $'\rtokenize: [^ ]*tinyshakespeare.txt: 1.0 of 2.2 MB (47%)' "$W/tty.txt" ||
    fail "no progress on a terminal: $(od -c "$W/tty.txt" | head -5)"
grep -q $'\r\033\\[Ktokenize: [^ ]*tinyshakespeare.txt: 1115394 bytes, 399178 tokens' "$W/tty.txt" ||
    fail "the file's line does not replace the progress line: $(od -c "$W/tty.txt" | head -8)"
! grep -q $'\r\|%' "$W/tok.log" || fail "progress off a terminal: $(od -c "$W/tok.log" | head -5)"
[ "$(wc -l <"$W/tok.log")" -eq 1 ] || fail "off a terminal, one line per file: $(cat "$W/tok.log")"
echo "ok  progress in place on a terminal, plain lines off one"

# Failures leave nothing behind and say why: a missing second TEXT and a
# tokenizer.json amptrain does not read (exit 2, naming what).
"$A" tokenize --tokenizer "$D/gpt2.json" --out "$W/bad" "$CORPUS" "$W/missing.txt" 2>"$W/bad.log"
rc=$?
[ $rc -eq 2 ] || fail "a missing TEXT: exit $rc, not 2"
grep -q "missing.txt" "$W/bad.log" || fail "a missing TEXT is not named: $(cat "$W/bad.log")"
[ -z "$(ls -A "$W/bad" 2>/dev/null)" ] || fail "a failed tokenize left files: $(ls -A "$W/bad")"
sed 's/"normalizer": null/"normalizer": {"type": "NFKC"}/' "$D/gpt2.json" >"$W/nfkc.json"
"$A" tokenize --tokenizer "$W/nfkc.json" --out "$W/bad" "$CORPUS" 2>"$W/nfkc.log"
rc=$?
[ $rc -eq 2 ] || fail "a normalizer: exit $rc, not 2"
grep -q "nfkc.json: normalizer NFKC is not supported" "$W/nfkc.log" ||
    fail "the normalizer is not named: $(cat "$W/nfkc.log")"
"$A" tokenize --help | grep -q -- "--val-fraction F" || fail "--help lacks --val-fraction"
echo "ok  failures: exit 2 with the file named, nothing written"

# A vocabulary past 16 bits (an added token with id 70000) writes llm.c's
# uint32 shards (magic 20240801, version 7, the count at byte 8), which the
# tokens dataset reads and --decode turns back into the corpus.
python3 - "$D/gpt2.json" "$W/wide.json" <<'PY' || fail "writing wide.json"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
d["added_tokens"].append({"id": 70000, "content": "<|wide|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True})
json.dump(d, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY
"$A" tokenize --tokenizer "$W/wide.json" --out "$W/wide" --val-fraction 0.5 "$CORPUS" \
    >"$W/wide.out" 2>"$W/wide.log" || fail "tokenize (wide): $(tail -3 "$W/wide.log")"
grep -q "(llm.c uint32 shards); vocab_size = 70001" "$W/wide.out" || fail "wide: $(cat "$W/wide.out")"
[ "$(od -An -tu4 -N12 "$W/wide/train.bin" | tr -s ' ')" = " 20240801 7 199589" ] ||
    fail "wide train.bin header: $(od -An -tu4 -N12 "$W/wide/train.bin")"
cat <("$A" tokenize --tokenizer "$W/wide.json" --decode "$W/wide/train.bin") \
    <("$A" tokenize --tokenizer "$W/wide.json" --decode "$W/wide/val.bin") | cmp - "$CORPUS" ||
    fail "the uint32 shards do not decode to the corpus"
"$A" train "$here/../gpt/tiny_gpt.ini" --set train.steps=1 --set train.eval_every=0 \
    --set train.checkpoint_every=0 --set data.dataset=tokens --set data.tokenizer="$W/wide.json" \
    --set data.train_tokens="$W/wide/train.bin" --set data.val_tokens="$W/wide/val.bin" \
    --out "$W/run_wide" >"$W/run_wide.log" 2>&1 || fail "train (wide): $(tail -5 "$W/run_wide.log")"
echo "ok  a 70,001-token vocabulary: llm.c uint32 shards that train and decode"
