#!/bin/bash
# GEMM paths chosen by measurement (core/backend/cpu_gemm_tune.h), from the
# CLI: the first run times each shape's candidates and writes the cache; the
# next run reads it and gives the same bits; the cache decides (a flipped
# cache flips the paths and the bits, and OpenBLAS's calls shared by the
# threads give the oneDNN run's losses); two runs started together agree; a
# damaged line is skipped; an unwritable cache folder is a warning, not a
# failure; AMPTRAIN_GEMM pins the library (one candidate, nothing timed);
# [run] gemm_path = widened feeds FP32 arrays, = native is refused (exit 2,
# naming the key) where the CPU has no native 16-bit GEMM and runs bf16
# shapes natively where it has one.
# Usage: paths_cli.sh AMPTRAIN CONFIG_DIR WORK_DIR
set -u
A=$1 CONFIGS=$2 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
CFG=$CONFIGS/tiny_fp16_dynamic.ini
BF16=$CONFIGS/fashion_bf16.ini
unset AMPTRAIN_GEMM AMPTRAIN_GEMM_PATH AMPTRAIN_ISA
export AMPTRAIN_THREADS=2

run() { # run NAME CACHE [args...]: a short tiny run with debug logs
    local name=$1 cache=$2
    shift 2
    AMPTRAIN_GEMM_CACHE=$cache AMPTRAIN_LOG=debug "$A" train "$CFG" --set run.device=cpu \
        --set train.steps=60 "$@" --out "$W/$name" 2>"$W/$name.log"
}
paths() { # the summary's shape -> path lines
    python3 -c "
import json,sys
for p in json.load(open(sys.argv[1]))['backend']['gemm_paths']: print(p['shape'], '->', p['path'])" \
        "$W/$1/summary.json"
}
count() { grep -c "$2" "$W/$1.log"; }

# 1. measured, then read back: the same paths and the same bits
run first "$W/c1" || fail "first run: $(tail -3 "$W/first.log")"
n=$(paths first | wc -l)
[ "$n" -ge 4 ] || fail "first run: $n GEMM shapes in summary.json, expected the MLP's >= 4"
[ "$(count first '(measured: ')" = "$n" ] || fail "first run: not every shape was measured"
grep -q 'onednn-f32 [0-9.]* ms, openblas-f32 [0-9.]* ms' "$W/first.log" ||
    fail "first run: the candidates' times are not logged"
cache=$(ls "$W"/c1/gemm-paths-*.tsv) || fail "no cache file in $W/c1"
[ "$(wc -l <"$cache")" = "$n" ] || fail "the cache holds $(wc -l <"$cache") lines for $n shapes"
run second "$W/c1" || fail "second run: $(tail -3 "$W/second.log")"
[ "$(count second '(cache: ')" = "$n" ] || fail "second run: not every shape came from the cache"
[ "$(paths first)" = "$(paths second)" ] || fail "the cached paths differ from the measured ones"
cmp -s "$W/first/weights.safetensors" "$W/second/weights.safetensors" ||
    fail "the same paths gave other weights"
echo "ok: $n shapes measured, then read from the cache: the same paths and weights"

# 2. the cache decides: every choice flipped flips the paths (and the bits)
mkdir -p "$W/c2" && awk -F'\t' 'BEGIN { OFS = "\t" }
    { $2 = ($2 == "onednn-f32") ? "openblas-f32" : "onednn-f32"; print }' "$cache" \
    >"$W/c2/$(basename "$cache")"
run flipped "$W/c2" || fail "flipped run: $(tail -3 "$W/flipped.log")"
diff <(paths first | sed 's/openblas-f32/X/; s/onednn-f32/openblas-f32/; s/X/onednn-f32/') \
    <(paths flipped) >/dev/null || fail "the flipped cache was not followed: $(paths flipped)"
cmp -s "$W/first/weights.safetensors" "$W/flipped/weights.safetensors" &&
    fail "other GEMM libraries gave the same weights bit for bit (the check would not see a change)"
echo "ok: a flipped cache flips every path"
# OpenBLAS beside oneDNN at 2 threads: the OpenMP threads share each call by
# slices of C (rows of the forward's, columns of the last layer's dW), and
# the slices add up to the whole product: the run tracks the oneDNN one
grep -q '"f32": "[^"]*openblas-sgemm [^"]* split' "$W/flipped/summary.json" ||
    fail "the OpenBLAS run at 2 threads did not share its calls: $(grep -o '"gemm": {[^}]*}' "$W/flipped/summary.json")"
python3 - "$W/first/summary.json" "$W/flipped/summary.json" <<'PY' || fail "the OpenBLAS run's losses left the oneDNN run's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("final_train_loss", "test_loss"):
    assert abs(a[k] - b[k]) <= 1e-4 * abs(a[k]), (k, a[k], b[k])
PY
echo "ok: OpenBLAS shares its calls among 2 threads and gives the oneDNN run's losses"

# 3. two runs started together on an empty cache agree, one line per shape
run togetherA "$W/c3" &
pa=$!
run togetherB "$W/c3" &
pb=$!
wait $pa || fail "concurrent run A: $(tail -3 "$W/togetherA.log")"
wait $pb || fail "concurrent run B: $(tail -3 "$W/togetherB.log")"
[ "$(paths togetherA)" = "$(paths togetherB)" ] || fail "two runs started together chose differently"
cmp -s "$W/togetherA/weights.safetensors" "$W/togetherB/weights.safetensors" ||
    fail "two runs started together gave other weights"
[ "$(wc -l <"$W"/c3/gemm-paths-*.tsv)" = "$n" ] || fail "concurrent runs wrote a shape twice"
echo "ok: two runs started together chose the same paths"

# 4. a damaged cache: lines cut short or foreign are skipped
mkdir -p "$W/c4" && { printf 'garbage\n%s\tnot-a-path\tx=1\n' "$(head -1 "$cache" | cut -f1)"
    head -c 30 "$cache"; } >"$W/c4/$(basename "$cache")"
run damaged "$W/c4" || fail "a damaged cache failed the run: $(tail -3 "$W/damaged.log")"
[ "$(count damaged '(measured: ')" = "$n" ] || fail "the damaged lines were used"
echo "ok: a damaged cache is skipped"

# 5. an unwritable cache folder: a warning that names it, and the run goes on
echo file >"$W/notadir"
run unwritable "$W/notadir/sub" || fail "an unwritable cache failed the run: $(tail -3 "$W/unwritable.log")"
grep -q "GEMM path cache $W/notadir/sub/gemm-paths-.*: cannot make its folder" "$W/unwritable.log" ||
    fail "no warning about the unwritable cache: $(grep -i cache "$W/unwritable.log" | head -2)"
echo "ok: an unwritable cache warns"

# 6. pins: AMPTRAIN_GEMM names the library, nothing is timed
AMPTRAIN_GEMM=openblas run pinned "$W/c6" || fail "pinned run: $(tail -3 "$W/pinned.log")"
[ "$(paths pinned | grep -vc -- '-> openblas-f32$')" = 0 ] || fail "AMPTRAIN_GEMM=openblas ran $(paths pinned)"
[ "$(count pinned '(only: ')" = "$n" ] && [ ! -e "$W/c6" ] || fail "a pinned run timed or cached"
AMPTRAIN_GEMM=reference run reference "$W/c6" || fail "reference run: $(tail -3 "$W/reference.log")"
[ "$(paths reference | grep -vc -- '-> reference-f64$')" = 0 ] || fail "AMPTRAIN_GEMM=reference ran $(paths reference)"
echo "ok: AMPTRAIN_GEMM pins the library"

# 7. [run] gemm_path and AMPTRAIN_GEMM_PATH
AMPTRAIN_GEMM_PATH=fast "$A" train "$CFG" --out "$W/badenv" 2>"$W/badenv.log"
[ $? = 2 ] && grep -q 'AMPTRAIN_GEMM_PATH=fast: expected auto, widened or native' "$W/badenv.log" ||
    fail "a bad AMPTRAIN_GEMM_PATH: $(tail -2 "$W/badenv.log")"
"$A" train "$CFG" --set run.gemm_path=fast --out "$W/badkey" 2>"$W/badkey.log"
[ $? = 2 ] && grep -q 'gemm_path' "$W/badkey.log" || fail "a bad [run] gemm_path: $(tail -2 "$W/badkey.log")"
small=(--set run.device=cpu --set train.steps=20 --set data.train_limit=2048 --set data.test_limit=512)
AMPTRAIN_GEMM_CACHE=$W/c7 "$A" train "$BF16" "${small[@]}" --set run.gemm_path=widened \
    --out "$W/widened" 2>"$W/widened.log" || fail "gemm_path = widened: $(tail -3 "$W/widened.log")"
paths widened | grep -q '^bf16 ' && fail "gemm_path = widened ran 16-bit GEMMs: $(paths widened)"
python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['backend']; assert b['gemm_path']=='widened', b" \
    "$W/widened/summary.json" || fail "summary.json does not say gemm_path widened"
AMPTRAIN_GEMM_CACHE=$W/c7 "$A" train "$BF16" "${small[@]}" --set run.gemm_path=native \
    --out "$W/native" 2>"$W/native.log"
rc=$?
if grep -qw avx512_bf16 /proc/cpuinfo; then
    [ $rc = 0 ] || fail "gemm_path = native on an AVX512_BF16 CPU: exit $rc: $(tail -2 "$W/native.log")"
    paths native | grep -q '^bf16 .*-> onednn-bf16$' || fail "gemm_path = native ran no native bf16 GEMM"
    echo "ok: gemm_path = native runs bf16 GEMMs natively on this CPU"
else
    [ $rc = 2 ] || fail "gemm_path = native on a CPU without a native kernel: exit $rc, expected 2"
    grep -q '\[run\] gemm_path = native: this CPU has no native 16-bit GEMM' "$W/native.log" ||
        fail "the refusal does not name the key: $(tail -2 "$W/native.log")"
    [ -e "$W/native/summary.json" ] && fail "a refused run left a summary"
    echo "ok: gemm_path = native is refused here, naming the key"
fi
echo "PASS"
