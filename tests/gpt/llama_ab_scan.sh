#!/usr/bin/env bash
# The shipped Llama configs in an A/B layer scan, end to end
# (usage: llama_ab_scan.sh AMPTRAIN CONFIGS_DIR WORK_DIR):
# `amptrain ab llama_shakespeare_bf16.ini llama_shakespeare_fp8.ini --scan
# blocks --seeds 1 --set train.steps=4` exits 0, and its scan ranks the
# groups by Hugging Face Llama's module names: model.layers.0..3.* with the
# ten layers of a block each (two norms, q/k/v/o_proj, the attention,
# gate/up/down_proj); model.embed_tokens, model.norm and lm_head, which the
# fp8 policy already computes at bf16's precision, are listed as skipped and
# not run; ab.json and report.html hold the scan.
set -euo pipefail
amptrain=$1
configs=$2
work=$3
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
rm -rf "$work"
mkdir -p "$work"
"$amptrain" ab "$configs/llama_shakespeare_bf16.ini" "$configs/llama_shakespeare_fp8.ini" \
    --scan blocks --seeds 1 --set train.steps=4 --set data.eval_iters=2 --set run.device=cpu \
    --out "$work/ab" >"$work/ab.txt" 2>"$work/ab.log" || fail "ab: $(tail -3 "$work/ab.log")"
sed -n '/^layer scan:/,/^$/p' "$work/ab.txt"
grep -q '^layer scan: llama_shakespeare_fp8 with each group kept at llama_shakespeare_bf16' \
    "$work/ab.txt" || fail "no layer scan in the output"
for i in 0 1 2 3; do
    grep -Eq "^ +[0-9]+ +model\.layers\.$i\.\* +10 " "$work/ab.txt" ||
        fail "no group model.layers.$i.* of 10 layers"
done
for g in model.embed_tokens model.norm lm_head; do
    grep -Eq "^ +- +$g +1 +skipped: already at llama_shakespeare_bf16's precision" "$work/ab.txt" ||
        fail "group $g not listed as skipped"
done
rows=$(sed -n '/^rank  group/,/^$/p' "$work/ab.txt" | grep -cE '^ +[0-9]+ ')
[ "$rows" = 4 ] || fail "$rows groups ranked, expected 4"
! grep -q 'transformer\.' "$work/ab.txt" || fail "a transformer.* name in the scan"
grep -q '"scan": {"baseline": "llama_shakespeare_bf16", "candidate": "llama_shakespeare_fp8"' \
    "$work/ab/ab.json" || fail "ab.json: no scan"
grep -q 'id="scan"' "$work/ab/report.html" || fail "report: no scan table"
echo "ok  ab --scan blocks on the Llama configs: 4 groups named model.layers.N.* ranked; model.embed_tokens, model.norm, lm_head skipped"
