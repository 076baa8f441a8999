#!/bin/bash
# not_files.sh CASE AMPTRAIN CONFIG_DIR PLUGIN.so WORK_DIR
# Paths that are not regular files, everywhere amptrain reads one (issue 15).
# A FIFO used to hang the process (open or read waits for a writer that
# never comes, and SIGTERM was ignored meanwhile), /dev/zero as the config
# trained with defaults, a huge sparse ckpt-*.amp was read whole before its
# 32-byte header was looked at. Each command runs under `timeout 60` (and
# SIGKILL 10 s later, for one that ignores SIGTERM), so a hang fails the case
# instead of stalling the suite; each must exit with its code and say what
# the path is.
#   config    FIFO, /dev/zero and a directory as CONFIG.ini      (exit 2)
#   data      FIFOs as the IDX files of [data] path               (exit 1)
#   init      a FIFO as [model] init                              (exit 2)
#   plugin    a FIFO named as the scaler plugin, by path           (exit 2)
#   listing   a FIFO and a directory named amp_scaler_*.so in a plugin
#             folder: `plugins -v` rejects them and lists the rest (exit 0)
#   ckpt      `checkpoints`: a FIFO, a directory, a 2 TiB sparse file of
#             zeros and a valid checkpoint extended to 2 TiB, all named
#             ckpt-*.amp, are reported damaged with their reason   (exit 1)
#   resume    `train --resume` skips the same four with warnings and
#             resumes from the newest valid checkpoint             (exit 0)
#   ab        a FIFO as one of the A/B configs                    (exit 2)
#   text      a FIFO, /dev/zero, a directory and a sparse file one byte
#             over the 1 GiB limit as [data] path of a text run   (exit 1)
#   sample    `sample` of a text run whose corpus (vocab.json's data) was
#             replaced by a FIFO, then by a directory             (exit 1)
set -u
[ $# -eq 5 ] || { echo "usage: not_files.sh CASE AMPTRAIN CONFIG_DIR PLUGIN.so WORK_DIR" >&2; exit 2; }
case=$1 A=$2 CONFIGS=$3 PLUGIN=$4 W=$5/$1
CFG=$CONFIGS/tiny_fp16_dynamic.ini
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" || exit 2

fail() {
    echo "not_files.sh $case: $*" >&2
    [ -f "$W/log" ] && { echo "--- output:" >&2; cat "$W/log" >&2; }
    exit 1
}
. "$(dirname "$0")/expect.sh"
fifo_re='cannot read: it is a FIFO \(named pipe\), not a regular file'

case $case in
config)
    mkfifo "$W/fifo.ini" || exit 2
    expect 2 "^amptrain: $W/fifo\\.ini: $fifo_re" "$A" train "$W/fifo.ini" --out "$W/run"
    expect 2 "^amptrain: /dev/zero: cannot read: it is a character device, not a regular file" \
        "$A" train /dev/zero --out "$W/run"
    mkdir "$W/dir.ini"
    expect 2 "^amptrain: $W/dir\\.ini: cannot read: it is a directory, not a regular file" \
        "$A" train "$W/dir.ini" --out "$W/run"
    [ ! -e "$W/run" ] || fail "a refused config created its output folder"
    ;;
data)
    mkdir "$W/data"
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte; do mkfifo "$W/data/$f.gz" || exit 2; done
    expect 1 "train-images-idx3-ubyte\\.gz: $fifo_re" \
        "$A" train "$CONFIGS/fashion_fp32.ini" --set data.path="$W/data" --out "$W/run"
    ;;
init)
    mkfifo "$W/w.safetensors" || exit 2
    expect 2 "w\\.safetensors: $fifo_re" "$A" train "$CFG" --set model.init="$W/w.safetensors" \
        --out "$W/run"
    ;;
plugin)
    mkfifo -m 755 "$W/amp_scaler_fifo.so" || exit 2
    expect 2 "amp_scaler_fifo\\.so: $fifo_re" \
        "$A" train "$CFG" --set scaler.plugin="$W/amp_scaler_fifo.so" --out "$W/run"
    ;;
listing)
    cp "$PLUGIN" "$W/amp_scaler_dup.so" && chmod 755 "$W/amp_scaler_dup.so" || exit 2
    mkfifo -m 755 "$W/amp_scaler_fifo.so" && mkdir -m 755 "$W/amp_scaler_dir.so" || exit 2
    AMPTRAIN_PLUGIN_PATH=$W expect 0 "^rejected +$W/amp_scaler_fifo\\.so: $fifo_re" "$A" plugins -v
    grep -Eq "^rejected +$W/amp_scaler_dir\\.so: cannot read: it is a directory" "$W/log" ||
        fail "the directory named amp_scaler_dir.so is not rejected"
    grep -Eq "^scaler +dup +.*$W/amp_scaler_dup\\.so" "$W/log" || fail "the good plugin is not listed"
    ;;
ckpt | resume)
    # A run that kept checkpoints 110..150 (every 10, keep 5); 150 is
    # dropped so that resuming has steps left.
    "$A" train "$CFG" --set train.checkpoint_every=10 --set train.keep=5 --out "$W/run" \
        >"$W/log" 2>&1 || fail "the reference run failed"
    C=$W/run/checkpoints
    rm "$C/ckpt-00000150.amp"
    mkfifo "$C/ckpt-00000160.amp" && mkdir "$C/ckpt-00000170.amp" || exit 2
    truncate -s 2T "$C/ckpt-00000180.amp" || exit 2
    cp "$C/ckpt-00000140.amp" "$C/ckpt-00000190.amp" && truncate -s 2T "$C/ckpt-00000190.amp" || exit 2
    size140=$(stat -c %s "$C/ckpt-00000140.amp")
    if [ "$case" = ckpt ]; then
        expect 1 "ckpt-00000190\\.amp  DAMAGED: 2199023255552 bytes, but the header says $size140 \\(junk appended\\?\\)" \
            "$A" checkpoints "$W/run"
        for re in "ckpt-00000180\\.amp  DAMAGED: not an amptrain checkpoint \\(bad magic\\)" \
            "ckpt-00000170\\.amp  DAMAGED: cannot read: it is a directory, not a regular file" \
            "ckpt-00000160\\.amp  DAMAGED: $fifo_re" "ckpt-00000140\\.amp  ok"; do
            grep -Eq -- "$re" "$W/log" || fail "output lacks: $re"
        done
    else
        expect 0 "resuming from .*ckpt-00000140\\.amp" "$A" train "$CFG" \
            --set train.checkpoint_every=10 --set train.keep=5 --resume "$W/run"
        for re in "ckpt-00000190\\.amp: 2199023255552 bytes, but the header says" \
            "ckpt-00000180\\.amp: not an amptrain checkpoint" "ckpt-00000170\\.amp: cannot read: it is a directory" \
            "ckpt-00000160\\.amp: $fifo_re"; do
            grep -Eq -- "$re" "$W/log" || fail "output lacks the warning: $re"
        done
    fi
    ;;
ab)
    mkfifo "$W/b.ini" || exit 2
    expect 2 "$W/b\\.ini: $fifo_re" "$A" ab "$CFG" "$W/b.ini" --seeds 1 --out "$W/ab"
    ;;
text)
    GPT=$CONFIGS/../tests/gpt/tiny_gpt.ini
    mkfifo "$W/fifo.txt" && mkdir "$W/dir.txt" || exit 2
    truncate -s $(((1 << 30) + 1)) "$W/huge.txt" || exit 2
    expect 1 "$W/fifo\\.txt: $fifo_re" "$A" train "$GPT" --set data.path="$W/fifo.txt" --out "$W/run"
    expect 1 "^amptrain: /dev/zero: cannot read: it is a character device, not a regular file" \
        "$A" train "$GPT" --set data.path=/dev/zero --out "$W/run"
    expect 1 "$W/dir\\.txt: cannot read: it is a directory, not a regular file" \
        "$A" train "$GPT" --set data.path="$W/dir.txt" --out "$W/run"
    expect 1 "$W/huge\\.txt: 1073741825 bytes, more than the 1073741824 this file may have; \\[data\\] path of a text run names a regular file of at most 1024 MiB" \
        "$A" train "$GPT" --set data.path="$W/huge.txt" --out "$W/run"
    ;;
sample)
    # not the shipped corpus byte for byte: sample would fall back to that
    { cat "$CONFIGS/../data/tinyshakespeare.txt" && echo "EXEUNT"; } >"$W/corpus.txt" || exit 2
    "$A" train "$CONFIGS/../tests/gpt/tiny_gpt.ini" --set data.path="$W/corpus.txt" \
        --set train.steps=2 --set train.checkpoint_every=0 --out "$W/run" >"$W/log" 2>&1 ||
        fail "the text run failed"
    rm "$W/corpus.txt" && mkfifo "$W/corpus.txt" || exit 2
    expect 1 "^amptrain sample: $W/corpus\\.txt: $fifo_re" "$A" sample "$W/run" --tokens 3
    rm "$W/corpus.txt" && mkdir "$W/corpus.txt" || exit 2
    expect 1 "^amptrain sample: $W/corpus\\.txt: cannot read: it is a directory, not a regular file" \
        "$A" sample "$W/run" --tokens 3
    ;;
*)
    echo "not_files.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
exit 0
