#!/usr/bin/env bash
# gpu-check.sh: every GPU check in one short run on a bare CUDA machine
# (written for an H200, sm_90), and the two steps that make that run work on
# its first try, done here beforehand.
#
# usage: scripts/gpu-check.sh [--debs DIR] [--build-dir DIR] [--budget SECONDS] [-j N] [--build-only]
#        scripts/gpu-check.sh --prepare [--debs DIR]
#        scripts/gpu-check.sh --rehearse [--debs DIR] [--build-dir DIR] [-j N]
#   (no mode)   on the GPU machine: unpack DIR's .deb files into a prefix
#               under /tmp, then
#                 build     -DCMAKE_CUDA_ARCHITECTURES=90, all cores
#                 ctest     ctest -L gpu (a gpu test that skips there fails,
#                           except dist_nccl with one GPU)
#                 nccl      dist_nccl's result: 2 ranks under mpirun, one GPU
#                           each, NCCL gradients (tests/dist/nccl.sh); with
#                           one GPU the table says it needs two (NCCL refuses
#                           two ranks on one device); needs MPI in the build
#                 parity    CPU-vs-GPU training parity (tests/test_gpu_parity)
#                 bench     bench_step --device cuda, every policy, then the
#                           GPT step time per policy (50 steps of each
#                           configs/gpt_shakespeare_*.ini on CUDA)
#                 cnn       bench_cnn --device cuda: the CNN step per policy on
#                           cuDNN against its FP32 convolution/GEMM floor, with
#                           default and deterministic algorithms (in bench.log)
#                 torch     scripts/torch_amp_bench.py with the machine's python3
#                 memcheck  compute-sanitizer on a 5-step run with
#                           AMPTRAIN_CUDA_SYNC=1 (n/a, with the reason, where
#                           the runtime does not support it)
#               and a table. Each part runs under `timeout`, capped so the
#               whole run ends within the budget (default 450 s).
#   --prepare   on a Debian machine of ours: apt-get download the packages of
#               AMP_GPU_DEBS (scripts/gpu_prefix.sh) into DIR and check that
#               their dependencies are complete.
#   --rehearse  here, without a GPU: unpack DIR into a prefix, hide the
#               system's copies of those packages (a private mount
#               namespace), then compile a probe, build amptrain and the gpu
#               tests from the prefix alone, run ctest -L gpu (they skip) and
#               a 3-step CPU run. A missing package fails it, named.
#   --debs DIR       the .deb folder (default .gpu-debs in the repository;
#                    git-ignored; carry it to the GPU machine)
#   --build-dir DIR  build here (default ${TMPDIR:-/tmp}/amptrain-gpu-check,
#                    -rehearse for --rehearse); it is deleted first
#   --build-only     only the prefix and the build (needs no GPU)
# Logs and the table (summary.md) go to $OUT/gpu-check/ when $OUT is set
# (at most 8 files), else to the build folder's gpu-check-logs/.
# Exit status: 0 every part passed or was not applicable, 1 a part failed,
# 2 usage error.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/scripts/gpu_prefix.sh"

MODE=run
DEBS=$ROOT/$AMP_GPU_DEB_DIR_DEFAULT
BUILD=
BUDGET=450
JOBS=$(nproc 2>/dev/null || echo 4)
BUILD_ONLY=0

usage() {
    sed -n '/^# usage:/,/^# Exit status/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --prepare) MODE=prepare; shift ;;
    --rehearse) MODE=rehearse; shift ;;
    --debs) [ $# -ge 2 ] || usage; DEBS=$2; shift 2 ;;
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
case $DEBS in /*) ;; *) DEBS=$PWD/$DEBS ;; esac

if [ "$MODE" = prepare ]; then
    amp_gpu_prepare "$DEBS"
    exit $?
fi

[ -n "$BUILD" ] || BUILD=${TMPDIR:-/tmp}/amptrain-gpu-check$([ "$MODE" = rehearse ] && echo -rehearse)
case $BUILD in / | "$ROOT") echo "gpu-check: refusing to use $BUILD as the build dir" >&2; exit 2 ;; esac

# cmake_build TARGETS...: configure (prefix packages, sm_90, CUDA required)
# and build; no targets means all.
cmake_build() {
    local targets=()
    [ $# -gt 0 ] && targets=(--target "$@")
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DAMP_CUDA=ON -DAMP_TESTS=ON ${PKG_CONFIG:+-DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG"} &&
        cmake --build "$BUILD" -j "$JOBS" "${targets[@]}"
}

# ---------------------------------------------------------------------------
# --rehearse: the device's build from the prefix alone, here.
# ---------------------------------------------------------------------------
if [ "$MODE" = rehearse ]; then
    if [ "${AMP_GPU_IN_NAMESPACE:-0}" != 1 ]; then
        amp_gpu_check_debs "$DEBS" || exit 1
        # A private mount namespace in which the system's copies can be
        # hidden; it ends with the process, nothing leaks outside.
        # AMP_GPU_NO_HIDE=1 skips the hiding (to try the leak checks alone).
        if [ "${AMP_GPU_NO_HIDE:-0}" != 1 ] && [ "$(id -u)" = 0 ] &&
            unshare -m --propagation private true 2>/dev/null; then
            AMP_GPU_IN_NAMESPACE=1 exec unshare -m --propagation private bash "${BASH_SOURCE[0]}" \
                --rehearse --debs "$DEBS" --build-dir "$BUILD" -j "$JOBS"
        fi
        echo "gpu-check: cannot hide the system's packages here (needs root and unshare -m);" \
            "rehearsing with the leak checks alone" >&2
    fi
    rm -rf "$BUILD" && mkdir -p "$BUILD" || exit 1
    LOGS=$BUILD/gpu-check-logs
    mkdir -p "$LOGS" || exit 1
    # step NAME CMD...: runs CMD with output to LOGS/NAME.log; on failure
    # prints the log's end, names the packages behind it, and exits 1.
    step() {
        local name=$1 t0=$SECONDS
        shift
        if ! "$@" >"$LOGS/$name.log" 2>&1; then
            tail -n 25 "$LOGS/$name.log" >&2
            echo "gpu-check --rehearse: $name FAILED (log: $LOGS/$name.log)" >&2
            amp_gpu_explain "$LOGS/$name.log"
            exit 1
        fi
        echo "== $name: ok ($((SECONDS - t0)) s)"
    }
    step prefix amp_gpu_prefix "$DEBS" "$BUILD/prefix"
    sed -n '1p' "$LOGS/prefix.log"
    if [ "${AMP_GPU_IN_NAMESPACE:-0}" = 1 ]; then
        step hide amp_gpu_hide "$BUILD/hidden"
        cat "$LOGS/hide.log"
        # The hiding must work: a hidden header no longer compiles.
        hdr=$(awk -F'\t' '$1 ~ /\.h$/ {print $1; exit}' "$AMP_GPU_HIDDEN_MAP")
        if [ -n "$hdr" ] && echo "#include \"$hdr\"" | ${CC:-cc} -E -x c - >/dev/null 2>&1; then
            echo "gpu-check --rehearse: $hdr still compiles after hiding it" >&2
            exit 1
        fi
    else
        # No namespace: list what would have been hidden, for the leak checks.
        step hide amp_gpu_hide "$BUILD/hidden" --map-only
    fi
    step probe amp_gpu_probe "$BUILD/probe"
    cat "$LOGS/probe.log"
    step build cmake_build amptrain test_gpu_gemm test_gpu_kernels test_gpu_parity \
        test_gpu_transformer test_gpu_gpt_parity \
        test_gpu_cnn test_cnn_reference test_gpu_cnn_parity \
        amp_precision_fp32 amp_precision_fp16 amp_precision_bf16 amp_scaler_none amp_scaler_dynamic \
        amp_scaler_static amp_scaler_hysteresis
    step leaks amp_gpu_leaks "$BUILD/amptrain" "$BUILD"
    # The gpu tests skip here (no GPU); the no-GPU CLI check and the skip
    # messages run against the prefix's libraries.
    step ctest ctest --test-dir "$BUILD" -L gpu --output-on-failure
    grep -E 'tests passed|Skipped' "$LOGS/ctest.log" | sed 's/^/   /'
    step cpu_run "$BUILD/amptrain" train "$ROOT/configs/tiny_fp16_dynamic.ini" --set run.device=cpu \
        --set train.steps=3 --out "$BUILD/cpu-run"
    grep -E 'test_acc' "$LOGS/cpu_run.log" | tail -n 1 | sed 's/^/   /'
    echo "rehearsal passed: amptrain and the gpu tests built and ran from the prefix alone$(
        [ "${AMP_GPU_IN_NAMESPACE:-0}" = 1 ] || echo ' (the system copies were not hidden: leak checks only)')"
    exit 0
fi

# ---------------------------------------------------------------------------
# The GPU machine's run.
# ---------------------------------------------------------------------------
START=$(date +%s)
ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then LOGS=$OUT/gpu-check; else LOGS=$BUILD/gpu-check-logs; fi
rm -rf "$BUILD" && mkdir -p "$BUILD" "$LOGS" || exit 1
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
    SUMMARY+=("$(printf '| %-8s | %-6s | %5s | %s |' "$1" "$2" "$3" "$4")")
    [ "$2" = FAIL ] && FAILED=1
    echo "== $1: $2 ($3 s) $4"
}

# run_part NAME CAP LOGFILE CMD...: runs CMD under timeout, output to the
# terminal and LOGFILE (appended); sets PART_RC (124 = timed out) and PART_S.
run_part() {
    local name=$1 cap=$2 log=$3 limit t0
    shift 3
    limit=$(part_limit "$cap")
    PART_S=0
    if [ "$limit" -lt 10 ]; then
        PART_RC=125
        echo "== $name: no time left in the ${BUDGET} s budget" | tee -a "$log"
        return
    fi
    echo "== $name (limit ${limit} s): $*" | tee -a "$log"
    t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$log"
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
one_line() { tr '\n|' ' /' | sed -E 's/ +/ /g; s/^ //; s/ $//' | cut -c1-300; }
# part_note RC LOG: note_of RC, and on a failure the log's last line.
part_note() {
    local n
    n=$(note_of "$1")
    [ "$1" = 0 ] || [ "$1" = 125 ] || n="$n: $(grep -v '^== ' "$2" | grep -v '^[[:space:]]*$' | tail -n 1 | one_line)"
    echo "$n"
}

# --- the machine ---------------------------------------------------------------
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "uname: $(uname -srm)"
    grep -m1 'model name' /proc/cpuinfo 2>/dev/null
    echo "cores: $(nproc)"
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi -L 2>&1
        nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,temperature.gpu \
            --format=csv 2>&1
    else
        echo "nvidia-smi: not found"
    fi
    command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2
    [ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version | tail -n 2
    cmake --version | head -n 1
    echo "python3: $(command -v python3) $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -n 1)"
    command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>&1
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}"
} >"$LOGS/env.log" 2>&1
cat "$LOGS/env.log"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    record gpu PASS 0 "$(nvidia-smi -L 2>&1 | head -n 1 | one_line)"
else
    # Go on: the build and the tests' skip messages say what CUDA sees.
    if command -v nvidia-smi >/dev/null 2>&1; then
        why=$(nvidia-smi -L 2>&1 | head -n 1 | one_line)
    else
        why="nvidia-smi is not installed"
    fi
    record gpu FAIL 0 "no GPU visible: $why"
fi

# --- prefix + build ----------------------------------------------------------------
if ls "$DEBS"/*.deb >/dev/null 2>&1; then
    t0=$(date +%s)
    # In this shell: its exports are the build's environment.
    if amp_gpu_prefix "$DEBS" "$BUILD/prefix" >>"$LOGS/build.log" 2>&1; then
        head -n 3 "$LOGS/build.log"
        run_part prefix 60 "$LOGS/build.log" bash -c '. "$1/scripts/gpu_prefix.sh" && amp_gpu_probe "$2"' \
            _ "$ROOT" "$BUILD/probe"
        note="$(echo $AMP_GPU_DEBS | wc -w) .deb files from $DEBS"
        [ "$PART_RC" = 0 ] && note="$note; $(grep -m1 '^probe:' "$LOGS/build.log" | one_line)"
        record prefix "$(status_of $PART_RC)" "$(($(date +%s) - t0))" "$note"
    else
        tail -n 5 "$LOGS/build.log"
        record prefix FAIL "$(($(date +%s) - t0))" "$(tail -n 2 "$LOGS/build.log" | one_line)"
    fi
else
    record prefix n/a 0 "no .deb files in $DEBS: using the machine's own packages (--prepare, carry .gpu-debs)"
fi
export -f cmake_build
export ROOT BUILD JOBS
run_part build 240 "$LOGS/build.log" bash -c cmake_build
record build "$(status_of $PART_RC)" "$PART_S" "$(part_note $PART_RC "$LOGS/build.log")"
BUILD_OK=$((PART_RC == 0))

if [ "$BUILD_ONLY" = 1 ]; then
    :
elif [ "$BUILD_OK" = 0 ]; then
    for p in ctest nccl parity bench cnn gpt torch memcheck; do record "$p" FAIL 0 "not run: the build failed"; done
else
    # --- ctest -L gpu ------------------------------------------------------------
    run_part ctest 150 "$LOGS/ctest.log" ctest --test-dir "$BUILD" -L gpu -E '^test_gpu_parity$' \
        --output-on-failure -V
    st=$(status_of $PART_RC)
    note=$(part_note $PART_RC "$LOGS/ctest.log")
    # On a GPU machine only the no-GPU CLI check may skip, and the NCCL test
    # (dist_nccl) when there is one GPU; any other skip fails, and its reason
    # (amp_backend_cuda_unavailable_reason) is shown.
    GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    may_skip=train_cuda_without_gpu
    [ "${GPUS:-0}" -lt 2 ] && may_skip="$may_skip|dist_nccl"
    skipped=$(grep -E '\*\*\*Skipped' "$LOGS/ctest.log" | grep -Ev "$may_skip" |
        sed -E 's/.*Test +#[0-9]+: ([^ ]+).*/\1/' | tr '\n' ' ')
    if [ -n "$skipped" ]; then
        st=FAIL
        why=$(grep -m1 -E 'no CUDA device (is )?visible' "$LOGS/ctest.log" | sed -E 's/.*visible:? //' | one_line)
        note="${note:+$note; }skipped with a GPU present: ${skipped% } (why: $why)"
    fi
    totals=$(grep -E 'tests passed' "$LOGS/ctest.log" | tail -n 1)
    record ctest "$st" "$PART_S" "${note:-$totals}"
    # --- nccl: the 2-process NCCL smoke test (dist_nccl) ran inside ctest -----
    nccl_line=$(grep -E 'Test +#[0-9]+: dist_nccl ' "$LOGS/ctest.log" | tail -n 1)
    if [ "${GPUS:-0}" -lt 2 ]; then
        record nccl n/a 0 "${GPUS:-0} GPU: the 2-process NCCL smoke test (dist_nccl) needs 2 GPUs, one per rank"
    elif [ -z "$nccl_line" ]; then
        record nccl n/a 0 "dist_nccl not built: no MPI in this build (libopenmpi-dev openmpi-bin)"
    elif echo "$nccl_line" | grep -q Passed; then
        record nccl PASS 0 "dist_nccl: 2 ranks on 2 GPUs, NCCL gradients"
    else
        record nccl FAIL 0 "dist_nccl: $(echo "$nccl_line" | sed -E 's/.*dist_nccl *\.*//') (see ctest.log)"
    fi

    # --- CPU vs GPU parity -------------------------------------------------------
    run_part parity 90 "$LOGS/parity.log" env AMPTRAIN_PLUGIN_PATH="$BUILD/plugins" \
        "$BUILD/tests/test_gpu_parity"
    note=$(part_note $PART_RC "$LOGS/parity.log")
    [ "$PART_RC" = 77 ] && note="skipped: $(grep -m1 'skipped' "$LOGS/parity.log" | one_line)"
    record parity "$(status_of $PART_RC)" "$PART_S" "${note:-$(tail -n 1 "$LOGS/parity.log" | one_line)}"

    # --- bench_step --------------------------------------------------------------
    run_part bench 90 "$LOGS/bench.log" env AMPTRAIN_PLUGIN_PATH="$BUILD/plugins" \
        "$BUILD/bench/bench_step" --device cuda --steps 30 --warmup 5 \
        --batch 1024 --features 784 --hidden 4096,4096 --classes 10
    record bench "$(status_of $PART_RC)" "$PART_S" "$(part_note $PART_RC "$LOGS/bench.log")"

    # --- the CNN's step per policy on cuDNN (its tables go to bench.log) ------------
    run_part cnn 60 "$LOGS/bench.log" bash -c \
        '"$1/bench/bench_cnn" --device cuda --steps 20 --warmup 5 --batch 256 &&
         "$1/bench/bench_cnn" --device cuda --steps 20 --warmup 5 --batch 256 --deterministic' \
        cnn "$BUILD"
    record cnn "$(status_of $PART_RC)" "$PART_S" "$(part_note $PART_RC "$LOGS/bench.log")"

    # --- the GPT's step time per policy (its table goes to bench.log) ----------------
    gpt_steps() {
        local p rc=0 sum
        echo "| GPT policy | median step ms (CUDA) | final train loss |"
        echo "|---|---:|---:|"
        for p in fp32 fp16_dynamic bf16; do
            "$BUILD/amptrain" train "$ROOT/configs/gpt_shakespeare_$p.ini" --set run.device=cuda \
                --set train.steps=50 --set train.eval_every=0 --set data.eval_iters=2 \
                --out "$BUILD/gpt-$p" >"$BUILD/gpt-$p.log" 2>&1 || { tail -n 5 "$BUILD/gpt-$p.log"; rc=1; continue; }
            sum=$BUILD/gpt-$p/summary.json
            echo "| $p | $(sed -nE 's/^  "median_step_ms": ([^,]*),$/\1/p' "$sum") |" \
                "$(sed -nE 's/^  "final_train_loss": ([^,]*),$/\1/p' "$sum") |"
        done
        return $rc
    }
    export -f gpt_steps
    export BUILD ROOT
    run_part gpt 60 "$LOGS/bench.log" env AMPTRAIN_PLUGIN_PATH="$BUILD/plugins" bash -c gpt_steps
    record gpt "$(status_of $PART_RC)" "$PART_S" "$(part_note $PART_RC "$LOGS/bench.log")"

    # --- PyTorch AMP reference, with the machine's own libraries ------------------
    if ! env LD_LIBRARY_PATH="$ORIG_LD_LIBRARY_PATH" python3 -c 'import torch' >/dev/null 2>&1; then
        record torch n/a 0 "python3 has no torch"
    else
        run_part torch 90 "$LOGS/torch.log" env LD_LIBRARY_PATH="$ORIG_LD_LIBRARY_PATH" \
            PYTHONUNBUFFERED=1 python3 "$ROOT/scripts/torch_amp_bench.py" \
            --batch 1024 --features 784 --hidden 4096,4096 --classes 10 --steps 50 --warmup 10
        if [ "$PART_RC" = 3 ]; then
            record torch n/a "$PART_S" "torch sees no CUDA device"
        else
            record torch "$(status_of $PART_RC)" "$PART_S" "$(part_note $PART_RC "$LOGS/torch.log")"
        fi
    fi

    # --- compute-sanitizer memcheck (last: the slowest, and unsupported on
    # some runtimes) --------------------------------------------------------------
    SAN=$(command -v compute-sanitizer || true)
    for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
        [ -z "$SAN" ] && [ -x "$c" ] && SAN=$c
    done
    if [ -z "$SAN" ]; then
        record memcheck n/a 0 "compute-sanitizer not found"
    else
        run_part memcheck 120 "$LOGS/memcheck.log" env AMPTRAIN_CUDA_SYNC=1 "$SAN" --tool memcheck \
            --error-exitcode 9 --leak-check full "$BUILD/amptrain" train \
            "$ROOT/configs/tiny_fp16_dynamic.ini" --set run.device=cuda --set train.steps=5 \
            --out "$BUILD/memcheck-run"
        st=$(status_of $PART_RC)
        note=$(part_note $PART_RC "$LOGS/memcheck.log")
        unsupported=$(grep -m1 -iE 'device not supported|not supported on this (platform|device)|unsupported (device|platform)' \
            "$LOGS/memcheck.log" | one_line)
        if [ "$PART_RC" != 0 ] && [ -n "$unsupported" ]; then
            st=n/a
            note="the sanitizer does not support this runtime: $unsupported"
        elif [ "$PART_RC" = 9 ]; then
            note="memcheck reported errors (see memcheck.log)"
        elif [ "$PART_RC" = 0 ]; then
            note=$(grep -E 'ERROR SUMMARY' "$LOGS/memcheck.log" | tail -n 1 | sed 's/^=* *//')
        fi
        record memcheck "$st" "$PART_S" "$note"
    fi
fi

# --- summary -------------------------------------------------------------------
{
    echo "# gpu-check $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "$(grep -m1 -E '^GPU 0' "$LOGS/env.log" || echo 'no GPU listed'); $(($(date +%s) - START)) s of a ${BUDGET} s budget"
    echo
    printf '| %-8s | %-6s | %5s | %s |\n' part status s note
    echo "|----------|--------|------:|------|"
    for line in "${SUMMARY[@]}"; do echo "$line"; done
    for f in parity bench torch; do
        [ -s "$LOGS/$f.log" ] || continue
        if [ "$f" = parity ]; then
            lines=$(grep -E '^(policy|fp32|fp16|bf16)' "$LOGS/parity.log")
        else
            lines=$(grep '^|' "$LOGS/$f.log")
        fi
        [ -n "$lines" ] || continue
        echo
        echo "$f:"
        echo
        [ "$f" = parity ] && echo '```'
        echo "$lines"
        [ "$f" = parity ] && echo '```'
    done
} >"$LOGS/summary.md"
echo
cat "$LOGS/summary.md"
echo
echo "logs: $LOGS"
exit "$FAILED"
