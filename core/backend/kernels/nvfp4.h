/* NVFP4 (FP4 E2M1 elements, 16-element blocks with an unsigned E4M3 scale,
 * one FP32 scale per tensor), per element and per block, shared by the CPU
 * loops and the CUDA kernels (see amp_hd.h). The scale rule is Transformer
 * Engine's NVFP4BlockScaling (its quantizer reference and kernels):
 *
 *   S_enc  = min(448 * 6 / amax_tensor, FLT_MAX); 1 if amax is 0 or S_enc is 0
 *   S_dec  = 1 / S_enc
 *   s_blk  = e4m3(min(amax_block * (S_enc * fp32(1/6)), FLT_MAX))   (RNE, <= 448)
 *   enc    = min(1 / (float(s_blk) * S_dec), FLT_MAX)
 *   q_i    = e2m1(clamp(x_i * enc, -6, 6))                          (RNE)
 *   decode = (e2m1_val(q_i) * float(s_blk)) * S_dec
 *
 * amaxes ignore NaN inputs (TE's fmaxf-based amax); an inf input saturates.
 * A NaN element has no E2M1 code: it encodes as +0 and is counted. -0 keeps
 * its sign (code 0x8). E2M1 codes: sign bit 3, then e(2) m(1), bias 1:
 * 0, 0.5, 1, 1.5, 2, 3, 4, 6. All rounding is integer arithmetic on the
 * bits (amp_fp8_round_mag with one mantissa bit), as fp8.h's casts. */
#ifndef AMP_KERNELS_NVFP4_H
#define AMP_KERNELS_NVFP4_H

#include <stdint.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/fp8.h"

#define AMP_NVFP4_BLOCK 16
#define AMP_E2M1_MAX_BITS 0x40c00000u /* 6.0 */
#define AMP_F32_MAX_BITS 0x7f7fffffu

/* RNE cast of clamp(f, -6, 6) to an E2M1 code (NaN: +0). */
static inline AMP_HD uint8_t amp_float_to_e2m1(float f) {
    uint32_t u = amp_f32_bits(f);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return 0;
    if (a > AMP_E2M1_MAX_BITS) a = AMP_E2M1_MAX_BITS;
    /* one mantissa bit, bias 1: rebias 126, half the smallest subnormal 2^-2 */
    return (uint8_t)(((u >> 28) & 8u) | amp_fp8_round_mag(a, 1u, 126u << 23, 125u));
}

/* Exact. */
static inline AMP_HD float amp_e2m1_to_float(uint8_t q) {
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float v = mag[q & 7u];
    return (q & 8u) ? -v : v;
}

static inline AMP_HD float amp_f32_min_max(float v) {
    return amp_f32_bits(v) > AMP_F32_MAX_BITS ? amp_f32_from_bits(AMP_F32_MAX_BITS) : v;
}

/* S_enc from the tensor's amax (non-negative, not NaN). */
static inline AMP_HD float amp_nvfp4_tensor_scale(float amax) {
    float s = amp_f32_min_max(448.0f * 6.0f / amax);
    return (amax == 0.0f || s == 0.0f) ? 1.0f : s;
}

/* The E4M3 block scale byte of a block with amax (non-negative, not NaN). */
static inline AMP_HD uint8_t amp_nvfp4_block_scale(float amax, float s_enc) {
    return amp_float_to_e4m3(amp_f32_min_max(amax * (s_enc * (1.0f / 6.0f))));
}

/* The factor a block's elements are multiplied by before the cast. */
static inline AMP_HD float amp_nvfp4_element_factor(uint8_t s_blk, float s_dec) {
    return amp_f32_min_max(1.0f / (amp_e4m3_to_float(s_blk) * s_dec));
}

static inline AMP_HD float amp_nvfp4_decode(uint8_t q, uint8_t s_blk, float s_dec) {
    return (amp_e2m1_to_float(q) * amp_e4m3_to_float(s_blk)) * s_dec;
}

#endif
