#!/bin/bash
# FP8 working weights from the CLI: a GPT with every GEMM weight in FP8 (the
# tied head included) keeps its working copies at one byte per value plus
# the per-tensor scales, i.e. at most half of a 2-byte bf16 copy of the same
# weights (summary.json's exact arena bytes). The allowance over 1 byte per
# parameter is 2%: the arena's 256-byte alignment of each copy and the
# scales (the position embedding has no copy: its lookup reads the master).
# The same run with `layer.lm_head = bf16` (the tied embedding's weight in
# 16 bits: 2 or 4 bytes a value, by the CPU's GEMM path) must break the
# bound, or the check could not tell.
# usage: working_bytes.sh AMPTRAIN CONFIG WORK_DIR
set -u
A=$1 CFG=$2 W=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
# bytes NAME [--set ...]: trains one step into $W/NAME; BYTES, PARAMS
bytes() {
    local name=$1
    shift
    "$A" train "$CFG" --set run.device=cpu --set train.steps=1 --set data.eval_iters=1 "$@" \
        --out "$W/$name" 2>"$W/$name.log" || fail "$name: $(tail -3 "$W/$name.log")"
    BYTES=$(grep -o '"working_params": *[0-9]*' "$W/$name/summary.json" | grep -o '[0-9]*$')
    PARAMS=$(grep -o '"params": *[0-9]*' "$W/$name/summary.json" | head -1 | grep -o '[0-9]*$')
    [ -n "$BYTES" ] && [ -n "$PARAMS" ] || fail "$name: summary.json lacks working_params or params"
    echo "$name: working_params $BYTES bytes for $PARAMS parameters"
}
within() { [ $(($1 * 100)) -le $(($2 * 102)) ]; }
bytes fp8
within "$BYTES" "$PARAMS" || fail "FP8 working copies take $BYTES bytes for $PARAMS parameters: over 1.02 a value"
bytes head_bf16 --set precision.layer.lm_head=bf16
! within "$BYTES" "$PARAMS" || fail "with lm_head in bf16 the copies still fit 1.02 bytes a value: the check cannot tell"
echo "every GEMM weight in FP8: at most 1.02 bytes a value; with the head in bf16, more"
