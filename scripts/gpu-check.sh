#!/usr/bin/env bash
# gpu-check.sh: every GPU check in one short run, for a machine with a CUDA
# GPU (written for an H200, sm_90):
#   1. build   a fresh Release build dir with -DCMAKE_CUDA_ARCHITECTURES=90
#   2. ctest   ctest -L gpu --output-on-failure (GPU kernel/GEMM tests, the
#              CPU/CUDA training parity test and dist_nccl; a gpu test that
#              skips on a GPU machine counts as a failure, except dist_nccl
#              on a machine with one GPU)
#   2b. nccl   dist_nccl's result: 2 ranks under mpirun, one GPU each, NCCL
#              gradients (tests/dist/nccl.sh); with one GPU the summary says
#              it needs two (NCCL refuses two ranks on one device)
#   3. memcheck compute-sanitizer --tool memcheck on a 5-step CUDA training run
#              (when compute-sanitizer exists)
#   4. bench   build/bench/bench_step (with --device cuda when it has that option)
#   5. torch   scripts/torch_amp_bench.py, the same MLP step in PyTorch under
#              fp32, tf32, fp16 autocast + GradScaler and bf16 autocast (when
#              python3 has torch)
# and a summary table. Each part runs under `timeout`, capped so the whole
# script ends within the budget (default 460 s, under 8 minutes).
#
# usage: scripts/gpu-check.sh [--build-dir DIR] [--budget SECONDS] [-j N] [--build-only]
#   --build-dir DIR  build here (default ${TMPDIR:-/tmp}/amptrain-gpu-check); it is
#                    deleted first
#   --build-only     only configure and build (needs no GPU; for checking the script)
# Logs go to DIR/gpu-check-logs/, and also to $OUT/gpu-check-logs/ when $OUT is set.
# Exit status: 0 every part passed or was not applicable, 1 a part failed or
# no GPU is visible, 2 usage error.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${TMPDIR:-/tmp}/amptrain-gpu-check
BUDGET=460
JOBS=$(nproc 2>/dev/null || echo 4)
BUILD_ONLY=0

usage() {
    sed -n '/^# usage:/,/^# Exit status/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --build-dir) [ $# -ge 2 ] || usage; BUILD=$2; shift 2 ;;
    --budget) [ $# -ge 2 ] || usage; BUDGET=$2; shift 2 ;;
    -j) [ $# -ge 2 ] || usage; JOBS=$2; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    -h | --help) usage ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; usage ;;
    esac
done
case $BUDGET in '' | *[!0-9]*) echo "gpu-check: --budget needs whole seconds" >&2; exit 2 ;; esac
case $JOBS in '' | *[!0-9]*) echo "gpu-check: -j needs a number" >&2; exit 2 ;; esac

if [ "$BUILD_ONLY" = 0 ]; then
    if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
        echo "no GPU visible: gpu-check needs a machine with a CUDA GPU" >&2
        echo "(nvidia-smi -L failed or is missing; scripts/gpu-check.sh --build-only checks the build alone)" >&2
        exit 1
    fi
    nvidia-smi -L
fi

START=$(date +%s)
LOGS=$BUILD/gpu-check-logs
SUMMARY=()
FAILED=0

# Seconds a part may take: its cap, or what is left of the budget (minus a
# few seconds for the summary) when that is less. 0 when nothing is left.
part_limit() {
    local cap=$1 left
    left=$((BUDGET - ($(date +%s) - START) - 5))
    [ "$left" -lt 0 ] && left=0
    [ "$cap" -lt "$left" ] && echo "$cap" || echo "$left"
}

# record NAME STATUS SECONDS NOTE
record() {
    SUMMARY+=("$(printf '| %-9s | %-7s | %6s | %s' "$1" "$2" "$3" "$4")")
    [ "$2" = FAIL ] && FAILED=1
    echo "== $1: $2 ($3 s) $4"
}

# run_part NAME CAP LOGFILE CMD...: runs CMD under timeout, output to the
# terminal and LOGFILE; sets PART_RC (124 = timed out) and PART_S.
run_part() {
    local name=$1 cap=$2 log=$3 limit t0
    shift 3
    limit=$(part_limit "$cap")
    PART_S=0
    if [ "$limit" -lt 10 ]; then
        PART_RC=125
        echo "== $name: no time left in the ${BUDGET} s budget" | tee "$log"
        return
    fi
    echo "== $name (limit ${limit} s): $*"
    t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$log"
    PART_RC=${PIPESTATUS[0]}
    PART_S=$(($(date +%s) - t0))
}

status_of() { [ "$1" = 0 ] && echo PASS || echo FAIL; }
note_of() {
    case $1 in
    0) echo "" ;;
    124 | 137) echo "timed out" ;;
    125) echo "not run: time budget spent" ;;
    *) echo "exit status $1" ;;
    esac
}

# --- 1. build ------------------------------------------------------------------
case $BUILD in /) echo "gpu-check: refusing to use / as the build dir" >&2; exit 2 ;; esac
rm -rf "$BUILD"
mkdir -p "$LOGS" || exit 1
build() {
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DAMP_CUDA=ON &&
        cmake --build "$BUILD" -j "$JOBS"
}
export -f build
export ROOT BUILD JOBS
run_part build 270 "$LOGS/build.log" bash -c build
record build "$(status_of $PART_RC)" "$PART_S" "$(note_of $PART_RC)"
BUILD_OK=$((PART_RC == 0))

if [ "$BUILD_ONLY" = 1 ]; then
    :
elif [ "$BUILD_OK" = 0 ]; then
    for p in ctest nccl memcheck bench torch; do record "$p" FAIL 0 "not run: the build failed"; done
else
    # --- 2. ctest -L gpu -------------------------------------------------------
    run_part ctest 120 "$LOGS/ctest.log" ctest --test-dir "$BUILD" -L gpu --output-on-failure
    st=$(status_of $PART_RC)
    note=$(note_of $PART_RC)
    # On a GPU machine only the no-GPU CLI check may skip, and the NCCL test
    # when there is one GPU.
    GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    may_skip=train_cuda_without_gpu
    [ "${GPUS:-0}" -lt 2 ] && may_skip="$may_skip|dist_nccl"
    skipped=$(grep -E '\*\*\*Skipped|Not Run' "$LOGS/ctest.log" | grep -Ev "$may_skip" |
        sed -E 's/.*Test +#[0-9]+: ([^ ]+).*/\1/' | tr '\n' ' ')
    if [ -n "$skipped" ]; then
        st=FAIL
        note="$note skipped with a GPU present: $skipped"
    fi
    totals=$(grep -E 'tests passed' "$LOGS/ctest.log" | tail -n 1)
    record ctest "$st" "$PART_S" "${note:-$totals}"
    # 2b. the 2-process NCCL smoke test ran inside ctest when it could
    nccl_line=$(grep -E 'Test +#[0-9]+: dist_nccl ' "$LOGS/ctest.log" | tail -n 1)
    if [ -z "$nccl_line" ]; then
        record nccl n/a 0 "dist_nccl not built: no MPI found (apt-get install libopenmpi-dev openmpi-bin)"
    elif echo "$nccl_line" | grep -q Passed; then
        record nccl PASS 0 "dist_nccl: 2 ranks on 2 GPUs, NCCL gradients"
    elif [ "${GPUS:-0}" -lt 2 ]; then
        record nccl n/a 0 "${GPUS:-0} GPU: the 2-process NCCL test (dist_nccl) needs 2 GPUs, one per rank"
    else
        record nccl FAIL 0 "dist_nccl: $(echo "$nccl_line" | sed -E 's/.*dist_nccl *\.*//') (see ctest.log)"
    fi

    # --- 3. compute-sanitizer memcheck -----------------------------------------
    SAN=$(command -v compute-sanitizer || true)
    for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
        [ -z "$SAN" ] && [ -x "$c" ] && SAN=$c
    done
    if [ -z "$SAN" ]; then
        record memcheck n/a 0 "compute-sanitizer not found"
    else
        run_part memcheck 90 "$LOGS/memcheck.log" "$SAN" --tool memcheck --error-exitcode 9 \
            --leak-check full "$BUILD/amptrain" train "$ROOT/configs/tiny_fp16_dynamic.ini" \
            --set run.device=cuda --set train.steps=5 --out "$BUILD/memcheck-run"
        note=$(note_of $PART_RC)
        [ "$PART_RC" = 9 ] && note="memcheck reported errors (see the log)"
        [ "$PART_RC" = 0 ] && note=$(grep -E 'ERROR SUMMARY' "$LOGS/memcheck.log" | tail -n 1 | sed 's/^=* *//')
        record memcheck "$(status_of $PART_RC)" "$PART_S" "$note"
    fi

    # --- 4. bench_step ---------------------------------------------------------
    BENCH=$BUILD/bench/bench_step
    if [ ! -x "$BENCH" ]; then
        record bench FAIL 0 "$BENCH was not built"
    else
        if "$BENCH" --help 2>&1 | grep -q -- '--device'; then
            bargs=(--device cuda --steps 30 --warmup 5)
            bnote="CUDA"
        else
            # bench_step times the CPU backend only (no --device option yet).
            bargs=(--steps 5 --warmup 1)
            bnote="CPU only: bench_step has no --device option"
        fi
        run_part bench 90 "$LOGS/bench.log" env AMPTRAIN_PLUGIN_PATH="$BUILD/plugins" \
            "$BENCH" "${bargs[@]}" --batch 1024 --features 784 --hidden 4096,4096 --classes 10
        note=$(note_of $PART_RC)
        record bench "$(status_of $PART_RC)" "$PART_S" "${note:-$bnote}"
    fi

    # --- 5. PyTorch AMP reference -----------------------------------------------
    if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import torch' >/dev/null 2>&1; then
        record torch n/a 0 "python3 has no torch"
    else
        run_part torch 90 "$LOGS/torch.log" python3 "$ROOT/scripts/torch_amp_bench.py" \
            --batch 1024 --features 784 --hidden 4096,4096 --classes 10 --steps 50 --warmup 10
        if [ "$PART_RC" = 3 ]; then
            record torch n/a "$PART_S" "torch sees no CUDA device"
        else
            record torch "$(status_of $PART_RC)" "$PART_S" "$(note_of $PART_RC)"
        fi
    fi
fi

# --- summary -------------------------------------------------------------------
echo
echo "gpu-check summary ($(($(date +%s) - START)) s of a ${BUDGET} s budget; logs in $LOGS)"
printf '| %-9s | %-7s | %6s | %s\n' part status s note
printf '|%s|%s|%s|%s\n' ----------- --------- -------- ------
for line in "${SUMMARY[@]}"; do echo "$line"; done
for f in bench torch; do
    if [ -s "$LOGS/$f.log" ] && grep -q '^|' "$LOGS/$f.log"; then
        echo
        echo "$f:"
        grep '^|' "$LOGS/$f.log"
    fi
done
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
    mkdir -p "$OUT/gpu-check-logs" && cp "$LOGS"/*.log "$OUT/gpu-check-logs/" 2>/dev/null
fi
exit "$FAILED"
