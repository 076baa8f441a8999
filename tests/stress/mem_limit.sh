#!/bin/bash
# Runs under an address-space limit (prlimit --as, as ulimit -v sets it),
# over a range of limits from the lowest at which amptrain starts at all
# (below it the system's loader or a library refuses before amptrain runs):
# every run either succeeds or exits 1 with an "amptrain: " message, leaves
# no temporary behind, never hangs (it used to: OpenBLAS threads that could
# not map their buffers were joined at exit) and is never killed by a
# signal. Each run is under `timeout`.
# usage: mem_limit.sh AMPTRAIN CONFIG_DIR WORK_DIR [STEP_MB] [SPAN_MB]
set -u
. "$(dirname "$0")/../checkpoint/lib.sh"
A=$1 C=$2 W=$3 STEP=${4:-20} SPAN=${5:-400}
command -v prlimit >/dev/null || { echo "SKIP: prlimit (util-linux) not found"; exit 77; }
# AddressSanitizer reserves terabytes of address space for its shadow memory
if ldd "$A" 2>/dev/null | grep -q 'libasan'; then
    echo "SKIP: built with AddressSanitizer, which cannot run under an address-space limit"
    exit 77
fi
rm -rf "$W" && mkdir -p "$W" || exit 1
MB=$((1024 * 1024))

# starts MB: `amptrain --version` runs under a limit of MB (and ends)
starts() {
    timeout -s KILL 30 prlimit --as=$(($1 * MB)) "$A" --version >/dev/null 2>&1
    local rc=$?
    [ "$rc" != 137 ] || fail "amptrain --version still ran 30 s after it started under $1 MB (a hang)"
    return $rc
}
# the lowest limit (MB) at which it starts: bisect [1, 65536]
lo=1 hi=65536
starts $hi || fail "amptrain does not start even with $hi MB"
while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    if starts $mid; then hi=$mid; else lo=$mid; fi
done
base=$hi
echo "amptrain starts from $base MB on; trying $base..$((base + SPAN)) MB in steps of $STEP MB"

ok=0 refused=0
# check NAME MB CONFIG [ARGS...]
check() {
    local name=$1 mb=$2 cfg=$3
    shift 3
    local d=$W/$name-$mb rc
    timeout -s KILL 120 prlimit --as=$((mb * MB)) "$A" train "$cfg" --out "$d" "$@" >"$d.log" 2>&1
    rc=$?
    [ "$rc" != 137 ] || fail "$name at $mb MB: still running after 120 s (a hang?): $(tail -3 "$d.log")"
    case $rc in
    0) ok=$((ok + 1)) ;;
    1) grep -q "^amptrain: " "$d.log" || fail "$name at $mb MB: exit 1 without a message: $(tail -3 "$d.log")"
       refused=$((refused + 1)) ;;
    *) fail "$name at $mb MB: exit $rc (killed by a signal, or a code other than 0/1): $(tail -3 "$d.log")" ;;
    esac
    for f in "$d"/.*.partial "$d"/*.partial "$d"/checkpoints/.*.partial; do
        [ ! -e "$f" ] || fail "$name at $mb MB: $f was left behind"
    done
    if [ "$rc" = 1 ]; then
        for f in config.ini summary.json weights.safetensors; do
            [ ! -e "$d/$f" ] || fail "$name at $mb MB: $d/$f exists after a failed run"
        done
    fi
    rm -rf "$d"
}

for mb in $(seq "$base" "$STEP" $((base + SPAN))); do
    check tiny "$mb" "$C/tiny_fp16_dynamic.ini" --set train.steps=30 --set train.checkpoint_every=10
    check gpt "$mb" "$C/gpt_shakespeare_bf16.ini" --set run.device=cpu --set train.steps=4 \
        --set train.eval_every=2 --set data.eval_iters=2 --set train.checkpoint_every=2
done
echo "$ok runs trained, $refused refused with a message; none hung, died by a signal or left a temporary"
