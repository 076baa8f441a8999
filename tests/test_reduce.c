/* The fixed order of the CUDA reductions (core/backend/kernels/reduce.h),
 * run on the CPU: the same partials always give the same bits, those of a
 * plain left-to-right sum, while another order (as atomicAdd of the partials
 * in block-finishing order would give) changes the bits. The grid size of a
 * reduction depends on n alone. test_gpu_kernels shows the device's kernel
 * gives these very bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernels/reduce.h"
#include "util/rng.h"
#include "expect.h"

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static void fill(amp_rng *r, double *p, unsigned n) {
    /* Mixed signs and 2^-40..2^40 magnitudes: the sum depends on the order. */
    for (unsigned i = 0; i < n; i++)
        p[i] = ldexp(2.0 * amp_rng_uniform(r) - 1.0, (int)amp_rng_below(r, 80) - 40);
}

/* amp_sum_partials is the left-to-right sum, bit for bit, at every size. */
static void test_left_to_right(amp_rng *r, double *p) {
    static const unsigned sizes[] = {0, 1, 2, 3, 8, 31, 255, 256, 1000, AMP_REDUCE_MAX_BLOCKS};
    int ok = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned n = sizes[k];
        fill(r, p, n);
        double want = 0.0;
        for (unsigned i = 0; i < n; i++) want = want + p[i];
        double got = amp_sum_partials(p, n);
        EXPECT(same_bits(got, want), "n %u: amp_sum_partials %.17g, left to right %.17g", n, got,
               want);
        /* The same partials again: the same bits (nothing hides in state). */
        EXPECT(same_bits(amp_sum_partials(p, n), got), "n %u: a second call differs", n);
        ok += same_bits(got, want);
    }
    printf("ok  amp_sum_partials is the left-to-right sum at %d sizes\n", ok);
}

/* Another order of the same partials changes the bits: what a fixed order
 * protects against. Shuffles stand for the orders in which blocks finish. */
static void test_order_matters(amp_rng *r, double *p) {
    const unsigned n = 264; /* the partials of an 8-blocks-per-SM grid on 33 SMs */
    fill(r, p, n);
    double fixed = amp_sum_partials(p, n);
    double *q = malloc(n * sizeof *q);
    int differ = 0;
    const int trials = 100;
    for (int t = 0; t < trials; t++) {
        memcpy(q, p, n * sizeof *q);
        for (unsigned i = n - 1; i > 0; i--) { /* Fisher-Yates */
            unsigned j = (unsigned)amp_rng_below(r, (uint64_t)i + 1);
            double tmp = q[i];
            q[i] = q[j];
            q[j] = tmp;
        }
        double s = 0.0;
        for (unsigned i = 0; i < n; i++) s += q[i];
        differ += !same_bits(s, fixed);
    }
    EXPECT(differ > trials / 2, "only %d of %d shuffled orders changed the sum", differ, trials);
    /* A small case by hand: (1e16 + 1) - 1e16 + 1 = 1 left to right
     * (1e16 + 1 rounds to 1e16), but 0 right to left. */
    const double hand[] = {1e16, 1.0, -1e16, 1.0};
    EXPECT(amp_sum_partials(hand, 4) == 1.0, "left to right gave %.17g, expected 1",
           amp_sum_partials(hand, 4));
    EXPECT(((1.0 + -1e16) + 1.0) + 1e16 == 0.0, "right to left should give 0");
    printf("ok  %d of %d other orders of %u partials give other bits; the fixed order gives "
           "%.17g every time\n", differ, trials, n, fixed);
    free(q);
}

/* The grid of a reduction is a function of n only, capped at the partials
 * buffer, so the same n gives the same bits on any GPU. */
static void test_blocks(void) {
    EXPECT(amp_reduce_blocks(0, 256) == 1, "n 0: %u blocks", amp_reduce_blocks(0, 256));
    EXPECT(amp_reduce_blocks(1, 256) == 1, "n 1: %u blocks", amp_reduce_blocks(1, 256));
    EXPECT(amp_reduce_blocks(256, 256) == 1, "n 256: %u", amp_reduce_blocks(256, 256));
    EXPECT(amp_reduce_blocks(257, 256) == 2, "n 257: %u", amp_reduce_blocks(257, 256));
    EXPECT(amp_reduce_blocks(256ull * AMP_REDUCE_MAX_BLOCKS, 256) == AMP_REDUCE_MAX_BLOCKS,
           "n 256*max: %u", amp_reduce_blocks(256ull * AMP_REDUCE_MAX_BLOCKS, 256));
    EXPECT(amp_reduce_blocks(1ull << 40, 256) == AMP_REDUCE_MAX_BLOCKS, "n 2^40: %u",
           amp_reduce_blocks(1ull << 40, 256));
    printf("ok  reduction grids: 1 to %d blocks, from n alone\n", AMP_REDUCE_MAX_BLOCKS);
}

int main(void) {
    amp_rng r;
    amp_rng_seed(&r, 16);
    double *p = malloc(AMP_REDUCE_MAX_BLOCKS * sizeof *p);
    if (!p) return 1;
    test_left_to_right(&r, p);
    test_order_matters(&r, p);
    test_blocks();
    free(p);
    if (amp_test_failures) {
        fprintf(stderr, "%d check(s) failed\n", amp_test_failures);
        return 1;
    }
    printf("all reduction-order checks passed\n");
    return 0;
}
