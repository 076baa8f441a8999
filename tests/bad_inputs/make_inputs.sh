#!/bin/sh
# make_inputs.sh OUTDIR: writes the generated bad inputs that
# tests/cmake/bad_inputs.cmake runs amptrain on (a CTest fixture):
#   OUTDIR/data/<case>/     Fashion-MNIST-style IDX file sets: one good
#                           set, then truncated, corrupt, mismatched ones
#   OUTDIR/init/<case>.safetensors  [model] init files for the 3-2-2 MLP of
#                           base_tiny.ini: one good, then each wrong in one way
# Small enough to build with printf; POSIX sh, gzip and dd only.
set -eu
out=$1
rm -rf "$out/data" "$out/init"
mkdir -p "$out/data" "$out/init"

# bytes V... : each V (0..255) as one raw byte.
bytes() {
    for v in "$@"; do
        # shellcheck disable=SC2059 # the format is the octal escape itself
        printf "\\$(printf %03o "$v")"
    done
}
# be32 N: N as 4 big-endian bytes (IDX headers).
be32() { bytes $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)); }
# le64 N: N as 8 little-endian bytes (the safetensors header length).
le64() { bytes $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)) 0 0 0 0; }
zeros() { head -c "$1" /dev/zero; }

# images N ROWS COLS [PIXELS]: an IDX3 image file with PIXELS (default
# N*ROWS*COLS) payload bytes; labels N LABEL...: an IDX1 label file.
images() {
    be32 2051; be32 "$1"; be32 "$2"; be32 "$3"
    zeros "${4:-$(($1 * $2 * $3))}"
}
labels() {
    n=$1; shift
    be32 2049; be32 "$n"; bytes "$@"
}

# dataset CASE: a folder with the four gzip files of a good 4-example, 2x2
# set; the caller then damages the train files.
dataset() {
    d=$out/data/$1
    mkdir -p "$d"
    for split in train t10k; do
        images 4 2 2 | gzip -n >"$d/$split-images-idx3-ubyte.gz"
        labels 4 0 1 2 3 | gzip -n >"$d/$split-labels-idx1-ubyte.gz"
    done
    img=$d/train-images-idx3-ubyte.gz
    lab=$d/train-labels-idx1-ubyte.gz
}

dataset good
dataset empty_gz;          : >"$img"
dataset truncated_gz;      images 4 2 2 | gzip -n | head -c 20 >"$img"
# the deflate data after the 10-byte gzip header, overwritten with 0xff
dataset corrupt_gz;        images 500 28 28 | gzip -n >"$img"
                           bytes 255 255 255 255 255 255 255 255 |
                               dd of="$img" bs=1 seek=12 conv=notrunc 2>/dev/null
dataset count_mismatch;    labels 3 0 1 2 | gzip -n >"$lab"
dataset wrong_magic;       labels 4 0 1 2 3 | gzip -n >"$img"
dataset zero_rows;         images 4 0 2 | gzip -n >"$img"
dataset huge_count;        { be32 2049; be32 4294967295; bytes 1 2 3; } | gzip -n >"$lab"
                           { images 4294967295 28 28 16; } | gzip -n >"$img"
dataset label_range;       labels 4 0 1 10 3 | gzip -n >"$lab"
dataset trailing;          { images 4 2 2; bytes 7 7 7; } | gzip -n >"$img"
dataset short_pixels;      images 4 2 2 10 | gzip -n >"$img"
# an uncompressed file is read when the .gz is missing; this one is cut short
dataset raw_truncated;     rm "$img"; images 4 2 2 5 >"${img%.gz}"
# the test split's images are 3x3 while the model was built for 2x2
dataset test_dims;         images 4 3 3 | gzip -n >"$d/t10k-images-idx3-ubyte.gz"
# binary garbage in place of the images: an ELF header, then random bytes
dataset garbage;           { printf '\177ELF'; head -c 300 /dev/urandom; } >"$img"

# safetensors NAME HEADER DATA_BYTES: the header is padded with spaces to a
# multiple of 8 (as the reference writer does), then DATA_BYTES zero bytes.
safetensors() {
    h=$2
    while [ $((${#h} % 8)) -ne 0 ]; do h="$h "; done
    { le64 ${#h}; printf '%s' "$h"; zeros "$3"; } >"$out/init/$1.safetensors"
}
# t NAME DTYPE SHAPE BEGIN END: one header entry.
t() { printf '"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%s,%s]}' "$@"; }

# base_tiny.ini's MLP: fc1 [2, 3], fc2 [2, 2], F32 (4 bytes each).
w1=$(t fc1.weight F32 2,3 0 24)
b1=$(t fc1.bias F32 2 24 32)
w2=$(t fc2.weight F32 2,2 32 48)
b2=$(t fc2.bias F32 2 48 56)
safetensors good "{$w1,$b1,$w2,$b2}" 56
safetensors bad_json "{$w1,$b1,$w2,$b2" 56
safetensors not_object "[1,2,3]" 0
safetensors offsets_past_end "{$w1,$b1,$w2,$(t fc2.bias F32 4 48 64)}" 56
safetensors unknown_dtype "{$(t fc1.weight F24 2,3 0 24),$b1,$w2,$b2}" 56
safetensors int_dtype "{$(t fc1.weight I32 2,3 0 24),$b1,$w2,$b2}" 56
safetensors wrong_shape "{$(t fc1.weight F32 2,2 0 16),$(t fc1.bias F32 2 16 24),$(t fc2.weight F32 2,2 24 40),$(t fc2.bias F32 2 40 48)}" 48
safetensors transposed "{$(t fc1.weight F32 3,2 0 24),$b1,$w2,$b2}" 56
safetensors shape_size "{$(t fc1.weight F32 2,3 0 20),$(t fc1.bias F32 2 20 32),$w2,$b2}" 56
safetensors negative_shape "{$(t fc1.weight F32 -2,3 0 24),$b1,$w2,$b2}" 56
safetensors missing_tensor "{$w1,$(t fc1.bais F32 2 24 32),$w2,$b2}" 56
safetensors extra_tensor "{$w1,$b1,$w2,$b2,$(t fc3.bias F32 1 56 60)}" 60
safetensors duplicate_key "{$w1,$b1,$w2,$b2,$(t fc1.bias F32 2 56 64)}" 64
# header length beyond the file: a good file whose length field says 1 MiB
safetensors len_past_end "{$w1,$b1,$w2,$b2}" 56
f=$out/init/len_past_end.safetensors
le64 1048576 | dd of="$f" bs=1 conv=notrunc 2>/dev/null
: >"$out/init/empty.safetensors"
{ printf '\177ELF'; head -c 4096 /dev/urandom; } >"$out/init/garbage.safetensors"
mkdir -p "$out/init/a_directory.safetensors"

# ---- token files for [data] dataset = tokens (base_tokens.ini: vocab_size 8,
# block_size 4): OUTDIR/tokens/<case>.<ext>, one fault each.
tok=$out/tokens
rm -rf "$tok"
mkdir -p "$tok"
le16() { bytes $(($1 & 255)) $(($1 >> 8 & 255)); }
le32() { bytes $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
# ids N [BAD_AT BAD_ID]: N uint16 ids cycling 0..7, id BAD_ID at BAD_AT.
ids() {
    i=0
    while [ $i -lt "$1" ]; do
        if [ $i -eq "${2:--1}" ]; then le16 "$3"; else le16 $((i % 8)); fi
        i=$((i + 1))
    done
}
# llmc MAGIC VERSION COUNT: a 1024-byte llm.c header.
llmc() { le32 "$1"; le32 "$2"; le32 "$3"; zeros 1012; }
# npy DICT PAYLOAD_BYTES...: a .npy 1.0 with the given header dict.
npy() {
    h="$1"
    while [ $(((10 + ${#h} + 1) % 64)) -ne 0 ]; do h="$h "; done
    printf '\223NUMPY\001\000'; le16 $((${#h} + 1)); printf '%s\n' "$h"
}
ids 64 >"$tok/good.bin"
ids 64 37 9 >"$tok/id_range.bin"
{ llmc 20240520 1 64; ids 64 5 8; } >"$tok/id_range_llmc.bin"
{ ids 64; bytes 1; } >"$tok/odd_length.bin"
: >"$tok/empty.bin"
ids 3 >"$tok/short.bin"
# the uint32 formats: an llm.c shard of magic 20240801 (version 7), a .npy <u4
ids32() { i=0; while [ $i -lt "$1" ]; do le32 $((i % 8)); i=$((i + 1)); done; }
{ llmc 20240801 7 64; ids32 64; } >"$tok/good_u32.bin"
{ llmc 20240520 1 64; } | head -c 100 >"$tok/truncated_header.bin"
{ llmc 12345 1 64; ids 64; } >"$tok/wrong_magic.llmc"
{ llmc 20240520 7 64; ids 64; } >"$tok/wrong_version.bin"
{ llmc 20240520 1 70; ids 64; } >"$tok/count_mismatch.bin"
{ llmc 20240520 1 64; ids 64; } >"$tok/good_llmc.bin"
ids 64 >"$tok/no_extension.dat"
# long enough for an llm.c header: read as llmc, its magic is wrong
{ npy "{'descr': '<u2', 'fortran_order': False, 'shape': (600,), }"; ids 600; } >"$tok/good.npy"
{ npy "{'descr': '<f4', 'fortran_order': False, 'shape': (32,), }"; ids 64; } >"$tok/npy_dtype.npy"
{ npy "{'descr': '<u2', 'fortran_order': False, 'shape': (8, 8), }"; ids 64; } >"$tok/npy_shape.npy"
{ npy "{'descr': '<u2', 'fortran_order': False, 'shape': (65,), }"; ids 64; } >"$tok/npy_count.npy"
{ npy "{'descr': '<u2', 'fortran_order': False, 'shape': (64,) "; ids 64; } >"$tok/npy_dict.npy"
{ npy "{'descr': '<i4', 'fortran_order': False, 'shape': (16,), }"; le32 1; le32 -3; zeros 56; } >"$tok/npy_negative.npy"
printf '\223NUMPY\001' >"$tok/npy_truncated.npy"
{ npy "{'descr': '<u4', 'fortran_order': False, 'shape': (64,), }"; ids32 64; } >"$tok/good_u4.npy"
