#!/usr/bin/env bash
# gpu-check.sh: every GPU check in one short run on a bare, offline CUDA
# host (the vendor's CUDA image: nvcc, CMake, Python; none of our Debian
# packages; written for an H200, sm_90), and the steps that make that run
# count on its first try, done beforehand on a machine of ours.
#
# usage: scripts/gpu-check.sh [--debs DIR] [--build-dir DIR] [--budget SECONDS] [-j N] [--build-only]
#        scripts/gpu-check.sh --dry-run [--build-dir DIR] [--budget SECONDS]
#        scripts/gpu-check.sh --prepare [--debs DIR]
#        scripts/gpu-check.sh --rehearse [--debs DIR] [--build-dir DIR] [-j N]
#   --clean     with a run: delete --build-dir first (a rerun otherwise
#               reuses its build, incrementally)
#   (no mode)   on the GPU host: unpack DIR's .deb files into a prefix under
#               /tmp, then the parts, most valuable first, each under
#               `timeout` and capped (the caps below sum to the budget, so
#               the whole run, build included, ends within it; default 480 s)
#                 gpu       nvidia-smi -L (the run goes on without a GPU)
#                 prefix    the unpacked packages and a probe program (30 s)
#                 build     the host's build: Ninja when present, sm_90,
#                           AMP_WERROR=OFF (warnings logged and counted),
#                           only the targets below, keep-going; a rerun on
#                           the same --build-dir is incremental (120 s)
#                 gemm      ctest test_gpu_gemm (cuBLAS against FP64) (15 s)
#                 kernels   ctest test_gpu_kernels (every kernel vs the CPU) (20 s)
#                 fp8       ctest test_gpu_fp8 (the scaled family vs the CPU,
#                           bit for bit; fp8_gemm on cuBLASLt FP8, required
#                           on sm_89+ where the shape fits) and
#                           test_gpu_mx_gemm (cuBLASLt's block-scaled MXFP8
#                           GEMM; skips, not a failure, below sm_100: H100
#                           and H200 run MXFP8 and NVFP4 GEMMs emulated) (20 s)
#                 nvfp4     ctest test_gpu_nvfp4 and test_gpu_nvfp4_gemm (the
#                           same for NVFP4) (20 s)
#                 ctest     the other `gpu` tests (gpu_host_round_trips among
#                           them: no host round trip inside forward/backward
#                           under fp8 delayed; a gpu test that skips on a
#                           GPU host fails, except the 2-GPU NCCL tests
#                           with one GPU) (45 s)
#                 nccl      dist_nccl's result (2 ranks, 2 GPUs, MPI build)
#                 parity    CPU-vs-GPU training parity, the MLP rows (20 s)
#                 bench     bench_step --device cuda, every policy (20 s)
#                 cnn       bench_cnn --device cuda, default then
#                           deterministic algorithms (15 s)
#                 gpt       the GPT step time per policy (20 steps each; the
#                           fp8, mxfp8 and nvfp4 rows say which GEMM path
#                           ran: emulated below sm_100 for mxfp8 and nvfp4) (25 s)
#                 torch     scripts/torch_amp_bench.py (PyTorch's AMP) (20 s)
#                 memcheck_formats  compute-sanitizer memcheck on the FP8, MX
#                           and NVFP4 rows (their kernels, cuBLASLt calls) (20 s)
#                 memcheck_gpt memcheck_cnn  memcheck on a 2-layer FP8 GPT's
#                           two steps and the CNN reference (15 s each)
#                 racecheck_kernels  racecheck on the kernel and transformer
#                           rows: every kernel that uses shared memory (15 s)
#                 racecheck_gpt initcheck_gpt synccheck_gpt  on the GPT (15 s each)
#               Every gpu test that passes must have compared values (its
#               "ok ... n=N" lines): one that compared none fails its part.
#               summary.md lists every part with its status or the reason it
#               did not run; it is rewritten after each part and on a stop
#               (TERM, INT, HUP), so a stopped run still leaves it.
#   --dry-run   here, without a GPU: the environment part for real, every
#               other part listed with what it would run and its cap, in
#               the run's order, in summary.md; builds nothing.
#   --prepare   on a Debian machine of ours: apt-get download the packages of
#               AMP_GPU_DEBS (scripts/gpu_prefix.sh) into DIR and check that
#               their dependencies are complete.
#   --rehearse  here, without a GPU: the host's build exactly: unpack DIR
#               into a prefix; in a private mount namespace hide the
#               system's copies of those packages and make absent what the
#               CUDA image lacks (oneDNN, OpenMPI, NCCL, cuDNN: the CMake
#               summary lines in build.log show it); cuDNN as a pip wheel's
#               nvidia/cudnn (libcudnn.so.9, no libcudnn.so) faked from the
#               system's copy and found through Python's nvidia.cudnn; then
#               the probe, the host's build (same options and targets), the
#               leak checks, ctest -L gpu (they skip), a 3-step CPU run and a
#               --dry-run. A missing package fails it, named.
#   --debs DIR       the .deb folder (default .gpu-debs in the repository;
#                    git-ignored; carry it to the GPU host)
#   --build-dir DIR  build here (default ${TMPDIR:-/tmp}/amptrain-gpu-check,
#                    -rehearse for --rehearse); it is deleted first
#   --build-only     only the prefix and the build (needs no GPU)
# Logs and summary.md go to $OUT/gpu-check/ when $OUT is set, else to the
# build folder's gpu-check-logs/.
# Exit status: 0 every part passed or was not applicable, 1 a part failed,
# 2 usage error.
set -u
umask 022

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/scripts/gpu_prefix.sh"

MODE=run
DEBS=$ROOT/$AMP_GPU_DEB_DIR_DEFAULT
BUILD=
BUDGET=480
JOBS=$(nproc 2>/dev/null || echo 4)
BUILD_ONLY=0
CLEAN=0

usage() {
    sed -n '/^# usage:/,/^# Exit status/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --prepare) MODE=prepare; shift ;;
    --rehearse) MODE=rehearse; shift ;;
    --dry-run) MODE=dry; shift ;;
    --debs) [ $# -ge 2 ] || usage; DEBS=$2; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || usage; BUILD=$2; shift 2 ;;
    --budget) [ $# -ge 2 ] || usage; BUDGET=$2; shift 2 ;;
    -j) [ $# -ge 2 ] || usage; JOBS=$2; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    --clean) CLEAN=1; shift ;;
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

# What the check needs built, and nothing else: amptrain and its plugins,
# the `gpu` tests' programs, the benchmarks.
AMP_GPU_TARGETS="amptrain amp_precision_fp32 amp_precision_fp16 amp_precision_bf16
  amp_precision_fp8 amp_precision_mxfp8 amp_precision_nvfp4 amp_scaler_none
  amp_scaler_dynamic amp_scaler_static amp_scaler_hysteresis
  test_gpu_gemm test_gpu_kernels test_gpu_parity test_gpu_transformer test_gpu_fp8 test_gpu_nvfp4
  test_gpu_mx_gemm test_gpu_nvfp4_gemm test_gpu_cnn test_cnn_reference test_gpu_cnn_parity
  bench_step bench_cnn"

# cmake_build: the GPU host's configure and build, the same here in the
# rehearsal: Ninja when present, sm_90, CUDA required, AMP_WERROR=OFF (a
# compiler the code was never built with must not end the run on a
# warning; CI keeps -Werror), the prefix's pkg-config, AMP_CUDNN_ROOT when
# set, only AMP_GPU_TARGETS, keep-going (a target that fails leaves the
# others built, and the parts that need only those still run).
cmake_build() {
    local gen=() keep=(-- -k)
    if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); keep=(-- -k 0); fi
    # shellcheck disable=SC2086 # a list of target names
    cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DAMP_CUDA=ON -DAMP_TESTS=ON -DAMP_WERROR=OFF ${PKG_CONFIG:+-DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG"} \
        ${AMP_CUDNN_ROOT:+-DAMP_CUDNN_ROOT="$AMP_CUDNN_ROOT"} &&
        cmake --build "$BUILD" -j "$JOBS" --target $AMP_GPU_TARGETS "${keep[@]}"
}

# The row tests (tests/gpu_rows.h) print "ok WHAT n=N ..." for each
# comparison. rows_unproved LOG: from a ctest -V log, the passed tests that
# are row tests (their "... against the CPU" header) yet compared no value.
rows_unproved() {
    awk '/^[0-9]+: .* against the CPU/ { split($1, a, ":"); rows[a[1]] = 1 }
         /^[0-9]+: ok / && !/ n=0 / { split($1, a, ":"); n[a[1]]++ }
         /Test +#[0-9]+: .* Passed/ {
             match($0, /#[0-9]+/); t = substr($0, RSTART + 1, RLENGTH - 1)
             nm = $0; sub(/.*#[0-9]+: /, "", nm); sub(/ .*/, "", nm)
             if (rows[t] && !n[t]) printf "%s ", nm }' "$1"
}
# rows_compared LOG: the number of comparisons with values in one row
# test's output ("ok" lines but those of zero values).
rows_compared() { grep '^ok ' "$1" | grep -vc ' n=0 '; }

# The CMake summary lines that say what the build found (oneDNN, cuDNN,
# CUDA, MPI, NCCL).
build_found() { grep -E -- '-- amptrain: (oneDNN|cuDNN|no cuDNN|CUDA backend|MPI)' "$1"; }

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
        # What the image lacks is absent, as there.
        step absent amp_gpu_make_absent "$BUILD/absent"
        cat "$LOGS/absent.log"
        step cudnn_wheel amp_gpu_fake_cudnn_wheel "$BUILD/site" "$BUILD/absent/absent.tsv"
    else
        # No namespace: list what would have been hidden, for the leak checks.
        step hide amp_gpu_hide "$BUILD/hidden" --map-only
        step cudnn_wheel amp_gpu_fake_cudnn_wheel "$BUILD/site"
    fi
    # The image's cuDNN wheel is found through Python, as there.
    export PYTHONPATH=$BUILD/site${PYTHONPATH:+:$PYTHONPATH}
    wheel=$(tail -n 1 "$LOGS/cudnn_wheel.log")
    echo "   cuDNN as a pip wheel: $wheel ($(ls "$wheel/lib" | tr '\n' ' '))"
    step probe amp_gpu_probe "$BUILD/probe"
    cat "$LOGS/probe.log"
    step build cmake_build
    # The proof: what CMake found.
    build_found "$LOGS/build.log" | sed 's/^/   /'
    warnings=$(grep -c 'warning:' "$LOGS/build.log")
    echo "   $warnings compiler warning(s) (AMP_WERROR=OFF: logged in build.log, not fatal)"
    build_found "$LOGS/build.log" | grep -qF "cuDNN 9" && build_found "$LOGS/build.log" | grep -qF "($wheel/lib/libcudnn.so.9)" || {
        echo "gpu-check --rehearse: the build did not take cuDNN from the wheel $wheel (see build.log)" >&2
        exit 1
    }
    if [ "${AMP_GPU_IN_NAMESPACE:-0}" = 1 ]; then
        build_found "$LOGS/build.log" | grep -qE -- '-- amptrain: oneDNN *$' &&
            build_found "$LOGS/build.log" | grep -qF -- '-- amptrain: MPI OFF, NCCL OFF' || {
            echo "gpu-check --rehearse: the build found oneDNN or MPI, which the CUDA image lacks (see build.log)" >&2
            exit 1
        }
    fi
    step leaks amp_gpu_leaks "$BUILD/amptrain" "$BUILD"
    # The gpu tests skip here (no GPU); the no-GPU CLI check and the skip
    # messages run against the prefix's libraries.
    step ctest timeout 600 ctest --test-dir "$BUILD" -L gpu --output-on-failure
    grep -E 'tests passed|Skipped' "$LOGS/ctest.log" | sed 's/^/   /'
    # Every row test compares values: run each with the CPU as its device
    # (--self-check) and count them; a test that compares none fails here.
    rows_self_checks() {
        local t n bad=0
        for t in "$BUILD"/tests/test_gpu_*; do
            [ -x "$t" ] || continue
            timeout 300 "$t" --self-check >"$LOGS/self-check.$(basename "$t").log" 2>&1
            case $? in
            0) ;;
            2) echo "$(basename "$t"): takes no --self-check (its rows need the GPU itself)"; continue ;;
            *) echo "$(basename "$t"): self-check FAILED"; bad=1; continue ;;
            esac
            if ! grep -q -- '(--self-check) against the CPU' "$LOGS/self-check.$(basename "$t").log"; then
                echo "$(basename "$t"): no self-check (it needs the GPU itself)"; continue
            fi
            n=$(rows_compared "$LOGS/self-check.$(basename "$t").log")
            echo "$(basename "$t"): $n comparisons with values"
            [ "$n" -gt 0 ] || { echo "$(basename "$t"): passes with no compared values"; bad=1; }
        done
        return $bad
    }
    step compared rows_self_checks
    sed 's/^/   /' "$LOGS/compared.log"
    step cpu_run timeout 120 "$BUILD/amptrain" train "$ROOT/configs/tiny_fp16_dynamic.ini" --set run.device=cpu \
        --set train.steps=3 --out "$BUILD/cpu-run"
    grep -E 'test_acc' "$LOGS/cpu_run.log" | tail -n 1 | sed 's/^/   /'
    # The device run's plan, dry: every part in order with its reason.
    step dry_run env -u OUT bash "${BASH_SOURCE[0]}" --dry-run --build-dir "$BUILD/dry-run"
    sed -n '/^| part/,$p' "$BUILD/dry-run/gpu-check-logs/summary.md" | sed 's/^/   /'
    # The plan fits the window: the parts' caps sum to at most the budget.
    plan=$(grep -oE 'for up to [0-9]+ s' "$BUILD/dry-run/gpu-check-logs/summary.md" | awk '{s += $4} END {print s + 30}')
    echo "   the plan's caps: $plan s of the ${BUDGET} s budget (build included)"
    [ "$plan" -le "$BUDGET" ] || { echo "gpu-check --rehearse: the plan's caps ($plan s) exceed the budget ($BUDGET s)" >&2; exit 1; }
    echo "rehearsal passed: the host's build (no oneDNN, MPI, NCCL; cuDNN from a wheel) built and ran from the prefix$(
        [ "${AMP_GPU_IN_NAMESPACE:-0}" = 1 ] || echo ' (the system copies were not hidden: leak checks only)')"
    exit 0
fi

# ---------------------------------------------------------------------------
# The GPU host's run (and --dry-run, its plan without running it).
# ---------------------------------------------------------------------------
START=$(date +%s)
ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}
DRY=$([ "$MODE" = dry ] && echo 1 || echo 0)
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then LOGS=$OUT/gpu-check; else LOGS=$BUILD/gpu-check-logs; fi
# A rerun reuses the build (incremental); a dry run and --clean start fresh.
if [ "$DRY" = 1 ] || [ "$CLEAN" = 1 ] || [ ! -f "$BUILD/CMakeCache.txt" ]; then
    rm -rf "$BUILD"
else
    echo "gpu-check: reusing the build in $BUILD (--clean starts afresh)"
fi
rm -rf "$LOGS.old" && { [ ! -d "$LOGS" ] || mv "$LOGS" "$LOGS.old"; }
mkdir -p "$BUILD" "$LOGS" || exit 1
# The parts, most valuable first: the order they run and are listed in.
PARTS="gpu prefix build gemm kernels fp8 nvfp4 ctest nccl parity bench cnn gpt torch memcheck_formats
  memcheck_gpt memcheck_cnn racecheck_kernels racecheck_gpt initcheck_gpt synccheck_gpt"
declare -A ST=() SEC=() NOTE=()
FAILED=0
CURRENT=
PART_PID=
DRY_T=0

# Seconds a part may take: its cap, or what is left of the budget (minus a
# few seconds for the summary) when that is less. 0 when nothing is left.
part_limit() {
    local cap=$1 left
    left=$((BUDGET - ($(date +%s) - START) - 5))
    [ "$left" -lt 0 ] && left=0
    [ "$cap" -lt "$left" ] && echo "$cap" || echo "$left"
}

# write_summary [WHY]: summary.md with every part of PARTS: its status, or
# "not run" and WHY (default: not reached yet).
write_summary() {
    local why=${1:-not reached (the run is still going, or was killed)} p
    {
        echo "# gpu-check $(date -u '+%Y-%m-%d %H:%M UTC')$([ "$DRY" = 1 ] && echo ' (dry run: no GPU used)')"
        echo
        echo "$(grep -m1 -E '^GPU 0' "$LOGS/env.log" 2>/dev/null || echo 'no GPU listed'); $(($(date +%s) - START)) s of a ${BUDGET} s budget"
        echo
        printf '| %-17s | %-6s | %5s | %s |\n' part status s note
        echo "|-------------------|--------|------:|------|"
        for p in $PARTS; do
            if [ -n "${ST[$p]:-}" ]; then
                printf '| %-17s | %-6s | %5s | %s |\n' "$p" "${ST[$p]}" "${SEC[$p]}" "${NOTE[$p]}"
            else
                printf '| %-17s | %-6s | %5s | %s |\n' "$p" "-" 0 "not run: $why"
            fi
        done
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
    } >"$LOGS/summary.md.tmp" && mv "$LOGS/summary.md.tmp" "$LOGS/summary.md"
}

# A stop (the caller's time limit) still leaves the table: the part that
# was running is marked so, the rest say they were not reached.
on_stop() {
    # ignored from here on: a second signal (timeout(1) signals its whole
    # process group too) must not cut the table short
    trap '' TERM INT HUP
    [ -n "${PART_PID:-}" ] && kill -TERM "$PART_PID" 2>/dev/null
    [ -n "$CURRENT" ] && [ -z "${ST[$CURRENT]:-}" ] &&
        ST[$CURRENT]=FAIL SEC[$CURRENT]=0 NOTE[$CURRENT]="stopped while running (signal)"
    write_summary "the run was stopped (signal) before this part"
    echo "gpu-check: stopped; the table so far is in $LOGS/summary.md" >&2
    exit 1
}
trap on_stop TERM INT HUP

# record NAME STATUS SECONDS NOTE, and the table rewritten.
record() {
    ST[$1]=$2 SEC[$1]=$3 NOTE[$1]=$4
    [ "$2" = FAIL ] && FAILED=1
    echo "== $1: $2 ($3 s) $4"
    write_summary
}

# run_part NAME CAP LOGFILE CMD...: runs CMD under timeout, output to the
# terminal and LOGFILE (appended); sets PART_RC (124 = timed out, 125 = no
# budget left, 126 = dry run) and PART_S. A dry run records what would run.
run_part() {
    local name=$1 cap=$2 log=$3 limit t0
    shift 3
    CURRENT=$name
    PART_S=0
    if [ "$DRY" = 1 ]; then
        # what it would run, and when it would start if every part before it
        # took its whole cap
        PART_RC=126
        record "$name" dry 0 "would run at worst from ${DRY_T} s$([ "$DRY_T" -ge "$BUDGET" ] && echo ' (past the budget if every part before it ran to its cap)') for up to ${cap} s: ${DRY_WHAT:-$(echo "$*" | sed "s#$BUILD#\$BUILD#g; s#$ROOT/##g" | one_line)}"
        DRY_T=$((DRY_T + cap))
        DRY_WHAT=
        return
    fi
    limit=$(part_limit "$cap")
    if [ "$limit" -lt 10 ]; then
        PART_RC=125
        echo "== $name: no time left in the ${BUDGET} s budget" | tee -a "$log"
        return
    fi
    echo "== $name (limit ${limit} s): $*" | tee -a "$log"
    t0=$(date +%s)
    # In the background and waited for: a stop signal runs on_stop at once
    # (bash defers traps until a foreground command ends).
    timeout --kill-after=10 "$limit" "$@" > >(tee -a "$log") 2>&1 &
    PART_PID=$!
    wait "$PART_PID"
    PART_RC=$?
    PART_PID=
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
# finish_part NAME LOG [NOTE]: records the part that run_part ran (a dry
# run recorded itself).
finish_part() {
    [ "$PART_RC" = 126 ] && return
    record "$1" "$(status_of "$PART_RC")" "$PART_S" "${3:-$(part_note "$PART_RC" "$2")}"
}
# needs NAME FILE...: records NAME as failed, not run, when a file it runs
# was not built (the build keeps going past a failed target); 1 then.
needs() {
    local name=$1 f
    shift
    [ "$DRY" = 1 ] && return 0
    for f in "$@"; do
        [ -x "$f" ] && continue
        record "$name" FAIL 0 "not run: ${f#"$BUILD"/} was not built (see build.log)"
        return 1
    done
}

# --- the machine (every external call under timeout) -----------------------------
CURRENT=gpu
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "uname: $(uname -srm)"
    grep -m1 'model name' /proc/cpuinfo 2>/dev/null
    echo "cores: $(nproc)"
    if command -v nvidia-smi >/dev/null 2>&1; then
        timeout 20 nvidia-smi -L 2>&1
        timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,temperature.gpu \
            --format=csv 2>&1
    else
        echo "nvidia-smi: not found"
    fi
    command -v nvcc >/dev/null 2>&1 && timeout 20 nvcc --version | tail -n 2
    [ -x /usr/local/cuda/bin/nvcc ] && timeout 20 /usr/local/cuda/bin/nvcc --version | tail -n 2
    timeout 20 cmake --version | head -n 1
    command -v ninja >/dev/null 2>&1 && echo "ninja: $(timeout 20 ninja --version)"
    echo "python3: $(command -v python3) $(timeout 60 python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -n 1)"
    echo "cuDNN wheel: $(timeout 30 python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>&1 | tail -n 1)"
    command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>&1
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}"
} >"$LOGS/env.log" 2>&1
cat "$LOGS/env.log"
GPUS=0
if command -v nvidia-smi >/dev/null 2>&1 && timeout 20 nvidia-smi -L >/dev/null 2>&1; then
    GPUS=$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    record gpu PASS 0 "$(timeout 20 nvidia-smi -L 2>&1 | head -n 1 | one_line)"
else
    # Go on: the build and the tests' skip messages say what CUDA sees.
    if command -v nvidia-smi >/dev/null 2>&1; then
        why=$(timeout 20 nvidia-smi -L 2>&1 | head -n 1 | one_line)
    else
        why="nvidia-smi is not installed"
    fi
    record gpu "$([ "$DRY" = 1 ] && echo n/a || echo FAIL)" 0 "no GPU visible: ${why:-nvidia-smi timed out}"
fi

# --- prefix + build ----------------------------------------------------------------
CURRENT=prefix
if [ "$DRY" = 1 ]; then
    record prefix dry 0 "would unpack the $(echo $AMP_GPU_DEBS | wc -w) .deb files of .gpu-debs into \$BUILD/prefix and run the probe (up to 30 s)"
    DRY_T=30
elif ls "$DEBS"/*.deb >/dev/null 2>&1; then
    t0=$(date +%s)
    # In this shell: its exports are the build's environment.
    if amp_gpu_prefix "$DEBS" "$BUILD/prefix" >>"$LOGS/build.log" 2>&1; then
        head -n 3 "$LOGS/build.log"
        run_part prefix 30 "$LOGS/build.log" bash -c '. "$1/scripts/gpu_prefix.sh" && amp_gpu_probe "$2"' \
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
export ROOT BUILD JOBS AMP_GPU_TARGETS
DRY_WHAT="cmake $(command -v ninja >/dev/null 2>&1 && echo '-G Ninja ')-DCMAKE_CUDA_ARCHITECTURES=90 -DAMP_CUDA=ON -DAMP_WERROR=OFF, then cmake --build --target (the $(echo $AMP_GPU_TARGETS | wc -w) targets the check runs) $(command -v ninja >/dev/null 2>&1 && echo '-- -k 0' || echo '-- -k')"
run_part build 120 "$LOGS/build.log" bash -c cmake_build
if [ "$PART_RC" != 126 ]; then
    note=$(part_note $PART_RC "$LOGS/build.log")
    found=$(build_found "$LOGS/build.log" | sed 's/^-- amptrain: //' | tr '\n' ';' | one_line)
    record build "$(status_of $PART_RC)" "$PART_S" "${note:+$note; }${found}; $(grep -c 'warning:' "$LOGS/build.log") warning(s) in build.log"
fi
[ "$BUILD_ONLY" = 1 ] && { write_summary "--build-only"; exit "$FAILED"; }

# --- the basic tests first, then the other gpu tests --------------------------------
# ctest_part NAME CAP CTEST-ARGS...: on a GPU host only the no-GPU CLI check
# may skip, and the 2-GPU NCCL tests with one GPU; any other skip fails, with
# its reason.
ctest_part() {
    local name=$1 cap=$2 st note skipped why unproved may_skip=train_cuda_without_gpu
    shift 2
    run_part "$name" "$cap" "$LOGS/ctest.log" ctest --test-dir "$BUILD" --output-on-failure -V "$@"
    [ "$PART_RC" = 126 ] && return
    st=$(status_of $PART_RC)
    note=$(part_note $PART_RC "$LOGS/ctest.log")
    [ "${GPUS:-0}" -lt 2 ] && may_skip="$may_skip|dist_nccl|dist_syncbn_nccl|dist_shard_nccl"
    # the block-scaled GEMMs need sm_100: their tests skip on an older GPU, saying so
    for t in test_gpu_mx_gemm test_gpu_nvfp4_gemm; do
        grep -q "$t: skipped: the GPU is sm_" "$LOGS/ctest.log" 2>/dev/null &&
            may_skip="$may_skip|$t"
    done
    skipped=$(sed -n "/^== $name /,\$p" "$LOGS/ctest.log" | grep -E '\*\*\*Skipped' | grep -Ev "$may_skip" |
        sed -E 's/.*Test +#[0-9]+: ([^ ]+).*/\1/' | tr '\n' ' ')
    unproved=$(sed -n "/^== $name /,\$p" "$LOGS/ctest.log" >"$LOGS/ctest.part.log"; rows_unproved "$LOGS/ctest.part.log")
    if [ -n "$unproved" ]; then
        st=FAIL
        note="${note:+$note; }passed with no compared values: ${unproved% }"
    fi
    if [ -n "$skipped" ]; then
        st=FAIL
        why=$(grep -m1 -E 'no CUDA device (is )?visible' "$LOGS/ctest.log" | sed -E 's/.*visible:? //' | one_line)
        note="${note:+$note; }skipped with a GPU present: ${skipped% } (why: $why)"
    fi
    record "$name" "$st" "$PART_S" "${note:-$(sed -n "/^== $name /,\$p" "$LOGS/ctest.log" | grep -E 'tests passed' | tail -n 1)}"
}
ctest_part gemm 15 -R '^test_gpu_gemm$'
ctest_part kernels 20 -R '^test_gpu_kernels$'
ctest_part fp8 20 -R '^(test_gpu_fp8|test_gpu_mx_gemm)$'
ctest_part nvfp4 20 -R '^(test_gpu_nvfp4|test_gpu_nvfp4_gemm)$'
ctest_part ctest 45 -L gpu -E '^(test_gpu_gemm|test_gpu_kernels|test_gpu_fp8|test_gpu_mx_gemm|test_gpu_nvfp4|test_gpu_nvfp4_gemm|test_gpu_parity)$'
# --- nccl: the 2-process NCCL smoke test (dist_nccl) ran inside ctest -----
nccl_line=$(grep -E 'Test +#[0-9]+: dist_nccl ' "$LOGS/ctest.log" 2>/dev/null | tail -n 1)
if [ "$DRY" = 1 ]; then
    record nccl dry 0 "dist_nccl's line of the ctest part (needs 2 GPUs and MPI in the build)"
elif [ "${GPUS:-0}" -lt 2 ]; then
    record nccl n/a 0 "${GPUS:-0} GPU: the 2-process NCCL smoke test (dist_nccl) needs 2 GPUs, one per rank"
elif [ -z "$nccl_line" ]; then
    record nccl n/a 0 "dist_nccl not built: no MPI in this build (libopenmpi-dev openmpi-bin)"
elif echo "$nccl_line" | grep -q Passed; then
    record nccl PASS 0 "dist_nccl: 2 ranks on 2 GPUs, NCCL gradients"
else
    record nccl FAIL 0 "dist_nccl: $(echo "$nccl_line" | sed -E 's/.*dist_nccl *\.*//') (see ctest.log)"
fi

# --- CPU vs GPU parity -------------------------------------------------------
if needs parity "$BUILD/tests/test_gpu_parity"; then
    run_part parity 20 "$LOGS/parity.log" env AMPTRAIN_PLUGIN_PATH="$BUILD/plugins" \
        "$BUILD/tests/test_gpu_parity" --only mlp
    [ "$PART_RC" = 77 ] && note="skipped: $(grep -m1 'skipped' "$LOGS/parity.log" | one_line)" || note=
    finish_part parity "$LOGS/parity.log" "$note"
fi

# --- benchmarks ----------------------------------------------------------------
if needs bench "$BUILD/bench/bench_step"; then
    run_part bench 20 "$LOGS/bench.log" env AMPTRAIN_PLUGIN_PATH="$BUILD/plugins" \
        "$BUILD/bench/bench_step" --device cuda --steps 30 --warmup 5 \
        --batch 1024 --features 784 --hidden 4096,4096 --classes 10
    finish_part bench "$LOGS/bench.log"
fi
# The CNN's step per policy on cuDNN: default, then deterministic algorithms;
# each runs whatever the other did.
cnn_both() {
    local rc=0
    "$1/bench/bench_cnn" --device cuda --steps 20 --warmup 5 --batch 256 || rc=1
    "$1/bench/bench_cnn" --device cuda --steps 20 --warmup 5 --batch 256 --deterministic || rc=1
    return $rc
}
export -f cnn_both
if needs cnn "$BUILD/bench/bench_cnn"; then
    run_part cnn 15 "$LOGS/bench.log" bash -c 'cnn_both "$1"' cnn "$BUILD"
    finish_part cnn "$LOGS/bench.log"
fi
# The GPT's step time per policy (its table goes to bench.log), and for the
# scaled policies the forward GEMM's path the log names (cuBLASLt FP8, MXFP8 or
# FP4, or emulated and why). nvfp4 runs last: the newest kernels, and if it overruns
# the part's cap every other row is already in the table.
gpt_steps() {
    local p rc=0 sum path
    echo "| GPT policy | median step ms (CUDA) | final train loss | scaled GEMM path |"
    echo "|---|---:|---:|---|"
    for p in fp32 fp16_dynamic bf16 fp8 fp8_current mxfp8 nvfp4; do
        "$BUILD/amptrain" train "$ROOT/configs/gpt_shakespeare_$p.ini" --set run.device=cuda \
            --set train.steps=20 --set train.eval_every=0 --set data.eval_iters=2 \
            --out "$BUILD/gpt-$p" >"$BUILD/gpt-$p.log" 2>&1 || { tail -n 5 "$BUILD/gpt-$p.log"; rc=1; continue; }
        sum=$BUILD/gpt-$p/summary.json
        path=$(grep -E '(fp8_gemm (MX32 )?|nvfp4_gemm )(runs on|emulated)' "$BUILD/gpt-$p.log" | sed -E 's/.*cuda: //' | tr '\n|' '; ')
        echo "| $p | $(sed -nE 's/^  "median_step_ms": ([^,]*),$/\1/p' "$sum") |" \
            "$(sed -nE 's/^  "final_train_loss": ([^,]*),$/\1/p' "$sum") | ${path:--} |"
    done
    return $rc
}
export -f gpt_steps
if needs gpt "$BUILD/amptrain"; then
    run_part gpt 25 "$LOGS/bench.log" env AMPTRAIN_PLUGIN_PATH="$BUILD/plugins" bash -c gpt_steps
    finish_part gpt "$LOGS/bench.log"
fi

# --- PyTorch AMP reference, with the machine's own libraries ------------------------
CURRENT=torch
if [ "$DRY" = 0 ] && ! env LD_LIBRARY_PATH="$ORIG_LD_LIBRARY_PATH" timeout 60 python3 -c 'import torch' >/dev/null 2>&1; then
    record torch n/a 0 "python3 has no torch (or its import took over 60 s)"
else
    run_part torch 20 "$LOGS/torch.log" env LD_LIBRARY_PATH="$ORIG_LD_LIBRARY_PATH" \
        PYTHONUNBUFFERED=1 python3 "$ROOT/scripts/torch_amp_bench.py" \
        --batch 1024 --features 784 --hidden 4096,4096 --classes 10 --steps 50 --warmup 10
    if [ "$PART_RC" = 3 ]; then
        record torch n/a "$PART_S" "torch sees no CUDA device"
    else
        finish_part torch "$LOGS/torch.log"
    fi
fi

# --- compute-sanitizer: memcheck and racecheck on each model's short run ------------
SAN=$(command -v compute-sanitizer || true)
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    [ -z "$SAN" ] && [ -x "$c" ] && SAN=$c
done
[ -z "$SAN" ] && [ "$DRY" = 1 ] && SAN=compute-sanitizer
SAN_UNSUPPORTED=
# sanitize TOOL WHAT CAP BINARY ARGS...
sanitize() {
    local tool=$1 name=${1}_$2 cap=$3 st note extra=()
    shift 3
    if [ -z "$SAN" ]; then
        record "$name" n/a 0 "compute-sanitizer not found"
        return
    fi
    if [ -n "$SAN_UNSUPPORTED" ]; then
        record "$name" n/a 0 "the sanitizer does not support this runtime (see $SAN_UNSUPPORTED)"
        return
    fi
    [ "$1" = bash ] || needs "$name" "$1" || return
    [ "$tool" = memcheck ] && extra=(--leak-check full)
    run_part "$name" "$cap" "$LOGS/sanitizer.log" env AMPTRAIN_CUDA_SYNC=1 AMPTRAIN_PLUGIN_PATH="$BUILD/plugins" \
        "$SAN" --tool "$tool" "${extra[@]}" --error-exitcode 9 "$@"
    [ "$PART_RC" = 126 ] && return
    st=$(status_of $PART_RC)
    note=$(part_note $PART_RC "$LOGS/sanitizer.log")
    unsupported=$(sed -n "/^== $name /,\$p" "$LOGS/sanitizer.log" |
        grep -m1 -iE 'device not supported|not supported on this (platform|device)|unsupported (device|platform)' | one_line)
    if [ "$PART_RC" != 0 ] && [ -n "$unsupported" ]; then
        st=n/a
        note="the sanitizer does not support this runtime: $unsupported"
        SAN_UNSUPPORTED=$name
    elif [ "$PART_RC" = 9 ]; then
        note="$tool reported errors (see sanitizer.log)"
    elif [ "$PART_RC" = 0 ]; then
        note=$(sed -n "/^== $name /,\$p" "$LOGS/sanitizer.log" | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' | tail -n 1 | sed 's/^=* *//')
    fi
    record "$name" "$st" "$PART_S" "$note"
}
# memcheck on the scaled formats' kernels and cuBLASLt calls (the FP8, MX
# and NVFP4 rows), on a GPT and on the CNN; racecheck on every kernel that
# uses shared memory (the kernel rows: reductions, layernorm, softmax) and
# on a GPT step; initcheck and synccheck on the GPT.
sanitize memcheck formats 20 bash -c '"$1/tests/test_gpu_fp8" && "$1/tests/test_gpu_nvfp4"' _ "$BUILD"
GPT_SHORT=(train "$ROOT/configs/gpt_shakespeare_fp8.ini" --set run.device=cuda --set train.steps=2
    --set train.eval_every=0 --set data.eval_iters=1 --set model.n_layer=2)
sanitize memcheck gpt 15 "$BUILD/amptrain" "${GPT_SHORT[@]}" --out "$BUILD/memcheck-gpt"
# The CNN's short run: its PyTorch reference on CUDA (5 SGD steps; conv,
# batch norm, pooling, linear), as no Fashion-MNIST is on the host.
sanitize memcheck cnn 15 "$BUILD/tests/test_cnn_reference" --device cuda
sanitize racecheck kernels 15 bash -c '"$1/tests/test_gpu_kernels" && "$1/tests/test_gpu_transformer"' _ "$BUILD"
sanitize racecheck gpt 15 "$BUILD/amptrain" "${GPT_SHORT[@]}" --out "$BUILD/racecheck-gpt"
sanitize initcheck gpt 15 "$BUILD/amptrain" "${GPT_SHORT[@]}" --out "$BUILD/initcheck-gpt"
sanitize synccheck gpt 15 "$BUILD/amptrain" "${GPT_SHORT[@]}" --out "$BUILD/synccheck-gpt"

# --- summary -------------------------------------------------------------------
trap - TERM INT HUP
write_summary "not reached"
echo
cat "$LOGS/summary.md"
echo
echo "logs: $LOGS"
exit "$FAILED"
