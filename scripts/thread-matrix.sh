#!/usr/bin/env bash
# The tests that compare runs bit for bit (labels `mpi` and `pin`) at 1 and
# at 2 threads per process, on the build ./test.sh made (build/). Those
# comparisons hold at equal thread counts only, and a test that quietly
# relied on the thread count a machine happens to give (cores / ranks) fails
# here on any machine instead of only on the CPU where the count matters.
# Extra arguments go to ctest (e.g. -R dist_cli).
#   scripts/thread-matrix.sh [CTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/../build" ||
    { echo "thread-matrix: no build/ here: run ./test.sh first" >&2; exit 2; }
status=0
for t in 1 2; do
    echo "== labels mpi|pin at AMPTRAIN_THREADS=$t per process"
    AMPTRAIN_THREADS=$t ctest --output-on-failure -j2 --timeout 900 -L 'mpi|pin' "$@" || status=1
done
exit $status
