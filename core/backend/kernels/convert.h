/* Per-element FP16 / BF16 <-> FP32 conversions and the rounding telemetry,
 * shared by the CPU loops and the CUDA kernels (see amp_hd.h).
 *
 * All rounding is to nearest, ties to even, done on the bit patterns with
 * integer arithmetic only, so the result does not depend on the FPU's
 * rounding mode or on flush-to-zero settings (nvcc -ftz, MXCSR DAZ/FTZ).
 * Bit-exact reference behaviour (tests/test_convert.c checks it):
 *   amp_half_to_float  == x86 F16C vcvtph2ps (signalling NaNs are quieted)
 *   amp_float_to_half  == x86 F16C vcvtps2ph with imm8 = 0 (RNE)
 *   amp_float_to_bf16  == AVX512-BF16 vcvtneps2bf16 for every input except
 *                         FP32 denormals, which that instruction treats as 0;
 *                         here they round correctly to BF16 subnormals.
 */
#ifndef AMP_KERNELS_CONVERT_H
#define AMP_KERNELS_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "backend/kernels/amp_hd.h"
#include "amptrain/plugin.h"

/* amp_round16 flag bits. */
#define AMP_RF_NONZERO 1u   /* x != 0 (NaN counts as nonzero) */
#define AMP_RF_UNDERFLOW 2u /* x finite and nonzero, result +-0 */
#define AMP_RF_OVERFLOW 4u  /* x finite, result +-inf */

static inline AMP_HD uint32_t amp_f32_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

static inline AMP_HD float amp_f32_from_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/* Exact. NaN keeps sign and payload, with the quiet bit set. */
static inline AMP_HD float amp_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0x1fu) /* inf, or NaN quieted like vcvtph2ps */
        return amp_f32_from_bits(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
    if (e == 0) {
        if (m == 0) return amp_f32_from_bits(sign);
        /* Subnormal: normalise so the leading 1 lands on bit 10. */
        e = 1;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        m &= 0x3ffu;
    }
    /* Rebias 15 -> 127. A subnormal leaves e at 1 - shifts (wrapped as
     * unsigned); the sum wraps back into [103, 112]. */
    return amp_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

static inline AMP_HD uint16_t amp_float_to_half(float f) {
    uint32_t u = amp_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) {
        /* inf; NaN keeps the top 10 payload bits and is quieted. */
        if (a == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    }
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (a >= 0x38800000u) {                                  /* >= 2^-14: normal half */
        uint32_t r = a - 0x38000000u;                        /* rebias 127 -> 15 */
        r += 0xfffu + ((r >> 13) & 1u);                      /* RNE on the 13 dropped bits */
        return (uint16_t)(sign | (r >> 13));                 /* a carry bumps the exponent */
    }
    if (a <= 0x33000000u) return sign; /* <= 2^-25: zero (2^-25 ties to even 0) */
    /* Subnormal half: units of 2^-24. mant * 2^(e-150) = k * 2^-24 with
     * k = mant >> (126 - e); shift is in [14, 24]. */
    uint32_t e = a >> 23;
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;
    uint32_t k = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (k & 1u))) k++; /* k == 0x400 is the smallest normal */
    return (uint16_t)(sign | k);
}

/* Exact: BF16 is the top half of an FP32. NaN payloads pass unchanged. */
static inline AMP_HD float amp_bf16_to_float(uint16_t b) {
    return amp_f32_from_bits((uint32_t)b << 16);
}

static inline AMP_HD uint16_t amp_float_to_bf16(float f) {
    uint32_t u = amp_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    /* RNE on the low 16 bits; a carry into the exponent gives the next
     * binade or inf, which is the correctly rounded result. */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Rounds x into dt (AMP_DTYPE_BF16; anything else means AMP_DTYPE_F16) and
 * sets *flags (may be NULL) to the AMP_RF_* bits describing what was lost. */
static inline AMP_HD uint16_t amp_round16(float x, int dt, unsigned *flags) {
    int bf = dt == AMP_DTYPE_BF16;
    uint16_t r = bf ? amp_float_to_bf16(x) : amp_float_to_half(x);
    if (flags) {
        uint32_t a = amp_f32_bits(x) & 0x7fffffffu;
        uint32_t ra = r & 0x7fffu;
        unsigned fl = a != 0 ? AMP_RF_NONZERO : 0u;
        if (a != 0 && a < 0x7f800000u) {
            if (ra == 0) fl |= AMP_RF_UNDERFLOW;
            if (ra == (bf ? 0x7f80u : 0x7c00u)) fl |= AMP_RF_OVERFLOW;
        }
        *flags = fl;
    }
    return r;
}

/* Exact widening of a dt value (AMP_DTYPE_BF16; anything else means F16). */
static inline AMP_HD float amp_widen16(uint16_t v, int dt) {
    return dt == AMP_DTYPE_BF16 ? amp_bf16_to_float(v) : amp_half_to_float(v);
}

/* x rounded through dt and back: what a value stored in dt reads as.
 * AMP_DTYPE_F32 returns x unchanged with flags 0. flags may be NULL. */
static inline AMP_HD float amp_quantize(float x, int dt, unsigned *flags) {
    if (dt == AMP_DTYPE_F32) {
        if (flags) *flags = 0;
        return x;
    }
    return amp_widen16(amp_round16(x, dt, flags), dt);
}

#endif
