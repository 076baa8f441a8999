# What the pin scripts share (sourced; bash): the case runner that turns a
# short CPU run into digest lines, and the bit-for-bit check of a digest.
#   pin_start NAME           sets PIN_NAME, AMPTRAIN_THREADS (2 when unset)
#                            and PIN_WORK, a folder removed at exit
#   pin_case CASE CONFIG ARGS...
#                            runs `amptrain train CONFIG ARGS...` ($amptrain,
#                            CONFIG relative to $root) into PIN_WORK/CASE and
#                            prints "== CASE", the metrics without timings,
#                            the summary lines matching PIN_SUMMARY (an ERE)
#                            and the SHA-256 of the saved weights
#   pin_same EXPECTED DIGEST WHAT HOW
#                            exits 1 with the diff unless the files are equal

pin_start() {
    PIN_NAME=$1
    export AMPTRAIN_THREADS=${AMPTRAIN_THREADS:-2}
    PIN_WORK=$(mktemp -d)
    trap 'rm -rf "$PIN_WORK"' EXIT
}

pin_case() {
    local name=$1 cfg=$2
    shift 2
    "$amptrain" train "$root/$cfg" --set run.device=cpu --set train.log_every=1 \
        "$@" --out "$PIN_WORK/$name" >/dev/null 2>"$PIN_WORK/$name.log" || {
        cat "$PIN_WORK/$name.log" >&2
        echo "$PIN_NAME: case $name failed" >&2
        exit 1
    }
    echo "== $name"
    sed -E 's/,"(step_ms|cpu_ms)":[^,}]*//g' "$PIN_WORK/$name/metrics.jsonl"
    grep -E "$PIN_SUMMARY" "$PIN_WORK/$name/summary.json"
    echo "weights $(sha256sum <"$PIN_WORK/$name/weights.safetensors" | cut -d' ' -f1)"
}

pin_same() {
    if ! diff -u "$1" "$2"; then
        echo "$PIN_NAME: the $3's numbers moved (diff above: expected, then now; $4)" >&2
        exit 1
    fi
}
