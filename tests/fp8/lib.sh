# Sourced by the scaled-state CLI tests (loss_scale.sh, eval_free.sh), whose
# arguments are AMPTRAIN CONFIG WORK_DIR: A, CFG, W, fail, and run NAME
# [--set ...], which trains CFG on the CPU into $W/NAME. The runs compare bit
# for bit, so every one gets the same thread count.
set -u
A=$1 CFG=$2 W=$3
command -v python3 >/dev/null || { echo "SKIP: python3 (reads metrics.jsonl) not found"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
export AMPTRAIN_THREADS=1
run() {
    local name=$1
    shift
    "$A" train "$CFG" --set run.device=cpu "$@" --out "$W/$name" 2>"$W/$name.log" ||
        fail "$name: $(tail -3 "$W/$name.log")"
}
