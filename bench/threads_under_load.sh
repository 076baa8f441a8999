#!/bin/sh
# threads_under_load.sh [BUILD_DIR] [ROUNDS] [STEPS]
# The GPT step (bench_step --model gpt --policy fp32, the nanoGPT CPU shape)
# with 1 and 2 threads while a CPU hog runs on every core, the runs
# interleaved (round by round: 1 thread, 2 threads, for each wait policy),
# and a table of the medians over the rounds of each run's median wall ms
# and CPU ms per step. Two wait policies: amptrain's (passive, what
# bench_step and amptrain set: docs/performance-threads.md) and the
# libraries' own defaults (libgomp spins 300000 rounds, OpenBLAS 2^28
# cycles), set explicitly so amptrain keeps them. The hogs are this
# script's children and end with it. See bench/README.md.
set -u
build=${1:-build} rounds=${2:-5} steps=${3:-20}
bench=$build/bench/bench_step
[ -x "$bench" ] || { echo "threads_under_load.sh: $bench not found (build first)" >&2; exit 2; }
cores=$(nproc)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/threads_load.XXXXXX") || exit 2
hogs=
cleanup() {
    for p in $hogs; do kill "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "load average before the hogs: $(cut -d' ' -f1-3 /proc/loadavg); $cores cores"
i=0
while [ "$i" -lt "$cores" ]; do
    sh -c 'while :; do :; done' &
    hogs="$hogs $!"
    i=$((i + 1))
done
sleep 1

# one bench_step run: "wall_ms cpu_ms" of its fp32 row
one() { # one THREADS POLICY
    if [ "$2" = spin ]; then
        set -- env AMPTRAIN_THREADS="$1" GOMP_SPINCOUNT=300000 OPENBLAS_THREAD_TIMEOUT=28
    else
        set -- env AMPTRAIN_THREADS="$1"
    fi
    "$@" "$bench" --model gpt --policy fp32 --steps "$steps" --warmup 3 --no-floor 2>&1 |
        awk -F'|' '$2 ~ /^ *fp32 *$/ { gsub(/ /, ""); print $3, $9 }'
}

r=1
while [ "$r" -le "$rounds" ]; do
    for policy in passive spin; do
        for t in 1 2; do
            one "$t" "$policy" >>"$tmp/$policy.$t" || exit 1
        done
    done
    r=$((r + 1))
done
load=$(cut -d' ' -f1-3 /proc/loadavg)

median() { # median COLUMN FILE
    awk -v c="$1" '{ print $c }' "$2" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "-"; exit }
        printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "load average with $cores hogs, at the end: $load"
echo
echo "| wait policy | threads | wall ms/step | CPU ms/step | runs |"
echo "|-------------|--------:|-------------:|------------:|-----:|"
for policy in passive spin; do
    for t in 1 2; do
        f=$tmp/$policy.$t
        printf '| %-11s | %7s | %12s | %11s | %4s |\n' "$policy" "$t" "$(median 1 "$f")" \
            "$(median 2 "$f")" "$(wc -l <"$f" | tr -d ' ')"
    done
done
for policy in passive spin; do
    awk -v p="$policy" 'FNR == NR { w1[FNR] = $1; c1[FNR] = $2; next }
        { n++; w[n] = $1 / w1[FNR]; c[n] = $2 / c1[FNR] }
        END { if (n) printf "%s: 2 threads / 1 thread, per round: wall", p;
              for (i = 1; i <= n; i++) printf " %.2f", w[i]; printf "; CPU";
              for (i = 1; i <= n; i++) printf " %.2f", c[i]; print "" }' \
        "$tmp/$policy.1" "$tmp/$policy.2"
done
