#!/bin/bash
# Layer scan of FP16 without loss scaling (gradients underflow) against FP32
# on the tiny task: the groups are ranked, the suggested `layer.` overrides
# are printed, and in a follow-up study the candidate with those overrides
# closes at least half of its accuracy gap to FP32. Then a scan of two
# identical policies: nothing to scan, refused before any run.
# usage: scan_check.sh AMPTRAIN FP32_INI FP16_NONE_INI WORKDIR
set -u
A=$1 BASE=$2 CAND=$3 W=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
"$A" ab "$BASE" "$CAND" --scan layers --seeds 3 --set run.device=cpu --out "$W/scan" \
    >"$W/scan.txt" 2>"$W/scan.log" || fail "scan failed: $(tail -3 "$W/scan.log")"
sed -n '/^layer scan:/,$p' "$W/scan.txt"
grep -Eq '^layer scan: tiny_fp16_none with each group kept at tiny_fp32.s precision; gap .* \+0\.[0-9]+ \[\+' "$W/scan.txt" ||
    fail "no significant gap reported"
grep -Eq '^ +1 +fc[12] +1 +\+[0-9.]+ \[' "$W/scan.txt" && grep -Eq '^ +2 +fc[12] +1 ' "$W/scan.txt" ||
    fail "the two layers are not ranked"
grep -q '"scan": {"baseline": "tiny_fp32", "candidate": "tiny_fp16_none"' "$W/scan/ab.json" || fail "ab.json: no scan"
# the gap, like every verdict of arms on the same seeds, rests on the per-seed differences
grep -q '"gap": {"diff": [-0-9.e]*, "test": "paired", "n": 3,' "$W/scan/ab.json" || fail "ab.json: the scan's gap is not paired by seed"
grep -q 'id="scan"' "$W/scan/report.html" || fail "report: no scan table"
lines=$(sed -n '/^suggested overrides/,/^$/p' "$W/scan.txt" | grep -E '^  layer\.') || fail "no overrides suggested"
# the follow-up: the candidate's config with the suggested lines in [precision]
{ sed '0,/^name = .*/s//name = tiny_fp16_fixed/; /^\[scaler\]/,$d' "$CAND"
  echo "$lines" | sed 's/^  //'
  echo; sed -n '/^\[scaler\]/,$p' "$CAND"; } >"$W/fixed.ini"
"$A" ab "$BASE" "$CAND" "$W/fixed.ini" --seeds 3 --set run.device=cpu --out "$W/follow" \
    >"$W/follow.txt" 2>"$W/follow.log" || fail "follow-up failed: $(tail -3 "$W/follow.log")"
python3 - "$W/follow/ab.json" <<'PY' || fail "the suggested overrides close less than half of the gap"
import json, sys
arms = {a["name"]: a["stats"]["test_acc"]["mean"] for a in json.load(open(sys.argv[1]))["arms"]}
base, cand, fixed = arms["tiny_fp32"], arms["tiny_fp16_none"], arms["tiny_fp16_fixed"]
closed = (fixed - cand) / (base - cand)
print(f"follow-up: fp32 {base:.4f}, fp16 none {cand:.4f}, with the overrides {fixed:.4f}: {100 * closed:.0f}% of the gap closed")
sys.exit(0 if base - cand > 0.1 and closed >= 0.5 else 1)
PY

# two identical policies (only [run] name differs): every group is already at
# the baseline's precision, so the scan is refused before any run
sed '0,/^name = .*/s//name = tiny_fp16_twin/' "$CAND" >"$W/twin.ini"
"$A" ab "$CAND" "$W/twin.ini" --scan layers --seeds 2 --set run.device=cpu --out "$W/same" \
    >"$W/same.txt" 2>"$W/same.log"
rc=$?
[ $rc = 2 ] || fail "identical policies: the scan exited $rc, not 2: $(tail -3 "$W/same.log")"
grep -q 'nothing to scan' "$W/same.log" || fail "identical policies: no reason given"
[ ! -d "$W/same/runs" ] || fail "identical policies: runs were started"
echo "scan_check: ok"
