/* MXFP8 block scaling (OCP Microscaling Formats v1.0, section 6.3), per
 * block, shared by the CPU loops and the CUDA kernels (see amp_hd.h).
 *
 * A block is 32 consecutive values along a row. Its shared scale is an
 * E8M0 byte (2^(byte - 127); 0xff = NaN) and its elements are FP8 (fp8.h):
 *
 *   X = 2^(floor(log2(amax)) - emax_elem)   emax_elem = 8 (E4M3), 15 (E5M2)
 *   P_i = cast(clamp(V_i / X, -max, max))   round to nearest even
 *
 * The scale rounds DOWN (floor of log2 amax; torchao's
 * ScaleCalculationMode.FLOOR, its default, and the spec's algorithm), not
 * NVIDIA's RCEIL: floor keeps the largest element in the top binade
 * [2^emax, 2^(emax+1)), using every bit of precision, at the cost that
 * amax / X may pass the element max (E4M3: up to 512 > 448) and saturate;
 * the spec accepts that ("clamping normal numbers").
 *
 * floor(log2(amax)) is the FP32 exponent field of amax less 127, read off
 * the bits as torchao does, with its edge cases:
 *   - amax 0 (an all-zero block), an FP32 subnormal, or any amax whose
 *     exponent would fall below -127: the exponent is clamped to -127,
 *     byte 0x00; an all-zero block so encodes as scale 2^-127 and +-0
 *     elements (the spec's algorithm takes log2(0) undefined; torchao and
 *     the spec authors' microxcaling library clamp the same way);
 *   - amax NaN: byte 0xff (NaN); the spec says every element of such a
 *     block reads as NaN whatever its bits;
 *   - amax inf: exponent field 255 -> 128 - emax_elem (byte 247 / 240),
 *     the inf element saturating to +-max, as torchao gives.
 * One choice differs from torchao: elements are V_i / 2^(byte - 127)
 * exactly, also for byte 0. torchao divides those blocks by 2^-126 (it
 * clamps the FP32 scale to the smallest normal, and its comment says
 * 2^-127 would be more correct), so a block with 0 < amax < 2^(emax - 126)
 * would decode to half its values. tests/test_mx_torchao.c says where. */
#ifndef AMP_KERNELS_MX_H
#define AMP_KERNELS_MX_H

#include <stddef.h>
#include <stdint.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/fp8.h"

#define AMP_MX_BLOCK 32
#define AMP_MX_SCALE_NAN 0xffu

/* Exponent of the format's largest power of two (emax_elem). */
static inline AMP_HD int amp_mx_emax(int fmt) { return fmt == AMP_FP8_E5M2 ? 15 : 8; }

/* The E8M0 scale byte of a block whose max |V_i| has FP32 bits amax_bits
 * (sign clear; NaN when any element is NaN). */
static inline AMP_HD uint8_t amp_mx_scale_e8m0(uint32_t amax_bits, int fmt) {
    if (amax_bits > 0x7f800000u) return (uint8_t)AMP_MX_SCALE_NAN;
    int e = (int)(amax_bits >> 23) - 127 - amp_mx_emax(fmt);
    if (e < -127) e = -127; /* 0, subnormal and tiny amax */
    return (uint8_t)(e + 127); /* at most 128 - 8 + 127 = 247: never 0xff */
}

/* The FP32 factor the elements of a block with scale byte s are multiplied
 * by: 2^(127 - s), exact (s <= 247 so it is a normal FP32). A NaN scale
 * gives 0: the spec leaves those elements free, and x * 0 writes what
 * torchao's x / +inf does (+-0; NaN for NaN and inf inputs). */
static inline AMP_HD float amp_mx_element_factor(uint8_t s) {
    if (s == AMP_MX_SCALE_NAN) return 0.0f;
    return amp_f32_from_bits((uint32_t)(254u - s) << 23);
}

/* The value of a scale byte: 2^(s - 127) (s = 0 is the subnormal 2^-127),
 * NaN for 0xff. */
static inline AMP_HD float amp_mx_scale_to_float(uint8_t s) {
    if (s == AMP_MX_SCALE_NAN) return amp_f32_from_bits(0x7fc00000u);
    if (s == 0) return amp_f32_from_bits(0x00400000u);
    return amp_f32_from_bits((uint32_t)s << 23);
}

/* Max |V_i| of n values as FP32 bits: NaN (0x7fc00000) if any is NaN, as
 * torch.amax propagates it; otherwise the integer max of the magnitudes,
 * which orders non-NaN floats as their values do. */
static inline AMP_HD uint32_t amp_mx_amax_bits(const float *v, int n) {
    uint32_t m = 0;
    for (int i = 0; i < n; i++) {
        uint32_t a = amp_f32_bits(v[i]) & 0x7fffffffu;
        if (a > 0x7f800000u) return 0x7fc00000u;
        if (a > m) m = a;
    }
    return m;
}

/* One block: *scale and elem[n] (n <= AMP_MX_BLOCK; a short last block of
 * a row scales over the values it has). */
static inline AMP_HD void amp_mx_quantize_block(uint8_t *elem, uint8_t *scale, const float *v,
                                                int n, int fmt) {
    uint8_t s = amp_mx_scale_e8m0(amp_mx_amax_bits(v, n), fmt);
    float f = amp_mx_element_factor(s);
    *scale = s;
    for (int i = 0; i < n; i++) elem[i] = amp_float_to_fp8(v[i] * f, fmt);
}

/* Decode of one element of a block with scale byte s: exact for every
 * finite result (the product of two powers-of-two-scaled values), NaN for
 * a NaN scale or element. */
static inline AMP_HD float amp_mx_dequantize_element(uint8_t q, uint8_t s, int fmt) {
    if (s == AMP_MX_SCALE_NAN) return amp_f32_from_bits(0x7fc00000u);
    return amp_fp8_to_float(q, fmt) * amp_mx_scale_to_float(s);
}

/* The geometry of an MX32 operand, row-major [rows, cols], in blocks of 32
 * along each row or, with along_cols, down each column; a short last block
 * is a block of its own. The CPU loops and the CUDA kernels walk the same
 * blocks in the same order (scale b belongs to block b). */
static inline AMP_HD size_t amp_mx_block_count(size_t rows, size_t cols, int along_cols) {
    return along_cols ? (rows + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK * cols
                      : (cols + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK * rows;
}

/* Block b: its first element, its length and the stride between its elements. */
static inline AMP_HD void amp_mx_block_at(size_t rows, size_t cols, int along_cols, size_t b,
                                          size_t *first, int *n, size_t *stride) {
    if (!along_cols) {
        size_t nb = (cols + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK, k = b % nb * AMP_MX_BLOCK;
        *first = b / nb * cols + k;
        *n = (int)(cols - k < AMP_MX_BLOCK ? cols - k : AMP_MX_BLOCK);
        *stride = 1;
    } else {
        size_t k = b / cols * AMP_MX_BLOCK;
        *first = k * cols + b % cols;
        *n = (int)(rows - k < AMP_MX_BLOCK ? rows - k : AMP_MX_BLOCK);
        *stride = cols;
    }
}

#endif
