#!/bin/sh
# make_init.sh OUTDIR: [model] init files for tiny.ini's 3-2-2 MLP (a CTest
# fixture for tests/cmake/nonfinite.cmake), F32 little-endian:
#   nan.safetensors       zeros but fc2.bias[1] = NaN
#   overflow.safetensors  fc1 zero, fc2.weight[0][0] = 1e37: the first gradient of
#                         fc1 is ~1e37, finite, and lr 1000 times it is not
# POSIX sh with printf and head only.
set -eu
out=$1
mkdir -p "$out"
# le64 N: N < 65536 as 8 little-endian bytes (the header length).
byte() { printf "\\$(printf %03o "$1")"; }
le64() { byte $(($1 & 255)); byte $(($1 >> 8 & 255)); zeros 6; }
zeros() { head -c "$1" /dev/zero; }
f32_nan() { printf '\000\000\300\177'; }
f32_1e37() { printf '\302\275\360\174'; }
t() { printf '"%s":{"dtype":"F32","shape":[%s],"data_offsets":[%s,%s]}' "$@"; }
h="{$(t fc1.weight 2,3 0 24),$(t fc1.bias 2 24 32),$(t fc2.weight 2,2 32 48),$(t fc2.bias 2 48 56)}"
while [ $((${#h} % 8)) -ne 0 ]; do h="$h "; done
{ le64 ${#h}; printf '%s' "$h"; zeros 52; f32_nan; } >"$out/nan.safetensors"
{ le64 ${#h}; printf '%s' "$h"; zeros 32; f32_1e37; zeros 20; } \
    >"$out/overflow.safetensors"
