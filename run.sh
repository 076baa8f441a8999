#!/usr/bin/env bash
# Installs what is missing, builds in Release and trains the default config:
# the Fashion-MNIST MLP with FP16 autocast and dynamic loss scaling.
# Extra arguments go to `amptrain train` (e.g. --set train.epochs=1).
set -euo pipefail
cd "$(dirname "$0")"
. scripts/deps.sh
amp_install_deps
amp_build
./build/amptrain train configs/fashion_fp16_dynamic.ini --out runs/fashion_fp16_dynamic "$@"
echo "outputs: runs/fashion_fp16_dynamic/{summary.json,metrics.jsonl,config.ini,weights.safetensors}"
