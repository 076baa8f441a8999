#!/bin/bash
# --resume of a run that is already complete (its last step's checkpoint
# beside summary.json) says so, exits 0 and leaves every file as it was: it
# used to rerun the final evaluation and rewrite summary.json with
# "median_step_ms": 0 (no step timed). A run whose last checkpoint is there
# but whose results are not (a failed final write) is finished by the
# resume, and the step times it did not measure are null, not 0.
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3
CFG=$CONFIGS/tiny_fp16_dynamic.ini
SETS=(--set run.device=cpu --set train.steps=6 --set train.checkpoint_every=3 --set train.log_every=1)
rm -rf "$W" && mkdir -p "$W" || exit 1

"$A" train "$CFG" "${SETS[@]}" --out "$W/run" 2>"$W/ref.log" || fail "the reference run: $(tail -3 "$W/ref.log")"
cp -a "$W/run" "$W/before"
"$A" train "$CFG" "${SETS[@]}" --resume "$W/run" >"$W/resume.log" 2>&1 ||
    fail "resume of a complete run: exit $? -- $(tail -3 "$W/resume.log")"
grep -Eq "^amptrain: tiny_fp16_dynamic: the run is already complete \(.*ckpt-00000006\.amp is step 6 of 6\); its results in .* are left as they are" \
    "$W/resume.log" || fail "no 'already complete' message: $(tail -3 "$W/resume.log")"
diff -r "$W/before" "$W/run" >&2 || fail "the resume of a complete run changed its folder"
echo "ok  --resume of a complete run: exit 0, nothing rewritten"

# the results lost, the last checkpoint kept: the resume writes them again
rm "$W/run/summary.json" "$W/run/weights.safetensors" "$W/run/config.ini"
"$A" train "$CFG" "${SETS[@]}" --resume "$W/run" >"$W/finish.log" 2>&1 ||
    fail "resume to rewrite the results: $(tail -3 "$W/finish.log")"
grep -q '^  "median_step_ms": null,$' "$W/run/summary.json" ||
    fail "summary.json: $(grep median_step_ms "$W/run/summary.json") (no step ran: expected null)"
same_outputs "$W/before" "$W/run"
echo "ok  a resume from the last checkpoint writes the same results, median_step_ms null"
