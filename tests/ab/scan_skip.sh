#!/bin/bash
# Layer scan of an fp8 candidate (lm_head kept in BF16) against a BF16
# baseline on a 1-block GPT: the groups the candidate already computes as
# the baseline does (transformer.wte, .wpe, .ln_f, lm_head) are not run and are listed as
# skipped in the terminal table, ab.json and the report; the one group that
# differs runs under a name taken from its layers ("+keep-transformer.h.0").
# A glob scan names its arm after the glob's layers; a scan whose every
# group is already at the baseline's precision is refused before any run.
# usage: scan_skip.sh AMPTRAIN TINY_GPT_INI WORKDIR
set -u
A=$1 C=$2 W=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
sed '0,/^name = .*/s//name = skip_bf16/; 0,/^plugin = fp16/s//plugin = bf16/; /^\[scaler\]/,$d' "$C" >"$W/bf16.ini"
{ sed '0,/^name = .*/s//name = skip_fp8/; 0,/^plugin = fp16/s//plugin = fp8/; /^\[scaler\]/,$d' "$C"
  printf 'layer.lm_head = bf16\n\n[scaler]\nplugin = none\n'; } >"$W/fp8.ini"
SETS=(--seeds 1 --set train.steps=2 --set train.eval_every=0 --set train.checkpoint_every=0)

"$A" ab "$W/bf16.ini" "$W/fp8.ini" --scan blocks "${SETS[@]}" --out "$W/blocks" \
    >"$W/blocks.txt" 2>"$W/blocks.log" || fail "blocks scan failed: $(tail -3 "$W/blocks.log")"
sed -n '/^layer scan:/,$p' "$W/blocks.txt"
arms=$(cd "$W/blocks/runs" && LC_ALL=C ls | tr '\n' ' ')
[ "$arms" = "skip_bf16 skip_fp8 skip_fp8_keep-transformer.h.0 " ] ||
    fail "runs other than the baseline, the candidate and the one group that differs: $arms"
grep -Eq '^ +1 +transformer\.h\.0\.\* +[0-9]+ ' "$W/blocks.txt" || fail "the block is not ranked"
for g in transformer.wte transformer.wpe transformer.ln_f lm_head; do
    grep -Eq "^ +- +$g +1 +skipped: already at skip_bf16's precision under skip_fp8 \(not run\)$" \
        "$W/blocks.txt" || fail "$g is not listed as skipped"
done
grep -Eq '^ +[0-9]+ +(transformer\.(wte|wpe|ln_f)|lm_head) ' "$W/blocks.txt" && fail "a skipped group is ranked"
python3 - "$W/blocks/ab.json" <<'PY' || fail "ab.json: scan groups or skipped list wrong"
import json, sys
sc = json.load(open(sys.argv[1]))["scan"]
ran = [(g["group"], g["arm"]) for g in sc["groups"]]
skipped = [(g["group"], g["name"], g["layers"]) for g in sc["skipped"]]
print("ab.json groups:", ran, "skipped:", skipped)
assert ran == [("transformer.h.0.*", "skip_fp8+keep-transformer.h.0")], ran
assert skipped == [(n, n, 1) for n in ("transformer.wte", "transformer.wpe", "transformer.ln_f", "lm_head")], skipped
PY
grep -q 'id="scan-skipped".*<code>transformer.wte</code> (1 layer), <code>transformer.wpe</code> (1 layer), <code>transformer.ln_f</code> (1 layer), <code>lm_head</code> (1 layer)' \
    "$W/blocks/report.html" || fail "report: no skipped groups"

# a glob group is named after its layers; wpe differs in nothing and is skipped
"$A" ab "$W/bf16.ini" "$W/fp8.ini" --scan 'transformer.h.0.mlp.*,transformer.wpe' "${SETS[@]}" --out "$W/glob" \
    >"$W/glob.txt" 2>"$W/glob.log" || fail "glob scan failed: $(tail -3 "$W/glob.log")"
arms=$(cd "$W/glob/runs" && LC_ALL=C ls | tr '\n' ' ')
[ "$arms" = "skip_bf16 skip_fp8 skip_fp8_keep-transformer.h.0.mlp " ] || fail "glob scan ran: $arms"
grep -Eq '^ +- +transformer\.wpe +1 +skipped: ' "$W/glob.txt" || fail "glob scan: wpe not listed as skipped"

# nothing differs in any group: refused before a run, exit 2
"$A" ab "$W/bf16.ini" "$W/fp8.ini" --scan 'transformer.ln_f,lm_head' "${SETS[@]}" --out "$W/none" \
    >"$W/none.txt" 2>"$W/none.log"
rc=$?
cat "$W/none.log"
[ $rc = 2 ] || fail "a scan with nothing to scan exited $rc, not 2"
grep -q "computes every layer of every group exactly as the baseline .* does: nothing to scan" \
    "$W/none.log" || fail "no reason given"
[ ! -d "$W/none/runs" ] || fail "runs were started"
echo "scan_skip: ok"
