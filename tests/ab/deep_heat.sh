#!/bin/sh
# The report's heat map stays readable for a deep model: an MLP with 61
# layers is drawn in at most 24 rows of folded ranges, each naming its
# first and last layer, and every layer's counts land in some row.
# usage: deep_heat.sh AMPTRAIN CONFIG_A CONFIG_B OUT
set -u
A=$1 CA=$2 CB=$3 OUT=$4
hidden=$(seq -s, 60 | sed 's/[0-9][0-9]*/4/g')
"$A" ab "$CA" "$CB" --seeds 1 --set run.device=cpu --set train.steps=3 --set model.hidden="$hidden" --out "$OUT" \
    >"$OUT.log" 2>&1 || { tail -5 "$OUT.log"; echo "FAIL: ab over a 61-layer MLP failed"; exit 1; }
html=$OUT/report.html
grep -q '(61 layers in [0-9]* blocks)' "$html" || { echo "FAIL: no folded heat map in $html"; exit 1; }
rows=$(grep -o 'class="cat" [^>]*>fc[0-9]* \.\. fc[0-9]* ([0-9]* layers)' "$html" | sort -u | wc -l)
# two arms, the same rows each
[ "$rows" -ge 2 ] && [ "$rows" -le 24 ] || { echo "FAIL: $rows distinct folded rows"; exit 1; }
grep -q '>fc1 \.\. fc3 (3 layers)<' "$html" || { echo "FAIL: the first row is not fc1 .. fc3"; exit 1; }
echo "deep heat map: 61 layers in $rows rows"
