#!/bin/sh
# gpu_train_run.sh [--exit CODE] AMPTRAIN CONFIG OUT REGEX... -- [ARG]...
# On a machine WITH a GPU: `AMPTRAIN train CONFIG --set run.device=cuda
# --out OUT [ARG]...` must exit CODE (default 0) with every REGEX (grep -E)
# matching its stderr. Without a visible CUDA device (the run fails saying "no CUDA
# device is visible", or the build has no CUDA) it exits 77 (CTest:
# skipped), saying why. POSIX sh only.
set -u
want_rc=0
if [ "${1:-}" = --exit ]; then want_rc=$2; shift 2; fi
[ $# -ge 4 ] || { echo "usage: gpu_train_run.sh AMPTRAIN CONFIG OUT REGEX... -- [ARG]..." >&2; exit 2; }
bin=$1 config=$2 out=$3
shift 3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu_train_run.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/want"
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    printf '%s\n' "$1" >>"$tmp/want"
    shift
done
[ $# -gt 0 ] && shift
rm -rf "$out"
"$bin" train "$config" --set run.device=cuda --out "$out" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
if [ "$rc" = 1 ] && grep -Eq 'no CUDA device is visible|built without CUDA' "$tmp/stderr"; then
    echo "skipped: $(grep -m1 -E 'no CUDA device is visible|built without CUDA' "$tmp/stderr")"
    exit 77
fi
fail=0
[ "$rc" = "$want_rc" ] || { echo "gpu_train_run: exit status $rc, expected $want_rc" >&2; fail=1; }
while IFS= read -r re; do
    grep -Eq -- "$re" "$tmp/stderr" || { echo "gpu_train_run: stderr does not match: $re" >&2; fail=1; }
done <"$tmp/want"
if [ "$fail" -ne 0 ]; then
    echo "--- stderr:" >&2
    cat "$tmp/stderr" >&2
    exit 1
fi
grep -E 'cuda: (fp8_gemm|nvfp4_gemm|MX32|NVFP4)' "$tmp/stderr"
tail -n 1 "$tmp/stderr"
exit 0
