/* The CPU backend's FP8 kernels (formats in backend/kernels/fp8.h and
 * mx.h), one table per instruction-set path (cpu_isa.h), the same source
 * (cpu_fp8_body.h) compiled once per path with that path's flags, like
 * cpu_kern.h's. Every path gives the scalar functions' bits (tests/
 * test_fp8_kernels.c over every FP32 pattern); the amax is an integer max
 * of magnitudes, so it does not depend on the lane order or the split of
 * the work either. Kernels work on one range; a caller may split an array
 * anywhere and combine the stats with amp_fp8_stats_merge. */
#ifndef AMP_CPU_FP8_H
#define AMP_CPU_FP8_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu_isa.h"
#include "backend/kernels/fp8.h"
#include "backend/kernels/nvfp4.h"

typedef struct amp_cpu_fp8 {
    amp_isa isa;
    /* q[n] = cast(clamp(x * scale)) in fmt (amp_fp8_quantize_element);
     * st (not NULL) takes max(st->amax, amax of x) and adds the counts */
    void (*quantize)(uint8_t *q, const float *x, size_t n, float scale, int fmt,
                     amp_fp8_stats *st);
    /* x[n] = decode(q) * inv_scale (amp_fp8_inv_scale(scale), as TE's) */
    void (*dequantize)(float *x, const uint8_t *q, size_t n, float inv_scale, int fmt);
    /* MXFP8 of a row-major [rows, cols] array: elem [rows, cols], scales
     * [rows, ceil(cols / 32)] (blocks of 32 along each row) */
    void (*mx_quantize)(uint8_t *elem, uint8_t *scales, const float *x, size_t rows, size_t cols,
                        int fmt);
    void (*mx_dequantize)(float *x, const uint8_t *elem, const uint8_t *scales, size_t rows,
                          size_t cols, int fmt);
    /* MX32 of [rows, cols] in blocks of 32 along each row (along_cols 0:
     * scales [rows][ceil(cols / 32)]) or down each column (scales
     * [ceil(rows / 32)][cols]), a short last block a block of its own:
     * codes into elem, scale bytes into scales, decoded values into y (any
     * of the three may be NULL; y may be x); the saturated / flushed / NaN
     * counts added to st (may be NULL; its amax untouched) */
    void (*mx_pass)(uint8_t *elem, uint8_t *scales, float *y, const float *x, size_t rows,
                    size_t cols, int along_cols, int fmt, amp_fp8_stats *st);
    /* x = the values of elem with scales, either orientation */
    void (*mx_decode)(float *x, const uint8_t *elem, const uint8_t *scales, size_t rows,
                      size_t cols, int along_cols, int fmt);
    /* NVFP4 (kernels/nvfp4.h) of a checked descriptor (amp_nvfp4_desc_check):
     * the scaled family's nvfp4_quantize / _dequantize / _qdq without the
     * backend (cpu_nvfp4_body.h) */
    void (*nvfp4_quantize)(uint8_t *codes, uint8_t *scales, float *s_dec, const float *x,
                           const amp_nvfp4_desc *d, amp_fp8_stats *st, amp_nvfp4_stats *nv);
    void (*nvfp4_dequantize)(float *x, const uint8_t *codes, const uint8_t *scales, float s_dec,
                             const amp_nvfp4_desc *d);
    void (*nvfp4_qdq)(float *y, const float *x, const amp_nvfp4_desc *d, float *s_enc_host,
                      amp_fp8_stats *st, amp_nvfp4_stats *nv);
} amp_cpu_fp8;

/* The table of a path, or NULL when this build has no code for it.
 * avx512_bf16 uses the avx512 table. */
const amp_cpu_fp8 *amp_cpu_fp8_for(amp_isa isa);

/* One per translation unit (cpu_fp8_generic.c, _avx2.c, _avx512.c). */
const amp_cpu_fp8 *amp_cpu_fp8_generic(void);
const amp_cpu_fp8 *amp_cpu_fp8_avx2(void);
const amp_cpu_fp8 *amp_cpu_fp8_avx512(void);

#endif
