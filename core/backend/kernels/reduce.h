/* The fixed order in which the CUDA reductions add their per-block partials.
 *
 * A reduction kernel (loss sum, sum of squares) reduces inside each block in
 * a fixed tree, writes that block's partial to a buffer, and one thread then
 * adds the partials with this function. atomicAdd of the partials would add
 * them in whatever order the blocks finish, and floating-point addition is
 * not associative, so two runs of the same config could differ in the last
 * bits. The grid of a reduction is a function of n alone (not of the GPU's
 * multiprocessor count), so the same n gives the same bits on any GPU.
 *
 * Compiled by gcc for the CPU tests and by nvcc for the CUDA kernel, so a
 * CPU test can show which bits a given set of partials produces. */
#ifndef AMP_KERNELS_REDUCE_H
#define AMP_KERNELS_REDUCE_H

#include "backend/kernels/amp_hd.h"

/* Most blocks a reduction kernel launches: the size of the partials buffer. */
#define AMP_REDUCE_MAX_BLOCKS 1024

/* Blocks for n elements at `block` threads each: enough to cover n, at most
 * AMP_REDUCE_MAX_BLOCKS (grid-stride loops do the rest); 1 for n == 0. */
static inline AMP_HD unsigned amp_reduce_blocks(unsigned long long n, unsigned block) {
    unsigned long long want = (n + block - 1) / block;
    if (want < 1) want = 1;
    return want < AMP_REDUCE_MAX_BLOCKS ? (unsigned)want : AMP_REDUCE_MAX_BLOCKS;
}

/* p[0] + p[1] + ... + p[n-1], added strictly left to right in double. */
static inline AMP_HD double amp_sum_partials(const double *p, unsigned n) {
    double s = 0.0;
    for (unsigned i = 0; i < n; i++) s += p[i];
    return s;
}

#endif
