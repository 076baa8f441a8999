#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/fuzz_*.c) with clang in build-fuzz/ and
# runs each for SECONDS (default 20), one after the other, single process.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 600 fuzz_idx
# Each target starts from its seed corpus fuzz/corpus/<name>/ (read only) plus
# the inputs earlier runs found (build-fuzz/fuzz/work/<name>/); crashes,
# leaks, timeouts and OOMs land in build-fuzz/fuzz/artifacts/ and fail the
# script. Replay one with: build-fuzz/fuzz/fuzz_NAME ARTIFACT
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
dir=${AMP_FUZZ_BUILD_DIR:-build-fuzz}

mkdir -p "$dir"
CC=${AMP_FUZZ_CC:-clang} cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAMP_FUZZ=ON \
    -DAMP_TESTS=OFF -DAMP_CUDA=OFF >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log" >&2; exit 1; }
cmake --build "$dir" --target fuzz_all -j"$(nproc)"

if [ $# -eq 0 ]; then
    set -- $(cd "$dir/fuzz" && ls fuzz_* 2>/dev/null | grep -v '\.' || true)
fi
[ $# -gt 0 ] || { echo "fuzz.sh: no fuzz targets built in $dir/fuzz" >&2; exit 1; }

# Leaks count as crashes; a report stops the run at once.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for t in "$@"; do
    name=${t#fuzz_}
    seeds=fuzz/corpus/$name
    work=$dir/fuzz/work/$name
    arts=$dir/fuzz/artifacts
    mkdir -p "$work" "$arts" "$seeds"
    dict=()
    [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
    log=$dir/fuzz/$t.log
    echo "fuzz.sh: $t for ${seconds}s (seeds: $seeds)"
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb also bounds
    # single allocations (malloc_limit_mb defaults to it).
    if "$dir/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$arts/$t-" "${dict[@]}" "$work" "$seeds" >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1)
        echo "fuzz.sh: $t ok: ${execs:-?} executions, ${cov:-cov: ?}, corpus $(ls "$work" | wc -l) found + $(ls "$seeds" | wc -l) seeds"
    else
        status=1
        echo "fuzz.sh: $t FAILED; the end of $log:" >&2
        tail -n 60 "$log" >&2
    fi
done
exit $status
