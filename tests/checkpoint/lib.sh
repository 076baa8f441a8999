# Helpers the checkpoint test scripts share (sourced; bash).
# Usage of every script: SCRIPT AMPTRAIN CONFIG_DIR WORK_DIR

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# The output files with the wall-clock fields masked: everything else must
# match bit for bit between an interrupted+resumed and an uninterrupted run.
# device_used is cudaMemGetInfo's whole-device figure, which other processes
# on the GPU move: masked too; the process's own exact accounting (every
# memory_peak_bytes category and their total) is compared. The host round
# trips per step are counted over the steps this process ran (a resumed
# run's median of none is null): masked like the step times.
mask() {
    sed -E 's/"(step_ms|cpu_ms)":[0-9.eE+-]+/"\1":T/g; s/"(wall_seconds|median_step_ms|median_comm_ms|median_cpu_ms|load_avg_start|load_avg_end|peak_rss_bytes)": ([0-9.eE+-]+|null)/"\1": T/; s/"host_round_trips_per_step": \{[^}]*\}/"host_round_trips_per_step": T/; s/"device_used": [0-9]+/"device_used": M/' "$1"
}

# same_outputs REF DIR [noconfig]: metrics.jsonl and summary.json (timing
# masked), weights.safetensors and (unless noconfig: the runs were given
# different printing-only keys) config.ini byte for byte.
same_outputs() {
    local ref=$1 dir=$2 f
    for f in metrics.jsonl summary.json; do
        [ -f "$dir/$f" ] || fail "$dir/$f is missing"
        if ! cmp -s <(mask "$ref/$f") <(mask "$dir/$f"); then
            diff <(mask "$ref/$f") <(mask "$dir/$f") | head -20 >&2
            fail "$dir/$f differs from the uninterrupted run's $ref/$f"
        fi
    done
    cmp "$ref/weights.safetensors" "$dir/weights.safetensors" ||
        fail "$dir/weights.safetensors differs from $ref's"
    [ "${3:-}" = noconfig ] || cmp "$ref/config.ini" "$dir/config.ini" ||
        fail "$dir/config.ini differs from $ref's"
    # the masking must not hide whole lines: the step records are all there
    [ "$(wc -l <"$ref/metrics.jsonl")" -gt 2 ] || fail "$ref/metrics.jsonl is nearly empty"
}

# newest_ckpt DIR: the path of the newest ckpt-*.amp (empty if none)
newest_ckpt() {
    ls "$1"/checkpoints/ckpt-*.amp 2>/dev/null | sort | tail -n 1
}

# wait_for_ckpt DIR PID: polls until a checkpoint exists (or PID exits), at
# most CKPT_WAIT_POLLS times 10 ms (default 2000)
wait_for_ckpt() {
    local i
    for i in $(seq 1 "${CKPT_WAIT_POLLS:-2000}"); do
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

# no_metrics DIR: nor a metrics history (a run refused before it started)
no_metrics() {
    no_outputs "$1"
    [ ! -e "$1/metrics.jsonl" ] || fail "$1/metrics.jsonl exists after a refused run"
}

# has_isa PATH: the CPU has the flags instruction-set path PATH (avx2, avx512,
# avx512_bf16) needs.
has_isa() {
    local f need
    case $1 in
    avx2) need="avx2 fma f16c" ;;
    avx512) need="avx2 fma f16c avx512f avx512bw avx512vl avx512dq" ;;
    avx512_bf16) need="avx2 fma f16c avx512f avx512bw avx512vl avx512dq avx512_bf16" ;;
    esac
    for f in $need; do grep -qw "$f" /proc/cpuinfo || return 1; done
}

# digest DIR: a run's metrics without timings, and its weights (for cmp)
digest() {
    sed -E 's/,"(step_ms|cpu_ms)":[^,}]*//g' "$1/metrics.jsonl"
    sha256sum <"$1/weights.safetensors"
}
value() { # DIR KEY: a number from summary.json
    sed -nE "s/^  \"$2\": ([^,]*),?$/\1/p" "$1/summary.json"
}
# losses_close DIR REF TOL KEY: DIR's final_train_loss and KEY (test_loss or
# val_loss) within TOL of REF's (relative, or absolute below 1); prints the
# two differences; non-zero when either is over TOL or a loss is missing.
losses_close() {
    local tr te rr re
    tr=$(value "$1" final_train_loss) te=$(value "$1" "$4")
    rr=$(value "$2" final_train_loss) re=$(value "$2" "$4")
    if [ -z "$tr" ] || [ -z "$te" ] || [ -z "$rr" ] || [ -z "$re" ]; then
        echo "no final_train_loss/$4 in $1 or $2"
        return 1
    fi
    awk -v a="$tr" -v b="$rr" -v c="$te" -v d="$re" -v t="$3" 'BEGIN {
        ea = (a > b ? a - b : b - a) / (b > 1 ? b : 1); ec = (c > d ? c - d : d - c) / (d > 1 ? d : 1);
        printf "%.3g %.3g", ea, ec; exit !(ea <= t && ec <= t) }'
}

# expect CODE REGEX LOG -- command...: exit status and an output line
expect() {
    local code=$1 re=$2 log=$3
    shift 4
    "$@" >"$log" 2>&1
    local rc=$?
    [ "$rc" = "$code" ] || fail "exit $rc (expected $code) from: $* -- $(tail -3 "$log")"
    grep -Eq -- "$re" "$log" || fail "stderr does not match '$re' for: $* -- $(tail -3 "$log")"
}
