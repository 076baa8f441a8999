/* What the CPU backend's CNN files (backend_cpu_cnn.c, cpu_maxpool.c,
 * cpu_batchnorm.c) share: hot loops compiled once per ISA path, and FP64
 * channel sums in 8 lanes of a fixed order. Static: each file gets its own
 * copies, so the loops inline where they are used. */
#ifndef AMP_CPU_CNN_VARIANTS_H
#define AMP_CPU_CNN_VARIANTS_H

#include "backend/cpu_kern.h"

#define QTILE 1024 /* elements per stack tile of a 16-bit round trip */

/* The hot loops (im2col rows, col2im planes, batch-norm channels, channel
 * sums) are written once as inline bodies and compiled three times: with
 * the avx512 and the avx2 path's instruction sets (function target
 * attributes) and with the baseline's; the backend's ISA path picks one.
 * They copy, add and multiply element by element, and their sums keep a
 * fixed lane order whatever the vector width, with no FMA contraction
 * (-ffp-contract=off for this file): every variant gives the same bits. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define CNN_TARGET_AVX512 \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")))
#define CNN_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define CNN_VARIANTS(name, params, args)                                   \
    CNN_TARGET_AVX512 static void name##_avx512 params { name##_body args; } \
    CNN_TARGET_AVX2 static void name##_avx2 params { name##_body args; }     \
    static void name##_generic params { name##_body args; }
#define CNN_PICK(name, lvl) \
    ((lvl) == 2 ? name##_avx512 : (lvl) == 1 ? name##_avx2 : name##_generic)
#else
#define CNN_VARIANTS(name, params, args) \
    static void name##_generic params { name##_body args; }
#define CNN_PICK(name, lvl) name##_generic
#endif
#define CNN_INLINE static inline __attribute__((always_inline))

/* 2: avx512 (and avx512_bf16), 1: avx2, 0: generic */
static inline int isa_level(const amp_cpu_kern *k) {
    return k->isa >= AMP_ISA_AVX512 ? 2 : k->isa == AMP_ISA_AVX2 ? 1 : 0;
}

/* Channel sums in FP64 as 8 partial sums by element index within each
 * image's plane (element j into lane j % 8: the loops vectorise), combined
 * in a fixed order; one channel per thread, so the result depends neither
 * on the thread count nor on the vector width. */
#define LANES 8
static inline double lanes_total(const double *l) {
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* lane[j % 8] += v[j] */
CNN_INLINE void lanes_sum_body(double *restrict lane, const float *restrict v, int n) {
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) lane[l] += v[j + l];
    for (; j < n; j++) lane[j % LANES] += v[j];
}
CNN_VARIANTS(lanes_sum, (double *restrict lane, const float *restrict v, int n), (lane, v, n))

#endif
