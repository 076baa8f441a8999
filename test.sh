#!/usr/bin/env bash
# Installs what is missing, builds (with the CUDA backend when nvcc is found)
# and runs every test with ctest. GPU tests skip where no GPU is visible.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/deps.sh
# The `browser` test renders the A/B report in headless Chromium. Chromium
# is installed only when that test will run: pass `-LE browser` (or `-E
# browser`) to leave it out, or `-R`/`-L` that does not select it.
extra=()
if amp_tests_want_browser "$@"; then extra+=(chromium); fi
# clang and its compiler-rt (libFuzzer, sanitizers) build the fuzz targets.
amp_install_deps clang libclang-rt-dev ${extra[@]+"${extra[@]}"}
amp_build -DAMP_TESTS=ON
(cd build && ctest --output-on-failure -j2 "$@")
# Then a short fuzz run of every fuzz/fuzz_*.c target (build-fuzz/, clang),
# AMP_FUZZ_SECONDS each (default 15; 0 skips). Only on a full run: a ctest
# selection such as `./test.sh -R config` skips it.
if [ $# -eq 0 ] && [ "${AMP_FUZZ_SECONDS:-15}" != 0 ]; then
    scripts/fuzz.sh "${AMP_FUZZ_SECONDS:-15}"
fi
