# Helpers the data-parallel test scripts share (sourced; bash).

# Under AddressSanitizer (scripts/sanitize.sh): OpenMPI never frees what
# MPI_Init allocates and unloads its components at exit, so its leaks are
# suppressed by library (lsan.supp), and LSan unwinds fully to see those
# frames. Leaks with none of them on the stack are still reported. Without
# ASan these variables do nothing.
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"

# fail, same_outputs, newest_ckpt, wait_for_ckpt, no_outputs
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../checkpoint" && pwd)/lib.sh"
# mpirun starts slower than one process: wait up to 30 s for a checkpoint
CKPT_WAIT_POLLS=3000

# need_mpirun MPIRUN: skip (77) with a message when mpirun is missing.
need_mpirun() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "SKIP: '$1' not found: install openmpi-bin to run the mpi tests"
        exit 77
    fi
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
    sed -E 's/"(step_ms|cpu_ms)":[0-9.eE+-]+/"\1":T/g; s/"(wall_seconds|median_step_ms|median_comm_ms|median_cpu_ms|load_avg_start|load_avg_end|peak_rss_bytes)": ([0-9.eE+-]+|null)/"\1": T/' "$1"
}
