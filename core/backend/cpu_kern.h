/* The CPU backend's element-wise kernels, one table per instruction-set
 * path (cpu_isa.h). The same source (cpu_kern_body.h) is compiled once per
 * path with that path's compiler flags; conversions and the unscale
 * reduction use intrinsics there. Every kernel gives the same bits on every
 * path: the per-element math is that of backend/kernels/ (tests/
 * test_cpu_kernels.c compares each path with the scalar functions), and the
 * one floating-point reduction (unscale's sum of squares) has a fixed lane
 * order. Kernels work on one range; backend_cpu.c splits work into chunks of
 * a size that depends on the problem only, so results do not depend on the
 * thread count either. */
#ifndef AMP_CPU_KERN_H
#define AMP_CPU_KERN_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu_isa.h"

/* What rounding lost, as in amp_round_count. */
typedef struct amp_tally {
    unsigned long long nz, uf, of;
} amp_tally;

/* Partial result of unscale over one chunk: element i of the chunk adds its
 * square to lane[i % 8]; the caller combines the lanes in a fixed order. */
typedef struct amp_unscale_acc {
    unsigned long long bad; /* inf/NaN elements */
    double lane[8];
    float maxabs;
} amp_unscale_acc;

typedef struct amp_cpu_kern {
    amp_isa isa;
    /* dst(dt)[n] = amp_round16(src[n]); tallies the flags into t unless NULL */
    void (*round16)(uint16_t *dst, const float *src, size_t n, int dt, amp_tally *t);
    /* dst[n] = amp_widen16(src(dt)[n]) */
    void (*widen16)(float *dst, const uint16_t *src, size_t n, int dt);
    /* both at once: dst(dt)[n] = round(src), wide[n] = widen(dst); wide may be src */
    void (*round16_wide)(uint16_t *dst, float *wide, const float *src, size_t n, int dt,
                         amp_tally *t);
    /* wide[n] = widen(round(src)), counted; wide may be src (amp_quantize per element) */
    void (*quantize16)(float *wide, const float *src, size_t n, int dt, amp_tally *t);
    void (*add)(float *y, const float *a, const float *b, size_t n);    /* y = a + b */
    void (*act)(float *y, const float *x, size_t n, int act);           /* y = act(x) */
    void (*act_grad_mul)(float *y, const float *da, const float *z, size_t n, int act); /* da * act'(z) */
    /* y[n] = expf(x[n]) with libm's bits (y may equal x) */
    void (*vexp)(float *y, const float *x, size_t n);
    /* dst = dst + q, a NaN q winning whatever dst is (backend_cpu.c: accumulate_add) */
    void (*acc_add)(float *dst, const float *q, size_t n);
    /* out[j] = sum over r < rows of in[r * ld + j], in row order, for j < cols */
    void (*col_sum)(float *out, const float *in, size_t rows, size_t cols, size_t ld);
    /* amp_unscale_element over g[n] into acc (lanes as above) */
    void (*unscale)(float *g, size_t n, float inv_scale, amp_unscale_acc *acc);
    void (*sgd)(float *w, float *mom, const float *g, size_t n, float lr, float momentum,
                float wd);
    void (*adamw)(float *w, float *m, float *v, const float *g, size_t n, float lr, float beta1,
                  float beta2, float eps, float wd, float bc1, float bc2_sqrt);
    void (*scale)(float *x, size_t n, float s); /* x *= s */
} amp_cpu_kern;

/* The table of a path, or NULL when this build has no code for it (a
 * compiler without the flags). avx512_bf16 uses the avx512 table. */
const amp_cpu_kern *amp_cpu_kern_for(amp_isa isa);

/* One per translation unit (cpu_kern_generic.c, _avx2.c, _avx512.c). */
const amp_cpu_kern *amp_cpu_kern_generic(void);
const amp_cpu_kern *amp_cpu_kern_avx2(void);
const amp_cpu_kern *amp_cpu_kern_avx512(void);

#endif
