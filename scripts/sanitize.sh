#!/usr/bin/env bash
# The whole CPU test suite under AddressSanitizer + UndefinedBehaviorSanitizer
# (gcc, -DAMP_SANITIZE=ON, CUDA off) in build-asan/. Extra arguments go to
# ctest (e.g. -R config). GPU tests skip as they do without a GPU. Without
# arguments the tests labelled `long` (exhaustive sweeps over every float bit
# pattern: arithmetic checks, run by ./test.sh on the optimised build) are
# left out: instrumented they would take hours and check no memory access
# the short tests of the same kernels do not.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${AMP_SANITIZE_BUILD_DIR:-build-asan}

# Warnings are the main build's job (-Werror there); instrumented code draws
# extra gcc flow warnings that say nothing about the source.
CC=${AMP_SANITIZE_CC:-gcc} cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAMP_TESTS=ON \
      -DAMP_CUDA=OFF -DAMP_SANITIZE=ON -DAMP_WERROR=OFF
cmake --build "$dir" -j"$(nproc)"

# halt_on_error + exitcode=86: the first report ends the process with a code
#   no test expects (not 0, 1, 2 or 77), so it fails even the tests that
#   expect a failure exit.
# detect_leaks: the CLI and every test free what they allocate.
# allocator_may_return_null: absurd sizes in bad inputs must reach our
#   "out of memory" messages (malloc returning NULL), as they do without ASan,
#   instead of ASan aborting on the request.
# No leak suppressions: OpenBLAS, zlib, inih and dlopen/dlclose report no
#   leaks in this suite, so any report is ours.
export ASAN_OPTIONS="halt_on_error=1:exitcode=86:detect_leaks=1:allocator_may_return_null=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export UBSAN_OPTIONS="halt_on_error=1:exitcode=86:print_stacktrace=1:report_error_type=1"
cd "$dir"
if [ $# -eq 0 ]; then set -- -LE long; fi
ctest --output-on-failure -j2 --timeout 900 "$@"
