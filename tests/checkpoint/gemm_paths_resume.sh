#!/bin/bash
# A resume keeps the GEMM paths its checkpoint ran (core/backend/cpu_gemm_tune.h):
# a run stopped by SIGTERM, whose cache is then flipped to the other library
# for every shape, resumes on the checkpoint's paths and ends with the same
# files as the run left alone; a fresh run on the flipped cache follows it
# and ends with other weights (so the comparison would see a changed path).
# Usage: gemm_paths_resume.sh AMPTRAIN CONFIG_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
A=$1 CONFIGS=$2 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
unset AMPTRAIN_GEMM AMPTRAIN_GEMM_PATH AMPTRAIN_ISA
export AMPTRAIN_GEMM_CACHE=$W/cache AMPTRAIN_THREADS=2
args=("$CONFIGS/tiny_fp16_dynamic.ini" --set run.device=cpu --set train.steps=3000
      --set train.checkpoint_every=50)

"$A" train "${args[@]}" --out "$W/ref" 2>"$W/ref.log" || fail "the uninterrupted run: $(tail -3 "$W/ref.log")"
"$A" train "${args[@]}" --out "$W/run" 2>"$W/run.log" &
pid=$!
wait_for_ckpt "$W/run" "$pid" || fail "no checkpoint appeared"
sleep "0.0$((RANDOM % 10))"
kill -TERM "$pid"
wait "$pid"
[ $? = 143 ] || fail "the run was not stopped by SIGTERM mid-run; raise train.steps"
cache=$(ls "$W"/cache/gemm-paths-*.tsv) || fail "no cache file"
awk -F'\t' 'BEGIN { OFS = "\t" } { $2 = ($2 == "onednn-f32") ? "openblas-f32" : "onednn-f32"; print }' \
    "$cache" >"$cache.new" && mv "$cache.new" "$cache" || fail "cannot flip the cache"
"$A" train "${args[@]}" --resume "$W/run" 2>"$W/resume.log" || fail "--resume: $(tail -3 "$W/resume.log")"
same_outputs "$W/ref" "$W/run"
"$A" train "${args[@]}" --out "$W/flipped" 2>"$W/flipped.log" || fail "the flipped run: $(tail -3 "$W/flipped.log")"
cmp -s "$W/ref/weights.safetensors" "$W/flipped/weights.safetensors" &&
    fail "the flipped cache gave the same weights: this check could not see a changed path"
echo "ok: the resume kept its checkpoint's GEMM paths against a flipped cache; a fresh run followed the cache"
