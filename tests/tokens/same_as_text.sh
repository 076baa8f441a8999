#!/bin/bash
# same_as_text.sh AMPTRAIN WORK_DIR
# The tokens dataset adds nothing to the data: the shipped corpus's
# character ids (exactly the text dataset's) written as a nanoGPT .bin, an
# llm.c shard and a .npy train the GPT of tests/gpt/tiny_gpt.ini to the
# same metrics.jsonl, bit for bit (timing masked), as [data] dataset = text.
# Controls: the same ids one token late (an off-by-one reader's data) must
# give other losses; write_tokens.py's .npy files are byte for byte what
# numpy.save wrote (tests/data/tokens_numpy_*.npy).
# And the resume fingerprint covers each shard: a checkpointed tokens run
# resumes on its files and refuses a shard with one id changed (same size).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../checkpoint/lib.sh"
A=$1 W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1
GPT=$here/../gpt/tiny_gpt.ini
CORPUS=$here/../../data/tinyshakespeare.txt
python3 "$here/write_tokens.py" chars "$CORPUS" "$W/ids" || fail "write_tokens.py chars"

for dt in u2 i4 u4; do
    python3 "$here/write_tokens.py" npy "<$dt" 300 "$W/ref_$dt.npy" || fail "write_tokens.py npy"
    cmp "$W/ref_$dt.npy" "$here/../data/tokens_numpy_$dt.npy" ||
        fail "write_tokens.py's <$dt .npy differs from numpy.save's"
done
echo "ok  write_tokens.py writes .npy files byte for byte as numpy.save"

S=(--set train.steps=6 --set train.checkpoint_every=0 --set train.eval_every=3)
run() { # run NAME [--set ...]: train, fail loudly
    local name=$1
    shift
    "$A" train "$GPT" "${S[@]}" "$@" --out "$W/$name" 2>"$W/$name.log" ||
        fail "$name: $(tail -3 "$W/$name.log")"
}
tokens() { # tokens DIR EXT: the keys of a tokens run on DIR/{train,val}.EXT
    echo --set data.dataset=tokens --set data.vocab_size=65 \
        --set data.train_tokens="$W/ids/$1/train.$2" --set data.val_tokens="$W/ids/$1/val.$2"
}
run text
[ "$(grep -c '"loss"' "$W/text/metrics.jsonl")" -ge 6 ] || fail "text: too few metrics lines"
for f in "bin bin" "llmc bin" "npy npy"; do
    set -- $f
    # shellcheck disable=SC2046 # the keys are words
    run "tokens_$1" $(tokens "$1" "$2")
    cmp <(mask "$W/text/metrics.jsonl") <(mask "$W/tokens_$1/metrics.jsonl") || {
        diff <(mask "$W/text/metrics.jsonl") <(mask "$W/tokens_$1/metrics.jsonl") | head -6 >&2
        fail "tokens ($1) and text runs of the same ids differ"
    }
    cmp "$W/text/weights.safetensors" "$W/tokens_$1/weights.safetensors" ||
        fail "tokens ($1): other weights than the text run"
done
echo "ok  dataset = tokens (.bin, llm.c shard, .npy) gives the text run's losses bit for bit"

# shellcheck disable=SC2046
run shifted $(tokens shifted bin)
! cmp -s <(mask "$W/text/metrics.jsonl") <(mask "$W/shifted/metrics.jsonl") ||
    fail "ids one token late gave the same losses: the comparison cannot see a broken reader"
echo "ok  the same ids one token late give other losses"

# ---- the resume fingerprint: each shard
mkdir -p "$W/shards"
cp "$W/ids/llmc/train.bin" "$W/shards/train_000.bin"
cp "$W/ids/bin/train.bin" "$W/shards/train_001.bin"
cp "$W/ids/npy/val.npy" "$W/shards/val.npy"
R=(--set data.dataset=tokens --set data.vocab_size=65 --set data.train_tokens="$W/shards/train_*.bin"
   --set data.val_tokens="$W/shards/val.npy" --set train.steps=4 --set train.checkpoint_every=2
   --set train.eval_every=2)
"$A" train "$GPT" "${R[@]}" --out "$W/shard_run" 2>"$W/shard_run.log" ||
    fail "shard run: $(tail -3 "$W/shard_run.log")"
rm "$W/shard_run/checkpoints/ckpt-00000004.amp" # stopped after step 2
cp -a "$W/shard_run" "$W/shard_run.before"
cp "$W/shards/train_001.bin" "$W/train_001.orig"
was=$(sha256sum "$W/shards/train_001.bin" | cut -d' ' -f1)
# token 1000 of the second shard becomes another valid id: same size
printf '\005\000' | dd of="$W/shards/train_001.bin" bs=1 seek=2000 conv=notrunc 2>/dev/null
now=$(sha256sum "$W/shards/train_001.bin" | cut -d' ' -f1)
[ "$was" != "$now" ] || fail "the edit did not change the shard"
expect 2 "^amptrain: .*/ckpt-00000002\\.amp: the data differs from the checkpoint's: $W/shards/train_001\\.bin has sha256 $now \\([0-9]+ bytes\\), but the checkpoint's run trained on $W/shards/train_001\\.bin with sha256 $was" \
    "$W/resume_changed.log" -- "$A" train "$GPT" "${R[@]}" --resume "$W/shard_run"
diff -r "$W/shard_run.before" "$W/shard_run" >&2 || fail "the refused resume changed the run folder"
cp "$W/train_001.orig" "$W/shards/train_001.bin"
expect 0 "resuming from .*ckpt-00000002\\.amp" "$W/resume_ok.log" -- \
    "$A" train "$GPT" "${R[@]}" --resume "$W/shard_run"
echo "ok  a tokens checkpoint refuses a changed shard (same size) and resumes on its own files"
