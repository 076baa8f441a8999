#!/bin/sh
# clang_build.sh CMAKE SOURCE_DIR WORK_DIR GENERATOR CLANG [LAUNCHER]
# A fresh CPU-only configure and build of everything but the tests with
# CC=clang and warnings as errors (AMP_WERROR=ON). Prints the errors and
# warnings and exits 1 when the build fails.
set -u
[ $# -ge 5 ] || { echo "usage: clang_build.sh CMAKE SOURCE_DIR WORK_DIR GENERATOR CLANG [LAUNCHER]" >&2; exit 2; }
cmake=$1 src=$2 work=$3 gen=$4 clang=$5 launcher=${6:-}
rm -rf "$work" && mkdir -p "$work" || exit 1
if ! "$cmake" -S "$src" -B "$work" -G "$gen" -DCMAKE_C_COMPILER="$clang" -DCMAKE_BUILD_TYPE=Release \
    -DAMP_CUDA=OFF -DAMP_TESTS=OFF -DAMP_WERROR=ON ${launcher:+-DCMAKE_C_COMPILER_LAUNCHER="$launcher"} \
    >"$work.log" 2>&1 || ! "$cmake" --build "$work" -j 2 >>"$work.log" 2>&1; then
    grep -E 'error|warning' "$work.log" | head -n 20
    echo "FAIL: the clang build failed (log: $work.log)" >&2
    exit 1
fi
echo "ok  built with $("$clang" --version | head -n 1) and -Werror"
