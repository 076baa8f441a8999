/* FP8 quantize with amax on the device (fp8_cuda.h). Each element is
 * amp_fp8_quantize_element, the CPU's function; the amax is an atomicMax
 * of the magnitudes' bits and the counts integer atomics, so the result
 * does not depend on the launch shape or the order of the blocks. */
#include <stdio.h>

#include <cuda_runtime.h>

#include "backend/cuda/fp8_cuda.h"
#include "backend/kernels/fp8.h"
#include "backend/kernels/mx.h"

#define AMP_FP8_BLOCK 256

/* stats[0] amax bits, then saturated, flushed, nan as 64-bit counters */
struct amp_fp8_dev_stats {
    unsigned amax;
    unsigned long long count[3];
};

__global__ void amp_k_fp8_quantize(uint8_t *q, const float *x, size_t n, float scale, int fmt,
                                   amp_fp8_dev_stats *st) {
    unsigned m = 0;
    unsigned long long c[3] = {0, 0, 0};
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned f;
        float v = x[i];
        q[i] = amp_fp8_quantize_element(v, scale, fmt, &f);
        unsigned a = amp_f32_bits(v) & 0x7fffffffu;
        if (a <= 0x7f800000u && a > m) m = a;
        c[0] += (f & AMP_F8_SATURATED) != 0;
        c[1] += (f & AMP_F8_FLUSHED) != 0;
        c[2] += (f & AMP_F8_NAN) != 0;
    }
    for (int o = 16; o > 0; o >>= 1) {
        unsigned mo = __shfl_down_sync(0xffffffffu, m, o);
        m = mo > m ? mo : m;
        for (int k = 0; k < 3; k++) c[k] += __shfl_down_sync(0xffffffffu, c[k], o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMax(&st->amax, m);
        for (int k = 0; k < 3; k++)
            if (c[k]) atomicAdd(&st->count[k], c[k]);
    }
}

#define AMP_FP8_CHECK(expr)                                                              \
    do {                                                                                 \
        cudaError_t e_ = (expr);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, #expr,            \
                     cudaGetErrorString(e_));                                            \
            if (dst) cudaFree(dst);                                                      \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

extern "C" int amp_cuda_fp8_quantize(uint8_t *q, const float *x, size_t n, float scale, int fmt,
                                     amp_fp8_stats *st, char *err, size_t errlen) {
    amp_fp8_dev_stats *dst = NULL, host;
    AMP_FP8_CHECK(cudaMalloc((void **)&dst, sizeof *dst));
    AMP_FP8_CHECK(cudaMemset(dst, 0, sizeof *dst));
    if (n) {
        size_t want = (n + AMP_FP8_BLOCK - 1) / AMP_FP8_BLOCK;
        unsigned grid = (unsigned)(want < 4096 ? want : 4096);
        amp_k_fp8_quantize<<<grid, AMP_FP8_BLOCK>>>(q, x, n, scale, fmt, dst);
        AMP_FP8_CHECK(cudaGetLastError());
    }
    AMP_FP8_CHECK(cudaMemcpy(&host, dst, sizeof host, cudaMemcpyDeviceToHost));
    AMP_FP8_CHECK(cudaFree(dst));
    dst = NULL;
    st->amax = amp_f32_from_bits(host.amax);
    st->saturated = host.count[0];
    st->flushed = host.count[1];
    st->nan = host.count[2];
    return 0;
}
