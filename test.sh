#!/usr/bin/env bash
# Installs what is missing, builds (with the CUDA backend when nvcc is found)
# and runs every test with ctest. GPU tests skip where no GPU is visible.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/deps.sh
amp_install_deps
amp_build -DAMP_TESTS=ON
cd build
ctest --output-on-failure -j2 "$@"
