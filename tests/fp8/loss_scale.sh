#!/bin/bash
# FP8 gradient scales do not depend on the loss scale: a GRAD_OUTPUT
# operand's amax, history and scale are kept in unscaled units (the amax
# divided by the loss scale its step used), so
#  - a run under a static scaler of 2^16 and one under a dynamic scaler
#    whose scale grows 1 -> 2^10 -> 2^20 at steps 4 and 8 (growth_interval
#    4, growth_factor 1024) log the same losses and the same FP8 telemetry
#    (amax, scale, saturated, flushed of every operand) at every step as the
#    run with no loss scale, and end with the same weights (powers of two:
#    every scaling is exact), for the delayed and the current recipe;
#  - a dynamic scaler that starts at 2^40 (attention in f16 overflows, the
#    step is skipped and the scale backs off by 2^-30) with the default
#    history of 1024 steps trains as with a history of 4: under loss-scaled
#    amaxes the first step's huge amaxes stayed the history's max, the
#    gradients' scales collapsed and flushed the gradients, and the loss
#    stalled.
# usage: loss_scale.sh AMPTRAIN CONFIG WORK_DIR
. "$(dirname "$0")/lib.sh"
# same A B: every step line's loss and fp8 array equal, and the weights
same() {
    python3 - "$W/$1/metrics.jsonl" "$W/$2/metrics.jsonl" <<'PY' || fail "$1 and $2 differ"
import json, sys
def steps(p):
    return [json.loads(l) for l in open(p) if '"loss"' in l]
a, b = steps(sys.argv[1]), steps(sys.argv[2])
assert len(a) == len(b) and a, (len(a), len(b))
for x, y in zip(a, b):
    for k in ("step", "loss", "skipped", "fp8"):
        if x[k] != y[k]:
            if k == "fp8":
                for o, p in zip(x[k], y[k]):
                    if o != p:
                        sys.exit("step %d: %s\n  vs %s" % (x["step"], o, p))
            sys.exit("step %d: %s %r vs %r" % (x["step"], k, x[k], y[k]))
PY
    cmp -s "$W/$1/weights.safetensors" "$W/$2/weights.safetensors" ||
        fail "$1 and $2 end with different weights"
}
# scales NAME: the loss scales the run's steps logged, space-separated
scales() { python3 -c "import json,sys; print(' '.join('%g' % json.loads(l)['scale'] for l in open(sys.argv[1]) if '\"loss\"' in l))" "$W/$1/metrics.jsonl"; }

GROW=(--set scaler.plugin=dynamic --set scaler.init_scale=1 --set scaler.growth_factor=1024
      --set scaler.growth_interval=4)
for recipe in delayed current; do
    P=(--set precision.recipe=$recipe --set precision.amax_history_len=16)
    run $recipe "${P[@]}"
    run ${recipe}_static "${P[@]}" --set scaler.plugin=static --set scaler.scale=65536
    run ${recipe}_grow "${P[@]}" "${GROW[@]}"
    s=$(scales ${recipe}_grow)
    [ "$s" = "1 1 1 1 1024 1024 1024 1024 1.04858e+06 1.04858e+06 1.04858e+06 1.04858e+06" ] ||
        fail "$recipe: the dynamic scaler's scales per step: $s"
    same $recipe ${recipe}_static
    same $recipe ${recipe}_grow
done

# the spike: attention in f16 overflows at the first step's loss scale of
# 2^40, the scaler skips that step and backs off by 2^-30 to 2^10 (no
# overflow from then on). The first step's gradient amaxes are finite
# (attention's f16 inf reaches only c_attn's output gradient: c_attn stays
# in bf16, so no FP8 operand sees an inf).
SPIKE=(--set scaler.plugin=dynamic --set scaler.init_scale=1099511627776
       --set scaler.backoff_factor=9.313225746154785e-10 --set precision.op.attention=f16
       --set precision.layer.transformer.h.0.attn.c_attn=bf16 --set train.steps=60
       --set train.log_every=10)
run spike_long "${SPIKE[@]}" --set precision.amax_history_len=1024
run spike_short "${SPIKE[@]}" --set precision.amax_history_len=4
python3 - "$W/spike_long/metrics.jsonl" "$W/spike_short/metrics.jsonl" <<'PY' || fail "the spike"
import json, sys
def run(p):
    return [json.loads(l) for l in open(p) if '"loss"' in l]
long, short = run(sys.argv[1]), run(sys.argv[2])
first, last, ref = long[0]["loss"], long[-1]["loss"], short[-1]["loss"]
print("history 1024: loss %.4f at step 10 -> %.4f at 60; history 4: %.4f at 60; loss scale %g"
      % (first, last, ref, long[-1]["scale"]))
g = [o for o in long[-1]["fp8"] if o["role"] == "grad_output"]
print("grad_output scales at the end:", " ".join("%g" % o["scale"] for o in g))
assert long[-1]["scale"] == 1024, "the scaler did not back off to 2^10 as planned"
assert all(o["scale"] > 1.0 for o in g), "a gradient's scale collapsed"
assert last < first - 0.2, "the loss did not fall"
assert abs(last - ref) < 0.15, "not as with a short history"
PY
