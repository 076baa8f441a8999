#!/bin/bash
# Every AMPTRAIN_* variable amptrain reads is checked when it starts, on
# every command and whatever the device: a bad value is exit 2 naming the
# variable and what it allows, before anything is written. An empty value
# is unset; a good value still does what it says; a name amptrain does not
# read gets a warning.
set -u
. "$(dirname "$0")/lib.sh"
CFG=$TESTS/../configs/tiny_fp16_dynamic.ini
TRAIN=("$A" train "$CFG" --set run.device=cpu --set train.steps=2 --out "$W/run")

# bad NAME VALUE REGEX: train and plugins refuse it, and no run output exists
bad() {
    local name=$1 value=$2 re=$3
    expect 2 "^amptrain: $re" env "$name=$value" "${TRAIN[@]}"
    [ ! -e "$W/run/config.ini" ] || fail "$name=$value: the refused run wrote config.ini"
    expect 2 "^amptrain: $re" env "$name=$value" "$A" plugins
}
bad AMPTRAIN_LOG verbose 'AMPTRAIN_LOG=verbose: expected error, warn, info or debug$'
bad AMPTRAIN_LOG DEBUG 'AMPTRAIN_LOG=DEBUG: expected error, warn, info or debug$'
bad AMPTRAIN_THREADS 0 'AMPTRAIN_THREADS=0: expected an integer in \[1, 1024\]$'
bad AMPTRAIN_THREADS 4x 'AMPTRAIN_THREADS=4x: expected an integer in \[1, 1024\]$'
bad AMPTRAIN_ISA sse2 'AMPTRAIN_ISA=sse2: expected generic, avx2, avx512 or avx512_bf16$'
bad AMPTRAIN_GEMM mkl 'AMPTRAIN_GEMM=mkl: expected onednn, openblas or reference$'
# read only by the CUDA backend: still refused on a CPU run
bad AMPTRAIN_CUDA_SYNC yes 'AMPTRAIN_CUDA_SYNC=yes: expected 0 or 1$'
bad AMPTRAIN_PLUGIN_PATH "$W/no-such-folder" "AMPTRAIN_PLUGIN_PATH: entry '$W/no-such-folder': No such file or directory. expected folders separated by ':'$"
bad AMPTRAIN_PLUGIN_PATH "$W:$CFG" "AMPTRAIN_PLUGIN_PATH: entry '$CFG': Not a directory"
echo "ok  a bad value of each AMPTRAIN_* variable is exit 2 naming it and its values"

# good values work, empty ones are unset
expect 0 'debug: layer fc1' env AMPTRAIN_LOG=debug AMPTRAIN_THREADS=1 AMPTRAIN_ISA=generic \
    AMPTRAIN_CUDA_SYNC=0 AMPTRAIN_PLUGIN_PATH="$W::" "${TRAIN[@]}"
expect 0 'test_loss' env AMPTRAIN_LOG= AMPTRAIN_THREADS= AMPTRAIN_ISA= AMPTRAIN_GEMM= \
    AMPTRAIN_CUDA_SYNC= AMPTRAIN_PLUGIN_PATH= "${TRAIN[@]}"
! grep -q 'debug:' "$W/log" || fail "an empty AMPTRAIN_LOG printed debug lines"
expect 0 'AMPTRAIN_THREAD is set but amptrain reads no such variable' env AMPTRAIN_THREAD=4 "${TRAIN[@]}"
expect 0 '^KIND' env AMPTRAIN_LOG=error AMPTRAIN_THREAD=4 "$A" plugins
! grep -q 'AMPTRAIN_THREAD ' "$W/log" || fail "AMPTRAIN_LOG=error printed a warning"
echo "ok  good and empty values; an unknown AMPTRAIN_* name is a warning"
