# Helpers the data-parallel test scripts share (sourced; bash).

# Under AddressSanitizer (scripts/sanitize.sh): OpenMPI never frees what
# MPI_Init allocates and unloads its components at exit, so its leaks are
# suppressed by library (lsan.supp), and LSan unwinds fully to see those
# frames. Leaks with none of them on the stack are still reported. Without
# ASan these variables do nothing.
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

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

# The outputs with the wall-clock fields masked.
mask() {
    sed -E 's/"step_ms":[0-9.eE+-]+/"step_ms":T/; s/"(wall_seconds|median_step_ms|median_comm_ms)": [0-9.eE+-]+/"\1": T/' "$1"
}

# same_outputs REF DIR: metrics.jsonl and summary.json (timing masked),
# weights.safetensors and config.ini byte for byte.
same_outputs() {
    local ref=$1 dir=$2 f
    for f in metrics.jsonl summary.json; do
        [ -f "$dir/$f" ] || fail "$dir/$f is missing"
        if ! cmp -s <(mask "$ref/$f") <(mask "$dir/$f"); then
            diff <(mask "$ref/$f") <(mask "$dir/$f") | head -20 >&2
            fail "$dir/$f differs from $ref/$f"
        fi
    done
    cmp "$ref/weights.safetensors" "$dir/weights.safetensors" || fail "$dir/weights.safetensors differs from $ref's"
    cmp "$ref/config.ini" "$dir/config.ini" || fail "$dir/config.ini differs from $ref's"
    [ "$(wc -l <"$ref/metrics.jsonl")" -gt 2 ] || fail "$ref/metrics.jsonl is nearly empty"
}

newest_ckpt() {
    ls "$1"/checkpoints/ckpt-*.amp 2>/dev/null | sort | tail -n 1
}

# wait_for FILE_GLOB PID: polls until a file matches (or PID exits)
wait_for_ckpt() {
    local i
    for i in $(seq 1 3000); do
        [ -n "$(newest_ckpt "$1")" ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

# no_outputs DIR: a stopped or failed run leaves nothing that looks finished:
# no result file and no temporary. (metrics.jsonl may be there: once a run
# has a checkpoint it is the history the checkpoints point into.)
no_outputs() {
    local f
    for f in config.ini summary.json weights.safetensors; do
        [ ! -e "$1/$f" ] || fail "$1/$f exists after a run that did not finish"
    done
    for f in "$1"/.*.partial "$1"/*.partial "$1"/checkpoints/.*.partial; do
        [ ! -e "$f" ] || fail "$f was left behind"
    done
}
