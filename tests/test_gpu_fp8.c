/* The CUDA FP8 quantize-with-amax (core/backend/cuda/fp8_cuda.h) against
 * the CPU scalar reference on the same inputs: codes bit for bit, amax and
 * counts equal. Random FP32 patterns and normal values, several scales,
 * both formats, lengths with partial blocks. Skips (77) without a CUDA
 * build or a visible device, saying which. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_fp8.h"
#include "backend/kernels/fp8.h"
#if AMP_HAVE_CUDA
#include <cuda_runtime.h>

#include "backend/cuda/fp8_cuda.h"
#endif

int main(void) {
#if !AMP_HAVE_CUDA
    printf("built without CUDA: skipped\n");
    return 77;
#else
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        printf("no CUDA device visible (%s): skipped\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    enum { N = (1 << 20) + 77 };
    float *x = malloc(N * sizeof *x), *dx;
    uint8_t *want = malloc(N), *got = malloc(N), *dq;
    if (!x || !want || !got || cudaMalloc((void **)&dx, N * sizeof *x) != cudaSuccess ||
        cudaMalloc((void **)&dq, N) != cudaSuccess) {
        fprintf(stderr, "test_gpu_fp8: out of memory\n");
        return 1;
    }
    const amp_cpu_fp8 *cpu = amp_cpu_fp8_generic();
    const float scales[] = {1.0f, 3.7f, 0x1p-20f, 0x1p20f, 0.0f};
    uint32_t s = 7;
    unsigned long long bad = 0;
    char err[512];
    for (int kind = 0; kind < 2; kind++) {
        for (size_t i = 0; i < N; i++) {
            s = s * 1664525u + 1013904223u;
            x[i] = kind ? ((float)(s >> 8) / 16777216.0f - 0.5f) * 1000.0f : amp_f32_from_bits(s);
        }
        if (cudaMemcpy(dx, x, N * sizeof *x, cudaMemcpyHostToDevice) != cudaSuccess) return 1;
        for (size_t si = 0; si < sizeof scales / sizeof *scales; si++)
            for (int fmt = 0; fmt < 2; fmt++) {
                amp_fp8_stats ref = {0, 0, 0, 0}, st;
                cpu->quantize(want, x, N, scales[si], fmt, &ref);
                if (amp_cuda_fp8_quantize(dq, dx, N, scales[si], fmt, &st, err, sizeof err)) {
                    fprintf(stderr, "test_gpu_fp8: %s\n", err);
                    return 1;
                }
                if (cudaMemcpy(got, dq, N, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
                size_t diff = 0;
                for (size_t i = 0; i < N; i++) diff += got[i] != want[i];
                int stats_ok = amp_f32_bits(st.amax) == amp_f32_bits(ref.amax) &&
                               st.saturated == ref.saturated && st.flushed == ref.flushed &&
                               st.nan == ref.nan;
                if (diff || !stats_ok) {
                    bad++;
                    fprintf(stderr,
                            "MISMATCH %s scale %g inputs %d: %zu codes differ; amax %g/%g sat "
                            "%llu/%llu flush %llu/%llu nan %llu/%llu (gpu/cpu)\n",
                            fmt ? "e5m2" : "e4m3", (double)scales[si], kind, diff, (double)st.amax,
                            (double)ref.amax, st.saturated, ref.saturated, st.flushed, ref.flushed,
                            st.nan, ref.nan);
                }
            }
    }
    printf("GPU FP8 quantize vs CPU: %llu mismatching runs of 20\n", bad);
    return bad ? 1 : 0;
#endif
}
