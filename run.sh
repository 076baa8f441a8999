#!/usr/bin/env bash
# Installs what is missing, builds in Release and runs an A/B test of the
# precision policies on the GPT on Shakespeare (FP32 baseline, FP16 + dynamic
# loss scaling, BF16, and every other configs/gpt_shakespeare_*.ini), where
# mixed precision shows: 3 seeds of a short run each (about 5 minutes on 2
# cores), with validation loss as the verdict and a text sample per arm. It
# ends with runs/ab/report.html.
#   ./run.sh            the short GPT study
#   ./run.sh --full     the full 2000-iteration GPT study (hours on 2 cores)
#   ./run.sh --mlp      the Fashion-MNIST MLP study (3 precision policies)
#   ./run.sh --help     this text
# Other arguments go to `amptrain ab` (e.g. --seeds 5, --set train.steps=100).
set -euo pipefail
cd "$(dirname "$0")"
study=gpt
case "${1:-}" in
--full) study=full; shift ;;
--mlp) study=mlp; shift ;;
-h | --help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
. scripts/deps.sh
amp_install_deps
amp_build
# the baseline first, then every other shipped policy
gpt=(configs/gpt_shakespeare_fp32.ini)
for c in configs/gpt_shakespeare_*.ini; do
    [ "$c" = configs/gpt_shakespeare_fp32.ini ] || gpt+=("$c")
done
case $study in
gpt)
    # 300 steps (30 of warm-up), validation every 50 on 10 batches
    ./build/amptrain ab "${gpt[@]}" --seeds 3 --out runs/ab --set train.steps=300 \
        --set optim.warmup_steps=30 --set train.eval_every=50 --set data.eval_iters=10 "$@" ;;
full) ./build/amptrain ab "${gpt[@]}" --seeds 3 --out runs/ab "$@" ;;
mlp)
    ./build/amptrain ab configs/fashion_fp32.ini configs/fashion_fp16_dynamic.ini \
        configs/fashion_bf16.ini --seeds 3 --out runs/ab "$@" ;;
esac
echo
echo "open the report: $(pwd)/runs/ab/report.html"
