/* Warp-level building blocks of the row kernels (one warp per row): a
 * butterfly sum, whose result every lane gets with the same bits (each
 * level adds the same two values, a + b == b + a), and the round-count
 * flush done once per warp. Every call needs all 32 lanes of the warp
 * present: the callers retire whole warps only. C++ (nvcc) only. */
#ifndef AMP_CUDA_WARP_CUH
#define AMP_CUDA_WARP_CUH

#include "backend/backend.h"
#include "backend/kernels/store.h"

#define AMP_WARP 32
#define AMP_FULL_MASK 0xffffffffu

__device__ static inline float amp_warp_sum(float v) {
    for (int m = AMP_WARP / 2; m > 0; m >>= 1) v += __shfl_xor_sync(AMP_FULL_MASK, v, m);
    return v;
}

__device__ static inline float amp_warp_max(float v) {
    for (int m = AMP_WARP / 2; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(AMP_FULL_MASK, v, m));
    return v;
}

__device__ static inline unsigned long long amp_warp_sum_u64(unsigned long long v) {
    for (int m = AMP_WARP / 2; m > 0; m >>= 1) v += __shfl_xor_sync(AMP_FULL_MASK, v, m);
    return v;
}

/* Adds the warp's tallies to *cnt from lane 0 (integers: order-free). */
__device__ static inline void amp_warp_flush(amp_round_count *cnt, amp_round_tally t) {
    unsigned long long nz = amp_warp_sum_u64(t.nz), uf = amp_warp_sum_u64(t.uf),
                       of = amp_warp_sum_u64(t.of);
    if (!cnt || (threadIdx.x & (AMP_WARP - 1)) != 0) return;
    if (nz) atomicAdd(&cnt->nonzero, nz);
    if (uf) atomicAdd(&cnt->underflow, uf);
    if (of) atomicAdd(&cnt->overflow, of);
}

#endif
