#!/usr/bin/env bash
# Communication time against step time for data-parallel training: the MLP
# of bench_step (784-1024-1024-10, bench/dist_mlp.ini) trained by
# `mpirun -np N amptrain train` for N = 1, 2 with [dist] grad_dtype = f32
# and bf16, 128 rows per rank per step. Prints a markdown table from each
# run's summary.json: median step ms, median comm ms (the part of a step
# spent waiting for the gradient sum and the statistics, not hidden behind
# backward), the comm share, and rows per second over all ranks. Then the
# traffic table for N > 1: the bytes each rank sent the others per applied
# step (summary.json's "ranks": the gradients' reduce-scatter and gather
# back, the weights' gather), for shard = none with f32 gradients (the f32
# all-reduce), for [dist] shard = optimizer (ZeRO-1) and shard = gradients
# (ZeRO-2) under the fp32 and bf16 policies (ZeRO-2 under bf16 also with
# grad_dtype = bf16), each one's share of the f32
# all-reduce's bytes, each rank's grads arena (the largest) and rank 0's
# dist_buffer_bytes (ZeRO-2's bucket buffers with their stages).
#
# usage: bench/dist_bench.sh [BUILD_DIR] [--steps N] [--np "1 2"] [--set section.key=value]...
# Each rank runs with OPENBLAS_NUM_THREADS=1 and --bind-to none, so N = 1
# and N = 2 compare one core's worth of GEMM per rank. Not a test: the
# numbers move with the machine's load.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
steps=40
nps="1 2"
sets=()
while [ $# -gt 0 ]; do
    case $1 in
    --steps) steps=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) build=$1; shift ;;
    esac
done
amptrain=$build/amptrain
[ -x "$amptrain" ] || { echo "dist_bench: $amptrain not found (build first)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "dist_bench: mpirun not found (apt-get install openmpi-bin)" >&2; exit 2; }
extra=(--bind-to none --oversubscribe)
[ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

field() { sed -nE "s/.*\"$2\": \"?([^,\"]*)\"?,?$/\1/p" "$1" | head -n 1; }

echo "| ranks | grad_dtype | median step ms | median comm ms | comm share | rows/s (all ranks) |"
echo "|---:|---|---:|---:|---:|---:|"
for np in $nps; do
    for dt in f32 bf16; do
        [ "$np" = 1 ] && [ "$dt" = bf16 ] && continue # nothing travels on one rank
        out=$work/np$np-$dt
        OPENBLAS_NUM_THREADS=1 mpirun "${extra[@]}" -np "$np" "$amptrain" train "$here/dist_mlp.ini" \
            --set train.steps="$steps" --set dist.grad_dtype="$dt" ${sets[@]+"${sets[@]}"} \
            --out "$out" 2>"$out.log" || { echo "dist_bench: np $np $dt failed:" >&2; tail -5 "$out.log" >&2; exit 1; }
        step=$(field "$out/summary.json" median_step_ms)
        comm=$(field "$out/summary.json" median_comm_ms)
        rows=$(sed -nE 's/^batch_size = ([0-9]+).*/\1/p' "$out/config.ini" | head -n 1)
        awk -v np="$np" -v dt="$dt" -v s="$step" -v c="$comm" -v b="$rows" 'BEGIN {
            printf "| %d | %s | %.2f | %.3f | %.1f%% | %.0f |\n", np, dt, s, c, 100 * c / s, np * b * 1000 / s }'
    done
done

# traffic: exact bytes, whatever the machine's load
sent() { # RUN_DIR: "max mean total" of the ranks' bytes sent per step
    grep -o '"total": [0-9]*}}' "$1/summary.json" | grep -o '[0-9]*' |
        awk '{ t += $1; if ($1 > m) m = $1; n++ } END { printf "%d %.0f %d\n", m, t / n, t }'
}
echo
echo "| ranks | shard | policy | grad_dtype | bytes sent per rank per step (max) | mean | all ranks | of the f32 all-reduce | grads bytes per rank (max) | dist_buffer_bytes |"
echo "|---:|---|---|---|---:|---:|---:|---:|---:|---:|"
for np in $nps; do
    [ "$np" = 1 ] && continue
    base=
    for arm in "none fp32 f32" "optimizer fp32 f32" "optimizer bf16 f32" "gradients fp32 f32" \
               "gradients bf16 f32" "gradients bf16 bf16"; do
        set -- $arm
        out=$work/traffic-np$np-$1-$2-$3
        OPENBLAS_NUM_THREADS=1 mpirun "${extra[@]}" -np "$np" "$amptrain" train "$here/dist_mlp.ini" \
            --set train.steps=3 --set dist.shard="$1" --set precision.plugin="$2" --set dist.grad_dtype="$3" \
            ${sets[@]+"${sets[@]}"} --out "$out" 2>"$out.log" ||
            { echo "dist_bench: traffic np $np $arm failed:" >&2; tail -5 "$out.log" >&2; exit 1; }
        read -r mx mean total < <(sent "$out")
        [ -n "$base" ] || base=$total
        grads=$(grep -o '"grads": [0-9]*' "$out/summary.json" | grep -o '[0-9]*' | sort -n | tail -n 1)
        buf=$(field "$out/summary.json" dist_buffer_bytes)
        awk -v np="$np" -v sh="$1" -v p="$2" -v w="$3" -v m="$mx" -v a="$mean" -v t="$total" \
            -v b="$base" -v g="$grads" -v d="$buf" 'BEGIN {
            printf "| %d | %s | %s | %s | %d | %.0f | %d | %.4f | %d | %d |\n", np, sh, p, w, m, a, t, t / b, g, d }'
    done
done
