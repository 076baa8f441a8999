/* Per-element FP8 (OCP E4M3FN and E5M2) <-> FP32 conversions and the
 * per-tensor scaled quantize step, shared by the CPU loops and the CUDA
 * kernels (see amp_hd.h). docs/fp8-formats.md describes the formats.
 *
 *   E4M3FN  bias 7,  max 448,   min normal 2^-6,  min subnormal 2^-9,
 *           no inf, NaN = S.1111.111 (0x7f / 0xff)
 *   E5M2    bias 15, max 57344, min normal 2^-14, min subnormal 2^-16,
 *           inf = S.11111.00, NaN = S.11111.{01,10,11}
 *
 * Casts FP32 -> FP8 saturate: a value beyond +-max (inf included) becomes
 * +-max. As Transformer Engine (PTX cvt.rn.satfinite) and torchao do, the
 * clamp comes first and the cast after it, so the result is the
 * round-to-nearest-even cast of clamp(x, -max, max): PyTorch's
 * x.clamp(-max, max).to(torch.float8_*) bit for bit (tests/test_fp8_torch.c).
 * NaN stays NaN (sign kept, payload not: 0x7f | sign, as PyTorch writes it).
 * All rounding is integer arithmetic on the bit patterns, so neither the
 * FPU's rounding mode nor flush-to-zero settings change a result.
 * Decodes are exact; a NaN decodes as PyTorch's .to(torch.float32) does. */
#ifndef AMP_KERNELS_FP8_H
#define AMP_KERNELS_FP8_H

#include <stdint.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/convert.h"

typedef enum amp_fp8_format { AMP_FP8_E4M3 = 0, AMP_FP8_E5M2 = 1 } amp_fp8_format;

#define AMP_FP8_E4M3_MAX 448.0f
#define AMP_FP8_E5M2_MAX 57344.0f
#define AMP_FP8_E4M3_MAX_BITS 0x43e00000u /* 448 as FP32 bits */
#define AMP_FP8_E5M2_MAX_BITS 0x47600000u /* 57344 */
#define AMP_FP8_NAN 0x7fu                 /* the NaN PyTorch writes (both formats) */

/* amp_fp8_quantize_element flag bits. */
#define AMP_F8_SATURATED 1u /* |x * scale| > max (inf included), not NaN: clamped */
#define AMP_F8_FLUSHED 2u   /* x nonzero and not NaN, result +-0 */
#define AMP_F8_NAN 4u       /* the result is NaN */

/* The largest finite value of fmt, as FP32 bits. */
static inline AMP_HD uint32_t amp_fp8_max_bits(int fmt) {
    return fmt == AMP_FP8_E5M2 ? AMP_FP8_E5M2_MAX_BITS : AMP_FP8_E4M3_MAX_BITS;
}

/* Round-to-nearest-even of a non-negative, non-NaN FP32 magnitude a (bits)
 * with a <= the format's max into fmt's unsigned code. m: mantissa bits (3
 * or 2), rebias: (127 - bias) << 23, sub_exp: the FP32 exponent field of
 * the smallest subnormal's half (at or below it rounds to 0). */
static inline AMP_HD uint32_t amp_fp8_round_mag(uint32_t a, uint32_t m, uint32_t rebias,
                                                uint32_t sub_exp) {
    uint32_t drop = 23u - m; /* FP32 mantissa bits dropped */
    uint32_t min_normal = rebias + (1u << 23);
    if (a >= min_normal) {
        uint32_t r = a - rebias;
        r += ((1u << drop) >> 1) - 1u + ((r >> drop) & 1u); /* RNE; a carry bumps the exponent */
        return r >> drop;
    }
    if (a <= sub_exp << 23) return 0; /* <= half the smallest subnormal: 0 (the tie goes to even 0) */
    /* Subnormal: mant * 2^(e - 150) in units of the smallest subnormal
     * 2^(sub_exp + 1 - 127): k = mant >> shift, shift in [drop - 2, 24]. */
    uint32_t e = a >> 23;
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = sub_exp + 24u - e;
    uint32_t k = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (k & 1u))) k++; /* k == 1 << m is the smallest normal */
    return k;
}

/* RNE cast of clamp(f, -max, max) into fmt (see the top of this file). */
static inline AMP_HD uint8_t amp_float_to_fp8(float f, int fmt) {
    uint32_t u = amp_f32_bits(f);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint8_t)(sign | AMP_FP8_NAN);
    uint32_t max = amp_fp8_max_bits(fmt);
    if (a > max) a = max; /* the saturating clamp, before the cast */
    uint32_t code = fmt == AMP_FP8_E5M2 ? amp_fp8_round_mag(a, 2u, 112u << 23, 110u)
                                        : amp_fp8_round_mag(a, 3u, 120u << 23, 117u);
    return (uint8_t)(sign | code);
}

static inline AMP_HD uint8_t amp_float_to_e4m3(float f) { return amp_float_to_fp8(f, AMP_FP8_E4M3); }
static inline AMP_HD uint8_t amp_float_to_e5m2(float f) { return amp_float_to_fp8(f, AMP_FP8_E5M2); }

/* Exact. NaN (S.1111.111) reads as sign | 0x7ff00000, as PyTorch's. */
static inline AMP_HD float amp_e4m3_to_float(uint8_t b) {
    uint32_t sign = (uint32_t)(b & 0x80u) << 24;
    uint32_t e = (b >> 3) & 0xfu;
    uint32_t m = b & 7u;
    if (e == 0xfu && m == 7u) return amp_f32_from_bits(sign | 0x7ff00000u);
    if (e == 0) {
        if (m == 0) return amp_f32_from_bits(sign);
        /* Subnormal m * 2^-9: normalise so the leading 1 lands on bit 3. */
        e = 1;
        while (!(m & 8u)) {
            m <<= 1;
            e--;
        }
        m &= 7u;
    }
    /* Rebias 7 -> 127; a subnormal's e wraps below 1 and the sum back. */
    return amp_f32_from_bits(sign | ((e + 120u) << 23) | (m << 20));
}

/* Exact: E5M2 is the top byte of an FP16 (NaN quieted, as PyTorch's). */
static inline AMP_HD float amp_e5m2_to_float(uint8_t b) {
    return amp_half_to_float((uint16_t)((unsigned)b << 8));
}

static inline AMP_HD float amp_fp8_to_float(uint8_t b, int fmt) {
    return fmt == AMP_FP8_E5M2 ? amp_e5m2_to_float(b) : amp_e4m3_to_float(b);
}

/* One element of the per-tensor scaled quantize q = cast(clamp(x * scale)),
 * with *flags (may be NULL) set to the AMP_F8_* bits. The product is one
 * FP32 multiply (round to nearest even; nvcc builds with --fmad=false). */
static inline AMP_HD uint8_t amp_fp8_quantize_element(float x, float scale, int fmt,
                                                      unsigned *flags) {
    float v = x * scale;
    uint8_t q = amp_float_to_fp8(v, fmt);
    if (flags) {
        uint32_t ax = amp_f32_bits(x) & 0x7fffffffu, av = amp_f32_bits(v) & 0x7fffffffu;
        unsigned fl = 0;
        if (av > 0x7f800000u)
            fl |= AMP_F8_NAN;
        else if (av > amp_fp8_max_bits(fmt))
            fl |= AMP_F8_SATURATED;
        if (ax != 0 && ax <= 0x7f800000u && (q & 0x7fu) == 0) fl |= AMP_F8_FLUSHED;
        *flags = fl;
    }
    return q;
}

/* What a quantize pass saw. amax is max |x| of the input (before the
 * scale) over the non-NaN elements, as Transformer Engine's fmaxf-based
 * amax gives it (an inf input makes it inf); NaN inputs are not in it and
 * show as nan (the product is NaN: a NaN input, or inf * 0). */
typedef struct amp_fp8_stats {
    float amax;
    unsigned long long saturated, flushed, nan;
} amp_fp8_stats;

/* dst takes src's amax (the larger) and counts (added): how the records of
 * parts of an array, or of a step's quantizes, combine. */
static inline AMP_HD void amp_fp8_stats_merge(amp_fp8_stats *dst, const amp_fp8_stats *src) {
    if (src->amax > dst->amax) dst->amax = src->amax;
    dst->saturated += src->saturated;
    dst->flushed += src->flushed;
    dst->nan += src->nan;
}

/* The inverse scale a dequantize multiplies by: float(1 / scale), as
 * Transformer Engine keeps scale_inv (its dequantize is decode(q) *
 * scale_inv; exact for the power-of-two scales of margin-based recipes). */
static inline AMP_HD float amp_fp8_inv_scale(float scale) { return 1.0f / scale; }

#endif
