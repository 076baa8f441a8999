/* The CUDA FP8 quantize-with-amax (core/backend/cuda/fp8_cuda.h) against
 * the CPU scalar reference on the same inputs: codes bit for bit, amax and
 * counts equal. Random FP32 patterns and normal values, several scales,
 * both formats, lengths with partial blocks. One row per input kind and
 * format (gpu_rows.h); skips (77) without a CUDA build or a visible device,
 * saying which. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_fp8.h"
#include "backend/kernels/fp8.h"
#include "gpu_rows.h"
#if AMP_HAVE_CUDA
#include <cuda_runtime.h>

#include "backend/cuda/fp8_cuda.h"
#endif

#define N ((1 << 20) + 77)

/* Kind 0: random FP32 bit patterns; kind 1: values in [-500, 500). The
 * generator's state runs on from kind 0 into kind 1. */
static float *fp8_inputs(int kind) {
    float *x = rows_alloc(N * sizeof *x);
    uint32_t s = 7;
    for (int k = 0; k <= kind; k++)
        for (size_t i = 0; i < N; i++) {
            s = s * 1664525u + 1013904223u;
            x[i] = k ? ((float)(s >> 8) / 16777216.0f - 0.5f) * 1000.0f : amp_f32_from_bits(s);
        }
    return x;
}

/* shape: input kind, format (0 e4m3, 1 e5m2); every scale. */
static void fp8_row(const amp_gpu_row *r) {
#if AMP_HAVE_CUDA
    int kind = r->shape[0], fmt = r->shape[1];
    float *x = fp8_inputs(kind);
    uint8_t *want = rows_alloc(N), *got = rows_alloc(N);
    /* plain CUDA memory: the quantize runs on the default stream, not the backend's */
    float *dx = NULL;
    uint8_t *dq = NULL;
    if (cudaMalloc((void **)&dx, N * sizeof *x) != cudaSuccess ||
        cudaMalloc((void **)&dq, N) != cudaSuccess ||
        cudaMemcpy(dx, x, N * sizeof *x, cudaMemcpyHostToDevice) != cudaSuccess)
        amp_op_abort("cudaMalloc/cudaMemcpy of %d floats failed", N);
    const amp_cpu_fp8 *cpu = amp_cpu_fp8_generic();
    static const float scales[] = {1.0f, 3.7f, 0x1p-20f, 0x1p20f, 0.0f};
    char err[512];
    for (size_t si = 0; si < sizeof scales / sizeof *scales; si++) {
        amp_fp8_stats ref = {0, 0, 0, 0}, st;
        cpu->quantize(want, x, N, scales[si], fmt, &ref);
        if (amp_cuda_fp8_quantize(dq, dx, N, scales[si], fmt, &st, err, sizeof err))
            amp_op_abort("amp_cuda_fp8_quantize: %s", err);
        if (cudaMemcpy(got, dq, N, cudaMemcpyDeviceToHost) != cudaSuccess)
            amp_op_abort("cudaMemcpy of the codes failed");
        size_t diff = 0;
        for (size_t i = 0; i < N; i++) diff += got[i] != want[i];
        EXPECT(diff == 0 && amp_f32_bits(st.amax) == amp_f32_bits(ref.amax) &&
                   st.saturated == ref.saturated && st.flushed == ref.flushed && st.nan == ref.nan,
               "%s scale %g: %zu codes differ; amax %g/%g sat %llu/%llu flush %llu/%llu nan "
               "%llu/%llu (gpu/cpu)",
               r->name, (double)scales[si], diff, (double)st.amax, (double)ref.amax, st.saturated,
               ref.saturated, st.flushed, ref.flushed, st.nan, ref.nan);
    }
    cudaFree(dx);
    cudaFree(dq);
    free(x), free(want), free(got);
#else
    amp_op_abort("built without CUDA");
#endif
}

static const amp_gpu_row rows[] = {
    {"fp8 quantize e4m3 n1048653 random bit patterns", fp8_row, {0, 0}, .cuda_only = 1},
    {"fp8 quantize e5m2 n1048653 random bit patterns", fp8_row, {0, 1}, .cuda_only = 1},
    {"fp8 quantize e4m3 n1048653 values in [-500,500)", fp8_row, {1, 0}, .cuda_only = 1},
    {"fp8 quantize e5m2 n1048653 values in [-500,500)", fp8_row, {1, 1}, .cuda_only = 1},
};

int main(int argc, char **argv) {
    return amp_gpu_rows_main("test_gpu_fp8", argc, argv, rows, sizeof rows / sizeof rows[0], 1);
}
