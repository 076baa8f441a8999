#!/bin/sh
# policy_workspace.sh AMPTRAIN CONFIGDIR
# The nanoGPT Shakespeare GPT trained one step under fp32 and the lower
# precisions: workspace plus backend scratch (summary.json's
# memory_peak_bytes) is no larger than fp32's under bf16, fp8, mxfp8, nvfp4
# (its last block in bf16) and nvfp4 with every block scaled: the widened
# and dequantized operands share the bytes the attention needs anyway.
# And the activations under per-tensor FP8 (delayed and current scaling)
# are at most 0.83x bf16's: an FP8 Linear keeps its input for the weight
# gradient as the FP8 codes its forward made (1 byte a value), not the
# 16-bit input (2 bytes); the GPT's Linear inputs are a third of its
# activations, so halving them gives 0.82x.
# POSIX sh; python3 reads the JSON.
set -u
[ $# -eq 2 ] || { echo "usage: policy_workspace.sh AMPTRAIN CONFIGDIR" >&2; exit 2; }
bin=$1 dir=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/policy_ws.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
for p in fp32 bf16 fp8 fp8_current mxfp8 nvfp4 nvfp4_no_bf16_layers; do
    "$bin" train "$dir/gpt_shakespeare_$p.ini" --set train.steps=1 --set train.eval_every=0 \
        --out "$tmp/$p" >"$tmp/$p.log" 2>&1 || { cat "$tmp/$p.log" >&2; echo "FAIL: $p: amptrain failed" >&2; exit 1; }
done
python3 - "$tmp" <<'PY'
import json, sys
def ws(p):
    m = json.load(open("%s/%s/summary.json" % (sys.argv[1], p)))["memory_peak_bytes"]
    return m["workspace"] + m["backend_scratch"]
base, fail = ws("fp32"), 0
for p in ("bf16", "fp8", "mxfp8", "nvfp4", "nvfp4_no_bf16_layers"):
    bound = 1.0
    got = ws(p)
    ok = got <= bound * base
    print("%s %s: workspace + backend scratch %d bytes, fp32's %d (%.3fx, at most %.1fx)"
          % ("ok  " if ok else "FAIL", p, got, base, got / base, bound))
    fail |= not ok
def act(p):
    return json.load(open("%s/%s/summary.json" % (sys.argv[1], p)))["memory_peak_bytes"]["activations"]
for p in ("fp8", "fp8_current"):
    got, bf16 = act(p), act("bf16")
    ok = got <= 0.83 * bf16
    print("%s %s: activations %d bytes, bf16's %d (%.3fx, at most 0.83x)"
          % ("ok  " if ok else "FAIL", p, got, bf16, got / bf16))
    fail |= not ok
sys.exit(fail)
PY
