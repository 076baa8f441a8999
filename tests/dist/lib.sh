# Helpers the data-parallel test scripts share (sourced; bash).

# Under AddressSanitizer (scripts/sanitize.sh): OpenMPI never frees what
# MPI_Init allocates and unloads its components at exit, so its leaks are
# suppressed by library (lsan.supp), and LSan unwinds fully to see those
# frames. Leaks with none of them on the stack are still reported. Without
# ASan these variables do nothing.
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"

# The tests compare runs on N ranks with runs on one process bit for bit,
# which holds only at equal threads per process: a GEMM library may sum in
# another order at another thread count (OpenBLAS does on an AVX2 EPYC for
# these shapes). Without a value every process, rank or not, runs 1 thread;
# scripts/thread-matrix.sh runs these tests at 1 and at 2.
export AMPTRAIN_THREADS=${AMPTRAIN_THREADS:-1}

# fail, same_outputs, newest_ckpt, wait_for_ckpt, no_outputs
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../checkpoint" && pwd)/lib.sh"
# mpirun starts slower than one process: wait up to 30 s for a checkpoint
CKPT_WAIT_POLLS=3000

# need_mpirun MPIRUN: skip (77) with a message when mpirun is missing.
# dist_start MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR: the scripts' first four
# arguments as MPIRUN, A, HERE and W; skips (77) without mpirun; W made empty.
dist_start() {
    MPIRUN=$1 A=$2 HERE=$3 W=$4
    need_mpirun "$MPIRUN"
    rm -rf "$W" && mkdir -p "$W" || exit 1
}

need_mpirun() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "SKIP: '$1' not found: install openmpi-bin to run the mpi tests"
        exit 77
    fi
}

# need_nccl_gpus HAVE_NCCL WHAT: skip (77) with a message unless the build
# has NCCL and 2 GPUs are visible (NCCL refuses two ranks on one device);
# WHAT names the test in the message.
need_nccl_gpus() {
    case $1 in ON | on | 1 | TRUE | true) ;; *)
        echo "SKIP: amptrain was built without NCCL (needs MPI, CUDA and nccl.h/libnccl)"
        exit 77 ;;
    esac
    local gpus
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "${gpus:-0}" -lt 2 ]; then
        echo "SKIP: ${gpus:-0} GPU(s) visible: $2 needs 2"
        exit 77
    fi
}

# rank_field RUN RANK KEY: KEY's number in rank RANK's row of summary.json's "ranks"
rank_field() {
    grep -o "{\"rank\": $2, .*" "$1/summary.json" | grep -o "\"$3\": [0-9]*" | head -1 | grep -o '[0-9]*$'
}

# sent_bytes REF RUN N NP WSIZE WHAT: every rank's bytes sent in the last
# step (summary.json's "ranks"), as MPI's direct sends count them on either
# transport, for N trained elements on NP ranks (rank r's elements of the
# sums are [r S, (r + 1) S), S = ceil(N / NP), the last short): the sharded
# RUN sent 4 (N - its slice) of gradients and WSIZE x its slice x (NP - 1)
# of weights (WSIZE: the working dtype's bytes), the unsharded REF 4 (N -
# its slice) + 4 x its slice x (NP - 1) and no weights. Prints the bytes
# all ranks sent a step: REF's, then RUN's.
sent_bytes() {
    local ref=$1 run=$2 n=$3 np=$4 wsize=$5 what=$6 r mine g w g0 w0 none=0 zero=0
    local S=$(( (n + np - 1) / np ))
    for ((r = 0; r < np; r++)); do
        mine=$(( n - r * S < S ? n - r * S : S ))
        g=$(rank_field "$run" $r gradients) w=$(rank_field "$run" $r weights)
        [ "$g" = $((4 * (n - mine))) ] && [ "$w" = $((wsize * mine * (np - 1))) ] ||
            fail "$what rank $r: sent gradients $g, weights $w bytes (want $((4 * (n - mine))), $((wsize * mine * (np - 1))))"
        g0=$(rank_field "$ref" $r gradients) w0=$(rank_field "$ref" $r weights)
        [ "$g0" = $((4 * (n - mine) + 4 * mine * (np - 1))) ] && [ "$w0" = 0 ] ||
            fail "$what rank $r: shard=none sent $g0 + $w0 bytes (want $((4 * (n - mine) + 4 * mine * (np - 1))) + 0)"
        none=$((none + g0)) zero=$((zero + g + w))
    done
    echo "$none $zero"
}

# prec_run NP PREC SHARD: the caller's tiny MLP run (its A, W, cfg: the
# tiny config with its dynamic scaler, noscale: without one, base: the
# arguments) on NP ranks under policy PREC (fp16 with the scaler, fp32 and
# bf16 without) and [dist] shard = SHARD, into W/NP-PREC-SHARD
prec_run() {
    local c=$cfg out=$W/$1-$2-$3
    [ "$2" = fp16 ] || c=$noscale
    mpi "$1" "$A" train "$c" "${base[@]}" --set precision.plugin="$2" --set dist.shard="$3" \
        --out "$out" 2>"$out.log" || fail "$1 ranks $2 shard=$3 failed: $(tail -3 "$out.log")"
}

# cnn_runs ROOT SHARD...: the CNN of ROOT/configs/cnn_fashion_fp32.ini (two
# batch norms) on 2 ranks, 6 steps, once a shard value, into W/cnn-SHARD
cnn_runs() {
    local root=$1 shard
    shift
    for shard in "$@"; do
        mpi 2 "$A" train "$root/configs/cnn_fashion_fp32.ini" --set run.device=cpu \
            --set data.train_limit=256 --set data.test_limit=64 --set data.batch_size=16 \
            --set train.steps=6 --set train.eval_every=0 --set dist.shard="$shard" \
            --out "$W/cnn-$shard" 2>"$W/cnn-$shard.log" ||
            fail "the CNN with shard=$shard failed: $(tail -3 "$W/cnn-$shard.log")"
    done
}

# In containers without ptrace between processes (Docker's default), OpenMPI's
# shared-memory transport fails its single-copy (CMA) reads; copying through
# the shared segment works everywhere, and these messages are small.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}

# mpi NP CMD...: CMD on NP ranks of this machine. --oversubscribe: more
# ranks than cores is fine here; root (CI containers) must say so.
mpi() {
    local np=$1
    shift
    local extra=(--oversubscribe)
    [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
    "$MPIRUN" "${extra[@]}" -np "$np" "$@"
}

# mpi_bg NP CMD...: the same in the background; MPI_PID is mpirun's pid
# (what a user signals). Whatever is left of it is killed when the script
# exits.
MPI_PID=
mpi_bg() {
    local np=$1
    shift
    local extra=(--oversubscribe)
    [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
    "$MPIRUN" "${extra[@]}" -np "$np" "$@" &
    MPI_PID=$!
}
mpi_cleanup() {
    if [ -n "$MPI_PID" ] && kill -0 "$MPI_PID" 2>/dev/null; then
        pkill -KILL -P "$MPI_PID" 2>/dev/null
        kill -KILL "$MPI_PID" 2>/dev/null
    fi
}
trap mpi_cleanup EXIT

# The outputs with the wall-clock fields masked (same_outputs uses it): the
# checkpoint tests' fields and the time spent communicating.
mask() {
    sed -E 's/"(step_ms|cpu_ms)":[0-9.eE+-]+/"\1":T/g; s/"(wall_seconds|median_step_ms|median_comm_ms|median_cpu_ms|load_avg_start|load_avg_end|peak_rss_bytes)": ([0-9.eE+-]+|null)/"\1": T/; s/"host_round_trips_per_step": \{[^}]*\}/"host_round_trips_per_step": T/' "$1"
}
