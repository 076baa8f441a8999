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

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/fp8.h"
#include "backend/kernels/mx_tiled.h"

#define AMP_NVFP4_BLOCK 16
#define AMP_E2M1_MAX_BITS 0x40c00000u /* 6.0 */
#define AMP_F32_MAX_BITS 0x7f7fffffu

/* The block layouts of a row-major [rows, cols] array: 1x16 blocks along
 * each row (block b = row * ceil(cols / 16) + col / 16), 1x16 blocks down
 * each column (b = row / 16 * cols + col) or 16x16 tiles (b = row / 16 *
 * ceil(cols / 16) + col / 16); a short last block is a block of its own. */
enum { AMP_NVFP4_ROWS = 0, AMP_NVFP4_COLS = 1, AMP_NVFP4_TILES = 2 };

static inline AMP_HD size_t amp_nvfp4_block_count(size_t rows, size_t cols, int blocks) {
    size_t r16 = (rows + AMP_NVFP4_BLOCK - 1) / AMP_NVFP4_BLOCK;
    size_t c16 = (cols + AMP_NVFP4_BLOCK - 1) / AMP_NVFP4_BLOCK;
    return blocks == AMP_NVFP4_ROWS ? rows * c16 : blocks == AMP_NVFP4_COLS ? r16 * cols : r16 * c16;
}

/* The block holding element (r, c). */
static inline AMP_HD size_t amp_nvfp4_block_of(size_t cols, int blocks, size_t r, size_t c) {
    size_t c16 = (cols + AMP_NVFP4_BLOCK - 1) / AMP_NVFP4_BLOCK;
    if (blocks == AMP_NVFP4_ROWS) return r * c16 + c / AMP_NVFP4_BLOCK;
    if (blocks == AMP_NVFP4_COLS) return r / AMP_NVFP4_BLOCK * cols + c;
    return r / AMP_NVFP4_BLOCK * c16 + c / AMP_NVFP4_BLOCK;
}

/* Block b's first row and column, its height and its width. */
static inline AMP_HD void amp_nvfp4_block_at(size_t rows, size_t cols, int blocks, size_t b,
                                             size_t *r0, size_t *c0, int *h, int *w) {
    size_t c16 = (cols + AMP_NVFP4_BLOCK - 1) / AMP_NVFP4_BLOCK;
    if (blocks == AMP_NVFP4_COLS) {
        *r0 = b / cols * AMP_NVFP4_BLOCK;
        *c0 = b % cols;
    } else {
        *r0 = b / c16 * (blocks == AMP_NVFP4_ROWS ? 1 : AMP_NVFP4_BLOCK);
        *c0 = b % c16 * AMP_NVFP4_BLOCK;
    }
    size_t hr = rows - *r0, wc = cols - *c0;
    *h = blocks == AMP_NVFP4_ROWS ? 1 : (int)(hr < AMP_NVFP4_BLOCK ? hr : AMP_NVFP4_BLOCK);
    *w = blocks == AMP_NVFP4_COLS ? 1 : (int)(wc < AMP_NVFP4_BLOCK ? wc : AMP_NVFP4_BLOCK);
}

/* An NVFP4 operand of the backends' nvfp4_* ops: a row-major [rows, cols]
 * array in blocks of 16 along each row (AMP_NVFP4_ROWS, scales
 * [rows][ceil(cols / 16)]), down each column (AMP_NVFP4_COLS, scales
 * [ceil(rows / 16)][cols]) or in 16x16 tiles (AMP_NVFP4_TILES, scales
 * [ceil(rows / 16)][ceil(cols / 16)]); a short last block is a block of its
 * own. The tensor scale comes from the amax of the values quantized (after
 * the transform when `hadamard`). The layouts' block numbering is
 * amp_nvfp4_block_count, _of and _at's. */
typedef struct amp_nvfp4_desc {
    int rows, cols;
    int blocks;          /* AMP_NVFP4_ROWS / _COLS / _TILES */
    int stochastic;      /* round with amp_float_to_e2m1_sr, element j's bits amp_nvfp4_random(sr_key, j) */
    uint64_t sr_key;     /* amp_nvfp4_tensor_key(seed, step, tensor) */
    int hadamard;        /* COLS only: amp_hadamard16 down each column, per group of 16 rows
                            (a short last group untransformed), before the quantize */
    uint32_t signs;      /* the transform's signs */
} amp_nvfp4_desc;

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

/* ---- stochastic rounding (counter-based: no state, so a resume repeats
 * the bits). One key per quantized tensor from (seed, step, tensor); an
 * element's 32 random bits are splitmix64's output for the counter
 * `element` under that key (Steele, Lea & Flood's SplitMix: a 64-bit
 * counter through a bijective mixer). ---- */

static inline AMP_HD uint64_t amp_nvfp4_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline AMP_HD uint64_t amp_nvfp4_tensor_key(uint64_t seed, uint64_t step, uint64_t tensor) {
    uint64_t k = amp_nvfp4_mix64(seed + 0x9E3779B97F4A7C15ull);
    k = amp_nvfp4_mix64(k ^ (step + 0x632BE59BD9B4E019ull));
    return amp_nvfp4_mix64(k ^ (tensor + 0x8CB92BA72F3D8DD7ull));
}

static inline AMP_HD uint32_t amp_nvfp4_random(uint64_t key, uint64_t element) {
    return (uint32_t)(amp_nvfp4_mix64(key + (element + 1u) * 0x9E3779B97F4A7C15ull) >> 32);
}

/* clamp(f, -6, 6) rounded to one of the two E2M1 codes around it, up with
 * probability (|f| - lo) / (hi - lo) (the gap is 0.5, 1 or 2, so that
 * fraction is exact in FP32); r's top 24 bits are the uniform it is
 * compared with, so the probability has a resolution of 2^-24. NaN: +0. */
static inline AMP_HD uint8_t amp_float_to_e2m1_sr(float f, uint32_t r) {
    uint32_t u = amp_f32_bits(f);
    uint32_t a = u & 0x7fffffffu;
    uint8_t sign = (uint8_t)((u >> 28) & 8u);
    if (a > 0x7f800000u) return 0;
    if (a >= AMP_E2M1_MAX_BITS) return (uint8_t)(sign | 7u);
    float m = amp_f32_from_bits(a);
    float gap = m < 2.0f ? 0.5f : m < 4.0f ? 1.0f : 2.0f;
    float lo = floorf(m / gap) * gap;
    float frac = (m - lo) / gap;
    uint8_t q = amp_float_to_e2m1(lo); /* lo is a code: exact */
    if ((float)(r >> 8) * (1.0f / 16777216.0f) < frac) q++;
    return (uint8_t)(sign | q);
}

/* ---- the 16-point random Hadamard transform: v <- (H S / 4) v, with H
 * the Sylvester Hadamard matrix (H[i][j] = (-1)^popcount(i & j), so
 * H H^T = 16 I) and S = diag(+-1) from `signs` (bit i set: -1). H S / 4
 * is orthogonal, so a GEMM whose two operands are both transformed along
 * its reduction dimension gives the product of the untransformed ones. ---- */

static inline AMP_HD int amp_hadamard16_entry(int i, int j) {
    int p = i & j;
    p ^= p >> 2;
    p ^= p >> 1;
    return (p & 1) ? -1 : 1;
}

static inline AMP_HD uint32_t amp_hadamard16_signs(uint64_t seed, uint64_t step) {
    return (uint32_t)(amp_nvfp4_mix64(amp_nvfp4_tensor_key(seed, step, 0x484144414d415244ull)) &
                      0xffffu);
}

/* v[k * stride], k = 0..15, in place: signs, the butterflies of the fast
 * Walsh-Hadamard transform (natural order: H above), then * 0.25 (exact). */
static inline AMP_HD void amp_hadamard16(float *v, size_t stride, uint32_t signs) {
    float t[16];
    for (int k = 0; k < 16; k++) t[k] = ((signs >> k) & 1u) ? -v[(size_t)k * stride] : v[(size_t)k * stride];
    for (int h = 1; h < 16; h <<= 1)
        for (int i = 0; i < 16; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                float a = t[j], b = t[j + h];
                t[j] = a + b;
                t[j + h] = a - b;
            }
    for (int k = 0; k < 16; k++) v[(size_t)k * stride] = t[k] * 0.25f;
}

/* What one quantize of NVFP4 values saw, beside amp_fp8_stats' amax and
 * counts: the E4M3 block scales (decoded) of the blocks with a nonzero
 * amax, and for stochastically rounded elements the sums that make the
 * mean rounding bias sum(deq - x) / sum(|x|) over the finite x.
 *
 * The sums are doubles added in one order, so every backend gives the
 * same bits: a quantize adds, to the record's sums as they were, runs of
 * terms each summed from 0 in element order: ROWS one run per block, in
 * block order; COLS per group of 16 rows, per AMP_NVFP4_SUM_COLS columns
 * from the left, one run per row of the group (its columns in order);
 * TILES each term on its own, tile by tile, row-major within a tile. */
#define AMP_NVFP4_SUM_COLS 256

/* The runs of that order for a [rows, cols] array (0 for TILES). */
static inline AMP_HD size_t amp_nvfp4_sum_runs(size_t rows, size_t cols, int blocks) {
    size_t cr = (cols + AMP_NVFP4_SUM_COLS - 1) / AMP_NVFP4_SUM_COLS;
    return blocks == AMP_NVFP4_ROWS   ? amp_nvfp4_block_count(rows, cols, blocks)
           : blocks == AMP_NVFP4_COLS ? rows * cr
                                      : 0;
}

/* Run i's sums (ROWS, COLS; COLS run i is row i / cr's i % cr-th run of
 * columns) from 0, over per-element terms t_err / t_abs [rows * cols]
 * (NaN where an element is left out: a sum from +0 never becomes -0, so
 * skipping it gives the bits of adding 0.0). */
static inline AMP_HD void amp_nvfp4_sum_run(double *e, double *a, const double *t_err,
                                            const double *t_abs, size_t rows, size_t cols,
                                            int blocks, size_t i) {
    size_t first, len;
    if (blocks == AMP_NVFP4_ROWS) {
        size_t r0, c0;
        int h, w;
        amp_nvfp4_block_at(rows, cols, blocks, i, &r0, &c0, &h, &w);
        first = r0 * cols + c0, len = (size_t)w;
    } else {
        size_t cr = (cols + AMP_NVFP4_SUM_COLS - 1) / AMP_NVFP4_SUM_COLS;
        size_t c0 = i % cr * AMP_NVFP4_SUM_COLS;
        first = i / cr * cols + c0;
        len = cols - c0 < AMP_NVFP4_SUM_COLS ? cols - c0 : AMP_NVFP4_SUM_COLS;
    }
    double se = 0.0, sa = 0.0;
    for (size_t j = first; j < first + len; j++)
        if (t_err[j] == t_err[j]) se += t_err[j], sa += t_abs[j];
    *e = se, *a = sa;
}

/* *e, *a (a record's sums) += the runs' sums p_err / p_abs in the order
 * above (ROWS: block order; COLS: per group of 16 rows, per run of
 * columns, per row), or TILES' terms tile by tile. */
static inline AMP_HD void amp_nvfp4_add_sums(double *e, double *a, const double *p_err,
                                             const double *p_abs, const double *t_err,
                                             const double *t_abs, size_t rows, size_t cols,
                                             int blocks) {
    double se = *e, sa = *a;
    if (blocks == AMP_NVFP4_ROWS) {
        for (size_t b = 0, nb = amp_nvfp4_block_count(rows, cols, blocks); b < nb; b++)
            se += p_err[b], sa += p_abs[b];
    } else if (blocks == AMP_NVFP4_COLS) {
        size_t cr = (cols + AMP_NVFP4_SUM_COLS - 1) / AMP_NVFP4_SUM_COLS;
        for (size_t r0 = 0; r0 < rows; r0 += AMP_NVFP4_BLOCK)
            for (size_t k = 0; k < cr; k++)
                for (size_t r = r0; r < rows && r < r0 + AMP_NVFP4_BLOCK; r++)
                    se += p_err[r * cr + k], sa += p_abs[r * cr + k];
    } else {
        for (size_t b = 0, nb = amp_nvfp4_block_count(rows, cols, blocks); b < nb; b++) {
            size_t r0, c0;
            int h, w;
            amp_nvfp4_block_at(rows, cols, blocks, b, &r0, &c0, &h, &w);
            for (size_t r = r0; r < r0 + (size_t)h; r++)
                for (size_t c = c0; c < c0 + (size_t)w; c++)
                    if (t_err[r * cols + c] == t_err[r * cols + c])
                        se += t_err[r * cols + c], sa += t_abs[r * cols + c];
        }
    }
    *e = se, *a = sa;
}
typedef struct amp_nvfp4_stats {
    float scale_min, scale_max; /* valid when blocks > 0 */
    unsigned long long blocks;
    double sr_err, sr_abs;
    unsigned long long sr_count;
} amp_nvfp4_stats;

static inline AMP_HD void amp_nvfp4_stats_merge(amp_nvfp4_stats *into, const amp_nvfp4_stats *s) {
    if (s->blocks) {
        if (!into->blocks || s->scale_min < into->scale_min) into->scale_min = s->scale_min;
        if (!into->blocks || s->scale_max > into->scale_max) into->scale_max = s->scale_max;
    }
    into->blocks += s->blocks;
    into->sr_err += s->sr_err;
    into->sr_abs += s->sr_abs;
    into->sr_count += s->sr_count;
}

/* One block's quantize (what a CUDA thread does for its block; the CPU's
 * loops give the same bits): its amax (NaN ignored), its E4M3 scale
 * (returned), then each element's code into q (one byte per element, may
 * be NULL) and decoded value into y (may be NULL; may be src: every element
 * is read before it is written), the counts added to the record's fields,
 * the block's amax into bmax, and with t_err (stochastic rounding) each
 * element's bias terms into t_err / t_abs, NaN for an element the sums
 * leave out (non-finite x). */
typedef struct amp_nvfp4_block_out {
    uint8_t *q;
    float *y;
    double *t_err, *t_abs;
    unsigned long long saturated, flushed, nan, sr_count;
    float bmax; /* the last block's */
} amp_nvfp4_block_out;

static inline AMP_HD uint8_t amp_nvfp4_block_pass(amp_nvfp4_block_out *o, const float *src,
                                                  const amp_nvfp4_desc *d, float s_enc,
                                                  size_t b) {
    size_t C = (size_t)d->cols, r0, c0;
    int h, w;
    amp_nvfp4_block_at((size_t)d->rows, C, d->blocks, b, &r0, &c0, &h, &w);
    uint32_t m = 0;
    for (size_t r = r0; r < r0 + (size_t)h; r++)
        for (size_t c = c0; c < c0 + (size_t)w; c++) {
            uint32_t a = amp_f32_bits(src[r * C + c]) & 0x7fffffffu;
            m = a <= 0x7f800000u && a > m ? a : m;
        }
    float s_dec = 1.0f / s_enc;
    o->bmax = amp_f32_from_bits(m);
    uint8_t s = amp_nvfp4_block_scale(o->bmax, s_enc);
    float enc = amp_nvfp4_element_factor(s, s_dec);
    for (size_t r = r0; r < r0 + (size_t)h; r++)
        for (size_t c = c0; c < c0 + (size_t)w; c++) {
            size_t e = r * C + c;
            float x = src[e], v = x * enc;
            uint8_t q = d->stochastic ? amp_float_to_e2m1_sr(v, amp_nvfp4_random(d->sr_key, e))
                                      : amp_float_to_e2m1(v);
            float out = amp_nvfp4_decode(q, s, s_dec);
            int is_nan = x != x, counted = d->stochastic && !is_nan && fabsf(x) != INFINITY;
            o->nan += (unsigned long long)is_nan;
            o->saturated += (unsigned long long)(!is_nan && s != 0 && fabsf(v) > 6.0f);
            o->flushed += (unsigned long long)(!is_nan && x != 0.0f && out == 0.0f);
            o->sr_count += (unsigned long long)counted;
            if (o->t_err) {
                o->t_err[e] = counted ? (double)out - (double)x : (double)NAN;
                o->t_abs[e] = counted ? fabs((double)x) : (double)NAN;
            }
            if (o->q) o->q[e] = q;
            if (o->y) o->y[e] = out;
        }
    return s;
}

/* ---- the block-scaled GEMM's operands (cuBLASLt's CUDA_R_4F_E2M1 with
 * CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 scales). An operand is [rows,
 * k] stored K-major: the codes as the nvfp4 ops pack them (element j of
 * the row-major array in byte j / 2, the low nibble for even j, which is
 * cuda_fp4.h's __nv_fp4x2 order: the first element in bits 0..3), so with
 * k even row r starts at byte r * k / 2 and the leading dimension is k
 * elements; the E4M3 block scales rearranged into mx_tiled.h's layout
 * with kb = ceil(k / 16) scale columns. ---- */

/* The scale byte of block column c (elements 16c .. 16c + 15 along k) of
 * row `row`, from a [rows, cols] operand's scales in layout `blocks`
 * (AMP_NVFP4_ROWS: its own block; AMP_NVFP4_TILES: the 16x16 tile holding
 * it, the same byte for the tile's 16 rows); 0 in the padding (row >=
 * rows or c >= ceil(cols / 16)). AMP_NVFP4_COLS has no such byte (its
 * blocks run across k): callers keep it away. */
static inline AMP_HD uint8_t amp_nvfp4_tiled_value(const uint8_t *scales, size_t rows, size_t cols,
                                                   int blocks, size_t row, size_t c) {
    size_t kb = (cols + AMP_NVFP4_BLOCK - 1) / AMP_NVFP4_BLOCK;
    return row < rows && c < kb ? scales[amp_nvfp4_block_of(cols, blocks, row, c * AMP_NVFP4_BLOCK)]
                                : (uint8_t)0;
}

/* The whole rearrangement, one position at a time: tiled[amp_mx_tiled_bytes
 * (rows, kb)] (kb = ceil(cols / 16)) from the scales in layout `blocks`.
 * The CUDA kernel runs the same body with one thread per padded position. */
static inline AMP_HD void amp_nvfp4_tile_scales(uint8_t *tiled, const uint8_t *scales, size_t rows,
                                                size_t cols, int blocks) {
    size_t kb = (cols + AMP_NVFP4_BLOCK - 1) / AMP_NVFP4_BLOCK;
    size_t pr = amp_mx_tiled_rows(rows), pc = amp_mx_tiled_cols(kb);
    for (size_t row = 0; row < pr; row++)
        for (size_t c = 0; c < pc; c++)
            tiled[amp_mx_tiled_index(row, c, kb)] =
                amp_nvfp4_tiled_value(scales, rows, cols, blocks, row, c);
}

#endif
