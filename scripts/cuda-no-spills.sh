#!/usr/bin/env bash
# Fails when ptxas spills registers in any kernel of the CUDA backend: each
# core/backend/cuda/*.cu is compiled to SASS for one architecture (default
# sm_90, the H200's) with -Xptxas -v and the backend's own flags, and every
# "N bytes spill stores/loads" with N > 0 is reported with its function.
# Needs nvcc only (no GPU). Usage: scripts/cuda-no-spills.sh [ARCH]
#   AMP_NVCC overrides the compiler (default: nvcc on PATH, else
#   /usr/local/cuda/bin/nvcc). Exit 0: no spills; 1: spills or a failed
#   compile; 2: no nvcc.
set -uo pipefail
cd "$(dirname "$0")/.."
arch=${1:-90}
nvcc=${AMP_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [[ ! -x $nvcc ]]; then
    echo "cuda-no-spills: no nvcc (set AMP_NVCC)" >&2
    exit 2
fi
# cnn_cuda.cu's cuDNN half only when cudnn.h is where nvcc looks.
cudnn=0
echo '#include <cudnn.h>' | "$nvcc" -x cu -E - -o /dev/null 2>/dev/null && cudnn=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for src in core/backend/cuda/*.cu; do
    log=$tmp/$(basename "$src").log
    if ! "$nvcc" -c "$src" -o "$tmp/out.o" -O3 --fmad=false -Werror=all-warnings \
        --generate-code=arch=compute_"$arch",code=sm_"$arch" -Xptxas -v \
        -I core -I core/include -I models -DAMP_HAVE_CUDA=1 -DAMP_HAVE_CUDNN=$cudnn \
        -DAMP_CUDA_ARCHS=\""$arch"-real\" >"$log" 2>&1; then
        echo "FAIL: $src does not compile for sm_$arch:" >&2
        cat "$log" >&2
        status=1
        continue
    fi
    # ptxas prints "Function properties for F" and then F's spill line.
    spills=$(awk '/Function properties for/ { f = $NF }
                  /bytes spill stores/ { if ($5 + 0 > 0 || $9 + 0 > 0) print "  " f ": " $0 }' "$log")
    kernels=$(grep -c 'Compiling entry function' "$log")
    if [[ -n $spills ]]; then
        echo "FAIL: $src spills at sm_$arch:" >&2
        echo "$spills" >&2
        status=1
    else
        echo "ok: $src: $kernels kernels, no spills at sm_$arch (cuDNN=$cudnn)"
    fi
done
exit $status
