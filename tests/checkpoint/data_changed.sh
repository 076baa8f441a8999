#!/bin/bash
# data_changed.sh AMPTRAIN CONFIG_DIR WORK_DIR MAKE_OLD_CKPT
# A checkpoint records its data's fingerprint (section DATA) and --resume
# refuses other data, exit 2, naming the file and both SHA-256s, leaving
# the folder as it was:
#  - text: the corpus edited with its length and vocabulary kept (two
#    characters swapped: every token id still valid, some now mean other
#    characters). It used to train on silently and rewrite vocab.json with
#    the new SHA-256;
#  - Fashion-MNIST: the test labels file replaced by one with a label
#    changed (same size, same count);
#  - a checkpoint from before DATA existed resumes, with a warning that the
#    data is unchecked.
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3 OLD=$4
rm -rf "$W" && mkdir -p "$W" || exit 1

sha() { sha256sum "$1" | cut -d' ' -f1; }

# ---- text
GPT=$CONFIGS/../tests/gpt/tiny_gpt.ini
head -c 20000 "$CONFIGS/../data/tinyshakespeare.txt" >"$W/corpus.txt" || exit 1
T=(--set data.path="$W/corpus.txt" --set train.steps=6 --set train.checkpoint_every=3)
"$A" train "$GPT" "${T[@]}" --out "$W/text" 2>"$W/text.log" || fail "text run: $(tail -3 "$W/text.log")"
rm "$W/text/checkpoints/ckpt-00000006.amp" # stopped after step 3
was=$(sha "$W/corpus.txt")
cp "$W/corpus.txt" "$W/corpus.orig"
# the first 'e' and the first 't' trade places: same bytes, same length
python3 - "$W/corpus.txt" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
i, j = b.index(b'e'), b.index(b't'); b[i], b[j] = b[j], b[i]
open(p, 'wb').write(b)
PY
now=$(sha "$W/corpus.txt")
[ "$was" != "$now" ] || fail "the edit did not change the corpus"
cp -a "$W/text" "$W/text.before"
expect 2 "^amptrain: .*/ckpt-00000003\\.amp: the data differs from the checkpoint's: $W/corpus\\.txt has sha256 $now \\(20000 bytes\\), but the checkpoint's run trained on $W/corpus\\.txt with sha256 $was \\(20000 bytes\\)" \
    "$W/text_resume.log" -- "$A" train "$GPT" "${T[@]}" --resume "$W/text"
diff -r "$W/text.before" "$W/text" >&2 || fail "the refused resume changed the run folder (vocab.json?)"
cp "$W/corpus.orig" "$W/corpus.txt"
expect 0 "resuming from .*ckpt-00000003\\.amp" "$W/text_ok.log" -- \
    "$A" train "$GPT" "${T[@]}" --resume "$W/text"
echo "ok  text: an edited corpus of the same length and vocabulary is refused, the original resumes"

# ---- Fashion-MNIST IDX files (links to the installed ones, one replaced)
FM=/usr/share/datasets/fashion-mnist
mkdir "$W/fm"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    ln -s "$FM/$f.gz" "$W/fm/$f.gz" || exit 1
done
F=(--set data.path="$W/fm" --set data.train_limit=256 --set data.test_limit=256 --set run.device=cpu
   --set data.batch_size=64 --set train.steps=4 --set train.checkpoint_every=2)
"$A" train "$CONFIGS/fashion_fp32.ini" "${F[@]}" --out "$W/fashion" 2>"$W/fashion.log" ||
    fail "fashion run: $(tail -3 "$W/fashion.log")"
rm "$W/fashion/checkpoints/ckpt-00000004.amp"
labels=$W/fm/t10k-labels-idx1-ubyte.gz
was=$(sha "$labels")
rm "$labels"
# the last test label (never among the 256 kept) becomes another class
gzip -dc "$FM/t10k-labels-idx1-ubyte.gz" | python3 -c '
import sys; b = bytearray(sys.stdin.buffer.read()); b[-1] = (b[-1] + 1) % 10; sys.stdout.buffer.write(b)' |
    gzip -n >"$labels" || exit 1
now=$(sha "$labels")
size=$(stat -c %s "$labels") orig_size=$(stat -c %s "$FM/t10k-labels-idx1-ubyte.gz")
cp -a "$W/fashion" "$W/fashion.before"
expect 2 "^amptrain: .*/ckpt-00000002\\.amp: the data differs from the checkpoint's: $labels has sha256 $now \\($size bytes\\), but the checkpoint's run trained on $labels with sha256 $was \\($orig_size bytes\\)" \
    "$W/fashion_resume.log" -- "$A" train "$CONFIGS/fashion_fp32.ini" "${F[@]}" --resume "$W/fashion"
diff -r "$W/fashion.before" "$W/fashion" >&2 || fail "the refused resume changed the run folder"
echo "ok  Fashion-MNIST: another t10k-labels file is refused"

# ---- a checkpoint from before the fingerprint: resumes, with a warning
ln -sf "$FM/t10k-labels-idx1-ubyte.gz" "$labels"
C=$W/fashion/checkpoints/ckpt-00000002.amp
"$OLD" "$C" "$C.old" && mv "$C.old" "$C" || fail "make_old_ckpt"
expect 0 "warning: the checkpoint records no fingerprint of its data \\(written by an older amptrain\\): the resume cannot check that $W/fm/train-images-idx3-ubyte\\.gz \\(and the IDX files beside it\\) is the data the run trained on" \
    "$W/old.log" -- "$A" train "$CONFIGS/fashion_fp32.ini" "${F[@]}" --resume "$W/fashion"
grep -q "resuming from .*ckpt-00000002\\.amp" "$W/old.log" || fail "the old checkpoint did not resume"
echo "ok  a checkpoint without a fingerprint resumes with a warning"
