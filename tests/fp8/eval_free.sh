#!/bin/bash
# Evaluation never changes training: the scaled operands' state (amax
# histories, scales, this step's stats, NVFP4's stochastic-rounding tensor
# count) is recorded from training steps only; an evaluation quantizes with
# the current scales and leaves no trace. Under each scaled policy (fp8
# delayed and current, mxfp8, nvfp4 with stochastic rounding and the
# Hadamard transform) a run with `eval_every = 10` logs the same training
# lines (losses and FP8 telemetry) as one with `eval_every = 0`, and ends
# with the same weights, bit for bit (at one thread count).
# usage: eval_free.sh AMPTRAIN CONFIG WORK_DIR
. "$(dirname "$0")/lib.sh"
check() { # POLICY [--set ...]
    local p=$1
    shift
    run ${p}_noeval --set train.steps=25 "$@" --set train.eval_every=0
    run ${p}_eval --set train.steps=25 "$@" --set train.eval_every=10
    python3 - "$W/${p}_noeval/metrics.jsonl" "$W/${p}_eval/metrics.jsonl" <<'PY' || fail "$p: the training lines differ"
import json, sys
def lines(p):
    out = []
    for l in open(p):
        r = json.loads(l)
        if "loss" in r:
            for k in ("step_ms", "cpu_ms"):
                r.pop(k, None)
            out.append(r)
    return out
a, b = lines(sys.argv[1]), lines(sys.argv[2])
evals = sum('"test_loss"' in l or '"val_loss"' in l for l in open(sys.argv[2]))
assert evals >= 2, "the run with eval_every = 10 evaluated %d times" % evals
assert len(a) == len(b) == 25, (len(a), len(b))
for x, y in zip(a, b):
    if x != y:
        for k in x:
            if x[k] != y.get(k):
                sys.exit("step %d: %s: %s\n  vs %s" % (x["step"], k, x[k], y.get(k)))
PY
    cmp -s "$W/${p}_noeval/weights.safetensors" "$W/${p}_eval/weights.safetensors" ||
        fail "$p: evaluating changed the final weights"
    echo "$p: eval_every 0 and 10 train the same"
}
check fp8_delayed --set precision.recipe=delayed --set precision.amax_history_len=1024
check fp8_current --set precision.recipe=current
check mxfp8 --set precision.plugin=mxfp8
check nvfp4 --set precision.plugin=nvfp4 --set precision.stochastic_rounding=1 \
    --set precision.hadamard=1
