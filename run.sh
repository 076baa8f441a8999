#!/usr/bin/env bash
# Installs what is missing, builds in Release and runs an A/B test of the
# three Fashion-MNIST precision policies (FP32 baseline, FP16 + dynamic loss
# scaling, BF16), 3 seeds each, interleaved. It ends with runs/ab/report.html.
# Extra arguments go to `amptrain ab`; a quick look:
#   ./run.sh --seeds 1 --set train.epochs=1
set -euo pipefail
cd "$(dirname "$0")"
. scripts/deps.sh
amp_install_deps
amp_build
./build/amptrain ab configs/fashion_fp32.ini configs/fashion_fp16_dynamic.ini \
    configs/fashion_bf16.ini --seeds 3 --out runs/ab "$@"
echo
echo "open the report: $(pwd)/runs/ab/report.html"
