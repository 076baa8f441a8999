#!/usr/bin/env bash
# Installs what is missing, builds in Release and runs an A/B test of
# precision policies on the GPT on Shakespeare, where mixed precision shows:
# FP32 (the baseline) against BF16, FP16 + dynamic loss scaling, FP8 (delayed
# scaling) and NVFP4, 3 seeds of a short run each (about 5 minutes on 2
# idle cores), judged on validation loss seed by seed, with a text sample per
# arm. It ends with runs/ab/report.html.
#   ./run.sh            the short GPT study (the 5 policies above)
#   ./run.sh --formats  FP32 against every scaled format (FP8 delayed and
#                       current, MXFP8, NVFP4) and the NVFP4 ablation
#   ./run.sh --full     the full 2000-iteration GPT study (hours on 2 cores)
#   ./run.sh --mlp      the Fashion-MNIST MLP study (3 precision policies)
#   ./run.sh --help     this text
# Other arguments go to `amptrain ab` (e.g. --seeds 5, --set train.steps=100).
set -euo pipefail
cd "$(dirname "$0")"
study=gpt
case "${1:-}" in
--formats) study=formats; shift ;;
--full) study=full; shift ;;
--mlp) study=mlp; shift ;;
-h | --help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
. scripts/deps.sh
amp_install_deps
amp_build
c=configs/gpt_shakespeare
# the baseline first, then a chosen list: one arm per kind of mixed precision
gpt=($c"_fp32.ini" $c"_bf16.ini" $c"_fp16_dynamic.ini" $c"_fp8.ini" $c"_nvfp4.ini")
# every scaled format and every NVFP4 ablation arm
formats=($c"_fp32.ini" $c"_fp8.ini" $c"_fp8_current.ini" $c"_mxfp8.ini" $c"_nvfp4.ini"
    $c"_nvfp4_1d_weights.ini" $c"_nvfp4_no_bf16_layers.ini" $c"_nvfp4_no_rht.ini" $c"_nvfp4_no_sr.ini")
# STEPS steps (a tenth of warm-up), validation every 50 steps on 10 batches
short() {
    local steps=$1
    shift
    ./build/amptrain ab --seeds 3 --out runs/ab --set train.steps="$steps" \
        --set optim.warmup_steps=$((steps / 10)) --set train.eval_every=50 --set data.eval_iters=10 "$@"
}
case $study in
gpt) short 150 "${gpt[@]}" "$@" ;;
formats) short 150 "${formats[@]}" "$@" ;;
full) ./build/amptrain ab "${gpt[@]}" --seeds 3 --out runs/ab "$@" ;;
mlp)
    ./build/amptrain ab configs/fashion_fp32.ini configs/fashion_fp16_dynamic.ini \
        configs/fashion_bf16.ini --seeds 3 --out runs/ab "$@" ;;
esac
echo
echo "open the report: $(pwd)/runs/ab/report.html"
