#!/bin/bash
# A GPT A/B (fp32 against fp16 + dynamic scaling, tiny GPT, 2 seeds): the
# verdict is the validation loss with its interval in the table, ab.json and
# the report, with perplexity, the validation-loss curve and a sample per arm.
# Then the same study evaluated only at its end under --metric acc: the
# verdict is accuracy and the report says the runs evaluated too rarely for
# a curve (instead of drawing a vertical line).
# usage: gpt_verdict.sh AMPTRAIN TINY_GPT_INI TEST_AB_CHECK WORKDIR
set -u
A=$1 C=$2 CHECK=$3 W=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
# the FP32 arm has no [scaler] section, like configs/gpt_shakespeare_fp32.ini: its
# sample reads back a config.ini whose scaler plugin is the (empty) default
sed '0,/^name = .*/s//name = gpt_a_fp32/; 0,/^plugin = fp16/s//plugin = fp32/; /^\[scaler\]/,$d' "$C" >"$W/a.ini"
sed '0,/^name = .*/s//name = gpt_b_fp16/' "$C" >"$W/b.ini"
"$A" ab "$W/a.ini" "$W/b.ini" --seeds 2 --set train.steps=8 --out "$W/lm" >"$W/lm.txt" 2>"$W/lm.log" ||
    fail "ab failed: $(tail -3 "$W/lm.log")"
cat "$W/lm.txt"
grep -Eq '^arm +seeds +val loss +ppl +Δloss vs baseline \[95% CI\] +interval +per-seed Δ +signif\.' "$W/lm.txt" ||
    fail "the table's verdict columns are not validation loss"
# the arms share seeds: a paired t interval (1 df) on the two per-seed differences
grep -Eq '^gpt_b_fp16( \(emulated\))? +2 +[0-9.]+ ± [0-9.]+ +[0-9.]+ +[-+][0-9.]+ \[[-+][0-9.]+, [-+][0-9.]+\] +paired t, 1 df +[-+][0-9.]+ [-+][0-9.]+ ' "$W/lm.txt" ||
    fail "no paired Δ validation loss with its interval and per-seed Δ for gpt_b_fp16"
# a recommendation above the table, in ab.json and at the top of the report
grep -Eq '^recommendation: (gpt_b_fp16: the cheapest|the baseline gpt_a_fp32: no arm)' "$W/lm.txt" ||
    fail "no recommendation in the summary"
[ "$(grep -n '^recommendation: ' "$W/lm.txt" | cut -d: -f1)" -lt "$(grep -n '^arm ' "$W/lm.txt" | cut -d: -f1)" ] ||
    fail "the recommendation is not above the table"
grep -q '"recommendation": {"arm": "gpt_[ab]_fp[0-9]*", "tolerance": 0.005, "tolerance_from": "default"' "$W/lm/ab.json" ||
    fail "ab.json: no recommendation with the default loss tolerance 0.005"
grep -q 'id="recommendation"' "$W/lm/report.html" || fail "report: no recommendation"
# FP16 weight GEMMs project to twice the FP32 (TF32-rate) baseline on both GPUs
grep -Eq '^gpt_b_fp16( \(emulated\))? .* 2\.00x\|2\.00x ' "$W/lm.txt" || fail "no projected 2.00x|2.00x for gpt_b_fp16"
grep -q 'projected 2.00x the baseline.s weight-GEMM speed on a B200, 2.00x on an H100/H200 (GEMM FLOPs FP16 100%)' "$W/lm.txt" ||
    fail "the recommendation's evidence has no projection with the FLOP mix"
grep -q '<td class="num projected"><span class="nw">H100/H200 2.00&times;</span><br><span class="nw">B200 2.00&times;</span>' "$W/lm/report.html" ||
    fail "report: no projected speed-up"
"$CHECK" "$W/lm" 2 || fail "ab.json"
grep -q '"metric": "val_loss", "metric_from": "model"' "$W/lm/ab.json" || fail "ab.json: metric is not val_loss"
grep -q '&Delta; validation loss vs baseline' "$W/lm/report.html" || fail "report: no Δ validation loss column"
grep -q 'ppl [0-9.]*' "$W/lm/report.html" || fail "report: no perplexity"
grep -q 'id="chart-eval".*validation loss' "$W/lm/report.html" || fail "report: no validation-loss curve"
[ "$(grep -c '<pre class="sample">' "$W/lm/report.html")" = 2 ] ||
    fail "report: not one sample per arm: $(cat "$W"/lm/runs/*/seed-*/sample.log)"

"$A" ab "$W/a.ini" "$W/b.ini" --seeds 2 --set train.steps=8 --set train.eval_every=0 --metric acc \
    --tolerance 1e-12 --out "$W/acc" >"$W/acc.txt" 2>"$W/acc.log" || fail "ab --metric acc failed: $(tail -3 "$W/acc.log")"
grep -Eq '^arm +seeds +test acc +test loss +Δacc vs baseline' "$W/acc.txt" || fail "--metric acc: the verdict is not accuracy"
grep -q '"metric": "test_acc", "metric_from": "--metric"' "$W/acc/ab.json" || fail "ab.json: --metric acc not recorded"
# --tolerance replaces the default (0.005 for accuracy) and is named as given
grep -q '^recommendation: .* test accuracy stays within 1e-12 .*tolerance from --tolerance' "$W/acc.txt" ||
    fail "--tolerance 1e-12: the recommendation does not apply it"
grep -q '"tolerance": 1e-12, "tolerance_from": "--tolerance"' "$W/acc/ab.json" ||
    fail "ab.json: --tolerance not recorded"
grep -q 'id="eval-too-rare">A run evaluated only 1 time' "$W/acc/report.html" ||
    fail "report: no note that the runs evaluated too rarely for a curve"
echo "gpt_verdict: ok"
