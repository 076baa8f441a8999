#!/bin/bash
# The backend's count of host round trips inside forward/backward reaches
# summary.json (backend.host_round_trips_per_step). On the CPU backend the
# ops that stand for a transfer count as a device's would: under fp8's
# current recipe every quantization asks fp8_amax for its amax (a device
# downloads it), and nvfp4 hands each operand's tensor scale back to the
# host. The tiny GPT has 5 Linears (fused qkv, attention projection, MLP fc
# and projection, the tied head), each quantizing its input in the forward
# and its output gradient in the backward: 10 per step. Delayed scaling and
# fp32 make none (the batch upload and the step's statistics download lie
# outside forward/backward and do not count).
# usage: host_trips.sh AMPTRAIN CONFIG WORK_DIR
. "$(dirname "$0")/lib.sh"
check() { # NAME MEDIAN MAX [--set ...]
    local name=$1 median=$2 max=$3
    shift 3
    run "$name" --set train.steps=3 "$@"
    python3 - "$W/$name/summary.json" "$median" "$max" <<'PY' || fail "$name: host round trips"
import json, sys
s = json.load(open(sys.argv[1]))
t = s["backend"]["host_round_trips_per_step"]
want = {"median": float(sys.argv[2]), "max": int(sys.argv[3]), "steps_counted": 3}
got = {"median": t["median"], "max": t["max"], "steps_counted": t["steps_counted"]}
if got != want:
    sys.exit("got %s, want %s" % (got, want))
print("ok", sys.argv[1], got)
PY
}
check fp8_delayed 0 0 --set precision.recipe=delayed
check fp8_current 10 10 --set precision.recipe=current
check nvfp4 10 10 --set precision.plugin=nvfp4
check fp32 0 0 --set precision.plugin=fp32
echo "host round trips: fp8 current and nvfp4 10 per step, delayed and fp32 none"
