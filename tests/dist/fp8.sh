#!/bin/bash
# FP8 (the fp8 policy, delayed and current scaling) over 2 ranks equals one
# process with accumulate 2 bit for bit: weights and metrics, the per-layer
# amax/scale telemetry included (every rank quantizes with the scale made
# from the amax maxed over the ranks; the weight's counts are every rank's
# same cast, counted once).
# usage: fp8.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
dist_start "$@"
cfg=$HERE/tiny.ini
for recipe in delayed current; do
    sets=(--set precision.plugin=fp8 --set precision.recipe=$recipe
          --set precision.amax_history_len=5 --set train.steps=30 --set train.log_every=1)
    mpi 2 "$A" train "$cfg" "${sets[@]}" --out "$W/two_$recipe" 2>"$W/two_$recipe.log" ||
        fail "2-rank $recipe run failed: $(tail -5 "$W/two_$recipe.log")"
    "$A" train "$cfg" "${sets[@]}" --set train.accumulate=2 --out "$W/one_$recipe" \
        2>"$W/one_$recipe.log" || fail "1-process $recipe run failed: $(tail -3 "$W/one_$recipe.log")"
    grep -q '"fp8":\[{"layer":' "$W/one_$recipe/metrics.jsonl" || fail "no fp8 telemetry ($recipe)"
    cmp "$W/two_$recipe/weights.safetensors" "$W/one_$recipe/weights.safetensors" ||
        fail "fp8 $recipe: 2 ranks and 1 process x accumulate 2 end with different weights"
    # current scaling: an operand's telemetry scale is the last one its rank
    # used (rank 0 ends on the first half of the rows, the process on the
    # second): masked; every other number must be equal
    fp8mask() { if [ $recipe = current ]; then mask "$1" | sed -E 's/"scale":[0-9.eE+-]+,"saturated"/"scale":S,"saturated"/g'; else mask "$1"; fi; }
    cmp <(fp8mask "$W/two_$recipe/metrics.jsonl") <(fp8mask "$W/one_$recipe/metrics.jsonl") ||
        fail "fp8 $recipe: 2 ranks and 1 process x accumulate 2 log different metrics"
    echo "fp8 $recipe: 2 ranks == 1 process x accumulate 2: same weights, metrics and fp8 telemetry"
done
