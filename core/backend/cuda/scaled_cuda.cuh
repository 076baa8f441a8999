/* What the CUDA "scaled" family's kernels share (scaled_cuda.cu for FP8
 * and MX32, nvfp4_cuda.cu for NVFP4): the per-thread counts reduced over a
 * warp into a stats record with atomics, the grid-stride loop and the grid
 * size. C++ (nvcc) only. */
#ifndef AMP_SCALED_CUDA_CUH
#define AMP_SCALED_CUDA_CUH

#include <stddef.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/kernels/fp8.h"

#define AMP_FP8_THREADS 256

/* The record's amax as the unsigned its bits are (amp_fp8_stats.amax is a
 * float >= 0 or +inf; the integer max of such bits is their float max). */
static inline __device__ unsigned *amp_fp8_amax_bits(amp_fp8_stats *st) {
    return reinterpret_cast<unsigned *>(&st->amax);
}

/* One thread's share of a pass, reduced over its warp and added to st by
 * lane 0. Every lane of the warp must call flush. */
struct amp_fp8_counts {
    unsigned amax;
    unsigned long long sat, flush_, nan;
    __device__ void add(float x, unsigned f) {
        unsigned a = amp_f32_bits(x) & 0x7fffffffu;
        if (a <= 0x7f800000u && a > amax) amax = a; /* NaN inputs are not in the amax */
        add_flags(f);
    }
    __device__ void add_flags(unsigned f) {
        sat += (f & AMP_F8_SATURATED) != 0;
        flush_ += (f & AMP_F8_FLUSHED) != 0;
        nan += (f & AMP_F8_NAN) != 0;
    }
    __device__ void flush(amp_fp8_stats *st, int with_amax) {
        for (int o = 16; o > 0; o >>= 1) {
            unsigned m = __shfl_down_sync(0xffffffffu, amax, o);
            amax = m > amax ? m : amax;
            sat += __shfl_down_sync(0xffffffffu, sat, o);
            flush_ += __shfl_down_sync(0xffffffffu, flush_, o);
            nan += __shfl_down_sync(0xffffffffu, nan, o);
        }
        if ((threadIdx.x & 31) != 0 || !st) return;
        if (with_amax && amax) atomicMax(amp_fp8_amax_bits(st), amax);
        if (sat) atomicAdd(&st->saturated, sat);
        if (flush_) atomicAdd(&st->flushed, flush_);
        if (nan) atomicAdd(&st->nan, nan);
    }
};

/* Grid-stride loops over n elements; the bound is the same for every lane
 * of a warp at the flush (the loop ends before it). */
#define AMP_FP8_LOOP(i, n)                                                                         \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                        \
         i += (size_t)gridDim.x * blockDim.x)

/* Blocks for `items` work items of `per_block` each, capped at 8 per SM
 * (grid-stride loops do the rest; the cap bounds the atomics). items > 0. */
static inline unsigned fp8_grid(amp_backend *be, size_t items, size_t per_block) {
    size_t want = (items + per_block - 1) / per_block;
    size_t cap = (size_t)amp_cuda_im(be)->sm_count * 8;
    if (cap < 1) cap = 1;
    return (unsigned)(want < cap ? want : cap);
}

#endif
