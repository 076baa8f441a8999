#!/bin/bash
# Without [data] path a text run reads the shipped corpus. Where it is
# missing, the error names every place it is expected: <prefix>/share/
# amptrain/data/ beside the executable (<prefix>/bin/) and the source tree's
# data/; once the file is at the first, the same command trains. The
# executable is amptrain built against a source tree without the corpus,
# copied into a prefix of its own.
# usage: shipped_corpus.sh AMPTRAIN_NODATA PLUGIN_DIR CORPUS SOURCE_DATA_DIR DATADIR TINY_GPT.ini WORK_DIR
set -u
NODATA=$1 PLUGINS=$2 CORPUS=$3 SRC=$4 DATADIR=$5 CFG=$6 W=$7
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
rm -rf "$W" && mkdir -p "$W/prefix/bin" || exit 1
W=$(cd "$W" && pwd -P)
[ ! -e "$SRC/tinyshakespeare.txt" ] || fail "$SRC/tinyshakespeare.txt exists: the test needs a source tree without it"
cp "$NODATA" "$W/prefix/bin/amptrain" || exit 1
export AMPTRAIN_PLUGIN_PATH=$PLUGINS # the built-in plugins are not beside the copy
run=("$W/prefix/bin/amptrain" train "$CFG" --set train.steps=2 --set train.checkpoint_every=0)
expected=$W/prefix/$DATADIR/amptrain/data/tinyshakespeare.txt

"${run[@]}" --out "$W/missing" 2>"$W/missing.log"
rc=$?
[ "$rc" = 1 ] || fail "exit $rc without the corpus, expected 1: $(tail -3 "$W/missing.log")"
msg=$(grep '^amptrain: ' "$W/missing.log" | tail -1)
case $msg in
*"looked for at $expected or $SRC/tinyshakespeare.txt"*"set [data] path"*) ;;
*) fail "the error does not say where the corpus is expected ($expected or $SRC/tinyshakespeare.txt): $msg" ;;
esac

mkdir -p "$(dirname "$expected")" && cp "$CORPUS" "$expected" || exit 1
"${run[@]}" --out "$W/found" 2>"$W/found.log" || fail "the corpus at $expected was not read: $(tail -3 "$W/found.log")"
echo "missing: $msg"
echo "with the corpus at $expected: $(tail -1 "$W/found.log")"
