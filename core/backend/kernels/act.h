/* Activation functions and their derivatives, per element, shared by the
 * CPU loops and the CUDA kernels. GELU is the exact erf form, PyTorch's
 * default (approximate='none'); GELU_TANH is the tanh form GPT-2 uses
 * (approximate='tanh'), written as PyTorch's GeluKernel.cpp writes it. */
#ifndef AMP_KERNELS_ACT_H
#define AMP_KERNELS_ACT_H

#include <math.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/convert.h"

#define AMP_INV_SQRT2 0.70710678118654752440f
#define AMP_INV_SQRT2PI 0.39894228040143267794f

static inline AMP_HD float amp_relu(float x) { return x > 0.0f ? x : 0.0f; }

/* d relu / dx at x; 0 at x == 0 like PyTorch's threshold_backward. */
static inline AMP_HD float amp_relu_grad(float x) { return x > 0.0f ? 1.0f : 0.0f; }

/* erf in float, amptrain's own rather than libm's erff, so the CPU's
 * vector kernels can run the same operations per lane (and the exp part
 * through vexp, expf's bits) and CUDA does too; plain multiplies and adds,
 * no fma (the kernels build with -ffp-contract=off, CUDA with --fmad=false;
 * the generic x86-64 path has no fma instruction). With t = |a|:
 *   t < 1:  erf = t + t q(t^2)       (q: erf(t)/t - 1, degree 6)
 *   t >= 1: erf = 1 - e^r(min(t, 4)) (r: log erfc(t) on [1, 4], degree 6;
 *           erfc(4) < 2^-25, so the clamp gives 1.0f exactly there)
 * and the sign of a (+-0 stays +-0, +-inf gives +-1, NaN stays NaN).
 * Coefficients: discrete minimax fits (relative in erf(t)/t, absolute in
 * erfc). Max error over every float below 4.5: 1.32 ulp against
 * double-precision erf (tests/test_cpu_kernels.c sweeps and bounds it). */
#define AMP_ERF_SPLIT 1.0f
#define AMP_ERF_CLAMP 4.0f

/* the argument of expf: r(min(|a|, 4)) */
static inline AMP_HD float amp_erf_exp_arg(float a) {
    float t = fabsf(a);
    t = t > AMP_ERF_CLAMP ? AMP_ERF_CLAMP : t; /* NaN stays NaN */
    float r = 0x1.852dbap-13f;
    r = r * t + -0x1.814d2p-9f;
    r = r * t + 0x1.654244p-6f;
    r = r * t + -0x1.a60a94p-4f;
    r = r * t + -0x1.46c582p-1f;
    r = r * t + -0x1.2085b2p+0f;
    return r * t + -0x1.72e3cep-12f;
}

/* erf(a) from a and e = expf(amp_erf_exp_arg(a)) */
static inline AMP_HD float amp_erf_from_exp(float a, float e) {
    float t = fabsf(a), s = t * t;
    float q = 0x1.496a3p-14f;
    q = q * s + -0x1.a3f7p-11f;
    q = q * s + 0x1.5405b2p-8f;
    q = q * s + -0x1.b7f90ep-6f;
    q = q * s + 0x1.ce2cf8p-4f;
    q = q * s + -0x1.81273ep-2f;
    q = q * s + 0x1.06eba8p-3f;
    float v = t < AMP_ERF_SPLIT ? t + t * q : 1.0f - e;
    return copysignf(v, a);
}

static inline AMP_HD float amp_erf(float a) { return amp_erf_from_exp(a, expf(amp_erf_exp_arg(a))); }

/* GELU = 0.5 x (1 + erf(x / sqrt 2)), split like the tanh form below: the
 * argument of expf, then the value from x and expf of it. */
static inline AMP_HD float amp_gelu_arg(float x) { return amp_erf_exp_arg(x * AMP_INV_SQRT2); }

static inline AMP_HD float amp_gelu_from_exp(float x, float e) {
    return 0.5f * x * (1.0f + amp_erf_from_exp(x * AMP_INV_SQRT2, e));
}

static inline AMP_HD float amp_gelu(float x) { return amp_gelu_from_exp(x, expf(amp_gelu_arg(x))); }

/* The derivative Phi(x) + x phi(x) takes a second expf, of -x^2/2 (phi's);
 * e is expf(amp_gelu_arg(x)), p expf(amp_gelu_grad_pdf_arg(x)). */
static inline AMP_HD float amp_gelu_grad_pdf_arg(float x) { return -0.5f * x * x; }

static inline AMP_HD float amp_gelu_grad_from_exp(float x, float e, float p) {
    float cdf = 0.5f * (1.0f + amp_erf_from_exp(x * AMP_INV_SQRT2, e));
    float pdf = AMP_INV_SQRT2PI * p;
    /* phi underflowed (|x| >= ~14, x possibly inf): the second term is 0,
     * not inf * 0, so the derivative is 1 at +inf and 0 at -inf as in the
     * tanh form; zeroed through its bits so the loops vectorise */
    uint32_t keep = pdf == 0.0f ? 0u : 0xffffffffu;
    return cdf + amp_f32_from_bits(amp_f32_bits(x * pdf) & keep);
}

static inline AMP_HD float amp_gelu_grad(float x) {
    return amp_gelu_grad_from_exp(x, expf(amp_gelu_arg(x)), expf(amp_gelu_grad_pdf_arg(x)));
}

#define AMP_GELU_TANH_BETA 0.79788456080286535588f /* sqrt(2/pi) */
#define AMP_GELU_TANH_KAPPA 0.044715f

/* tanh(u) = 1 - 2/(e^(2u) + 1) through expf: several times cheaper than
 * libm's tanhf (an expm1f) and within ~1e-7 absolute of it, which is all
 * GELU needs (it uses 1 + tanh and 1 - tanh^2); saturates to +-1 without
 * overflow (e^(2u) = inf gives 1, e^(2u) = 0 gives -1). Split into the
 * exponent's argument, expf, and the rest, so the CPU's vector kernels can
 * run expf over a tile in between and give the same bits. */
static inline AMP_HD float amp_tanh_from_exp(float e2u) { return 1.0f - 2.0f / (e2u + 1.0f); }
static inline AMP_HD float amp_tanh_fast(float u) { return amp_tanh_from_exp(expf(2.0f * u)); }

/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the argument of expf,
 * then the value from x and expf of it. */
static inline AMP_HD float amp_gelu_tanh_arg(float x) {
    float inner = AMP_GELU_TANH_BETA * (x + AMP_GELU_TANH_KAPPA * x * x * x);
    return 2.0f * inner;
}

static inline AMP_HD float amp_gelu_tanh_from_exp(float x, float e) {
    return 0.5f * x * (1.0f + amp_tanh_from_exp(e));
}

static inline AMP_HD float amp_gelu_tanh(float x) {
    return amp_gelu_tanh_from_exp(x, expf(amp_gelu_tanh_arg(x)));
}

/* The derivative, split the same way (its argument rounds x^3 as x_sq * x,
 * as PyTorch's backward writes it, so it is not the forward's). */
static inline AMP_HD float amp_gelu_tanh_grad_arg(float x) {
    float x_sq = x * x;
    float inner = AMP_GELU_TANH_BETA * (x + AMP_GELU_TANH_KAPPA * x_sq * x);
    return 2.0f * inner;
}

static inline AMP_HD float amp_gelu_tanh_grad_from_exp(float x, float e) {
    float x_sq = x * x;
    float t = amp_tanh_from_exp(e);
    float left = 0.5f * x, right = 1.0f + t;
    float left_derivative = 0.5f * right;
    float sech2 = 1.0f - t * t;
    float right_derivative =
        left * sech2 * AMP_GELU_TANH_BETA * (1.0f + 3.0f * AMP_GELU_TANH_KAPPA * x_sq);
    /* saturated (|x| large, x^2 possibly inf): the second term is 0, not
     * 0 * inf; the derivative is 1 for x -> +inf and 0 for x -> -inf.
     * Adding +0.0f there returns left_derivative itself (never -0: it is
     * 0.5 (1 + t) with t >= -1). The second term is zeroed through its bits
     * (an integer select, not a branch around float arithmetic), so the CPU
     * loops vectorise on AVX2 too. */
    uint32_t keep = sech2 == 0.0f ? 0u : 0xffffffffu;
    return left_derivative + amp_f32_from_bits(amp_f32_bits(right_derivative) & keep);
}

static inline AMP_HD float amp_gelu_tanh_grad(float x) {
    return amp_gelu_tanh_grad_from_exp(x, expf(amp_gelu_tanh_grad_arg(x)));
}

/* act: 0 none, 1 relu, 2 gelu, 3 gelu_tanh (amp_act values). */
static inline AMP_HD float amp_act_apply(float x, int act) {
    return act == 1 ? amp_relu(x) : act == 2 ? amp_gelu(x) : act == 3 ? amp_gelu_tanh(x) : x;
}

static inline AMP_HD float amp_act_grad(float x, int act) {
    return act == 1   ? amp_relu_grad(x)
           : act == 2 ? amp_gelu_grad(x)
           : act == 3 ? amp_gelu_tanh_grad(x)
                      : 1.0f;
}

#endif
