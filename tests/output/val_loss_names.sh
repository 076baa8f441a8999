#!/bin/bash
# A language model is evaluated on its validation windows: `train` prints
# "eval at step N: val_loss L" and ends with "NAME: val_loss L, ..." and
# `ab` prints "[k/n] ARM seed S ... val_loss L (T s)", never test_acc (a
# classifier's lines keep test_loss and test_acc). Off a terminal.
# usage: val_loss_names.sh AMPTRAIN TINY_GPT.ini TINY_SGD.ini WORK_DIR
set -u
A=$1 GPT=$2 SGD=$3 W=$4
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
rm -rf "$W" && mkdir -p "$W" || exit 1

"$A" train "$GPT" --set train.steps=4 --set train.eval_every=2 --out "$W/gpt" 2>"$W/gpt.log" ||
    fail "the text run failed: $(tail -3 "$W/gpt.log")"
grep -Eq '^eval at step 2: val_loss [0-9.]+$' "$W/gpt.log" || fail "no 'eval at step 2: val_loss L': $(grep eval "$W/gpt.log")"
grep -Eq '^amptrain: tiny_gpt: val_loss [0-9.]+, 4 steps \(0 skipped\), [0-9.]+ s$' "$W/gpt.log" ||
    fail "no final 'tiny_gpt: val_loss L, 4 steps (0 skipped), T s': $(tail -1 "$W/gpt.log")"
grep -q 'test_acc\|test_loss' "$W/gpt.log" && fail "a text run prints test_acc or test_loss: $(grep -m1 'test_' "$W/gpt.log")"

sed 's/^name = tiny_gpt$/name = tiny_gpt_b/' "$GPT" >"$W/gpt_b.ini"
"$A" ab "$GPT" "$W/gpt_b.ini" --seeds 1 --set train.steps=2 --out "$W/ab" 2>"$W/ab.log" >/dev/null ||
    fail "the study of text arms failed: $(tail -3 "$W/ab.log")"
[ "$(grep -Ec '^\[[12]/2\] tiny_gpt(_b)? seed 7 \.\.\. val_loss [0-9.]+ \([0-9.]+ s\)$' "$W/ab.log")" = 2 ] ||
    fail "not 2 run lines '[k/2] ARM seed 7 ... val_loss L (T s)': $(grep '^\[' "$W/ab.log")"
grep -q 'test_acc' "$W/ab.log" && fail "ab prints test_acc for a text run: $(grep -m1 test_acc "$W/ab.log")"

# a classifier's lines are as they were
"$A" train "$SGD" --set train.steps=200 --out "$W/sgd" 2>"$W/sgd.log" || fail "the classifier run failed"
grep -Eq '^eval at step 100: test_loss [0-9.]+ test_acc [0-9.]+$' "$W/sgd.log" || fail "classifier eval line: $(grep eval "$W/sgd.log")"
grep -Eq '^amptrain: tiny_sgd: test_acc [0-9.]+ test_loss [0-9.]+, 200 steps' "$W/sgd.log" || fail "classifier final line: $(tail -1 "$W/sgd.log")"
echo "text: $(grep -m1 '^eval' "$W/gpt.log"); $(tail -1 "$W/gpt.log"); $(grep -m1 '^\[1/2\]' "$W/ab.log")"
