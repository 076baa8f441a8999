#!/bin/bash
# rehearse_test.sh CASE SOURCE_DIR WORK_DIR
# The GPU machine's build, rehearsed here (scripts/gpu-check.sh --rehearse):
#   prepare          fills WORK_DIR/debs with the .deb files: a copy of
#                    SOURCE_DIR/.gpu-debs when that is complete, else
#                    `gpu-check.sh --prepare` (apt-get download)
#   full             the rehearsal passes: amptrain and the gpu tests build
#                    and run from the prefix alone, with no oneDNN, MPI, NCCL
#                    or system cuDNN visible and cuDNN from a wheel layout
#                    (the script checks CMake's summary lines), then a dry run
#   missing_deb      libinih1's .deb taken out of the folder: fails at once,
#                    naming libinih1
#   missing_package  libgfortran5 left out of AMP_GPU_DEBS and the folder:
#                    fails (the system's copy is hidden, or its use caught),
#                    naming libgfortran5
set -u
[ $# -eq 3 ] || { echo "usage: rehearse_test.sh CASE SOURCE_DIR WORK_DIR" >&2; exit 2; }
case=$1 src=$2 work=$3
debs=$work/debs
check=$src/scripts/gpu-check.sh
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_failure NAME NEEDLE [ENV...]: the rehearsal on $work/NAME.debs
# exits 1 and its output contains NEEDLE.
expect_failure() {
    local name=$1 needle=$2 out
    shift 2
    out=$(env "$@" bash "$check" --rehearse --debs "$work/$name.debs" --build-dir "$work/$name" -j 2 2>&1)
    local rc=$?
    echo "$out" | tail -n 8
    [ "$rc" = 1 ] || fail "exit status $rc, expected 1"
    echo "$out" | grep -qF -- "$needle" || fail "the output does not say '$needle'"
    echo "ok  failed as expected, saying: $needle"
}

# copy_debs NAME [PACKAGE]: $work/NAME.debs = the prepared folder without PACKAGE's .deb
copy_debs() {
    rm -rf "$work/$1.debs" && mkdir -p "$work/$1.debs" && cp "$debs"/*.deb "$work/$1.debs/" || exit 1
    [ -z "${2:-}" ] || rm "$work/$1.debs/$2"_*.deb || fail "no $2 .deb to take out"
}

case $case in
prepare)
    . "$src/scripts/gpu_prefix.sh"
    mkdir -p "$work" || exit 1
    if amp_gpu_check_debs "$debs" 2>/dev/null; then
        echo "ok  $debs is complete"
    elif amp_gpu_check_debs "$src/.gpu-debs" 2>/dev/null; then
        rm -rf "$debs" && mkdir -p "$debs" && cp "$src/.gpu-debs"/*.deb "$debs/" || exit 1
        echo "ok  copied $src/.gpu-debs"
    else
        bash "$check" --prepare --debs "$debs" || fail "--prepare failed"
    fi
    ;;
full)
    bash "$check" --rehearse --debs "$debs" --build-dir "$work/full" -j 2 || fail "the rehearsal failed"
    ;;
missing_deb)
    copy_debs missing_deb libinih1
    expect_failure missing_deb "missing .deb for package(s): libinih1"
    ;;
missing_package)
    . "$src/scripts/gpu_prefix.sh"
    copy_debs missing_package libgfortran5
    list=$(echo $AMP_GPU_DEBS | tr ' ' '\n' | grep -vx libgfortran5 | tr '\n' ' ')
    expect_failure missing_package "add libgfortran5 to AMP_GPU_DEBS" AMP_GPU_DEBS_OVERRIDE="$list"
    ;;
*)
    echo "rehearse_test.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
