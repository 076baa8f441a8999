/* The CPU backend's NVFP4 ops (the "scaled" family's nvfp4_*) over the
 * blocks of amp_nvfp4_desc's three layouts. Rows and columns go through
 * branch-free loops the compiler vectorises; 16x16 tiles (weights, small)
 * through nvfp4.h's element functions. Both give the header's bits
 * (test_nvfp4_kernels, test_nvfp4_torch). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu_internal.h"

#define TILE AMP_NVFP4_BLOCK

static size_t nv_blocks(const amp_nvfp4_desc *d) {
    return amp_nvfp4_block_count((size_t)d->rows, (size_t)d->cols, d->blocks);
}

/* The element indices of block b (at most 16 x 16); their count. */
static int nv_block(const amp_nvfp4_desc *d, size_t b, size_t *idx) {
    size_t C = (size_t)d->cols, r0, c0;
    int h, w, n = 0;
    amp_nvfp4_block_at((size_t)d->rows, C, d->blocks, b, &r0, &c0, &h, &w);
    for (size_t r = r0; r < r0 + (size_t)h; r++)
        for (size_t c = c0; c < c0 + (size_t)w; c++) idx[n++] = r * C + c;
    return n;
}

/* max |x| over the non-NaN elements (inf counts: it saturates) */
static float nv_amax(const float *x, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (a > m) m = a; /* a NaN compares false */
    }
    return m;
}

/* A block's scale from its amax, into the range stats. */
static uint8_t nv_scale(float bmax, float s_enc, amp_nvfp4_stats *nv) {
    uint8_t s = amp_nvfp4_block_scale(bmax, s_enc);
    if (nv && bmax > 0.0f) {
        float sv = amp_e4m3_to_float(s);
        if (!nv->blocks || sv < nv->scale_min) nv->scale_min = sv;
        if (!nv->blocks || sv > nv->scale_max) nv->scale_max = sv;
        nv->blocks++;
    }
    return s;
}

static inline void nv_store(uint8_t *codes, size_t j, uint8_t q) {
    uint8_t *c = &codes[j / 2];
    *c = (uint8_t)((j & 1) ? ((*c & 0x0fu) | (q << 4)) : ((*c & 0xf0u) | q));
}

/* Columns handled per pass of a COLS row group (their scales on the
 * stack), and the longest run nv_run takes; the runs the bias sums add
 * (nvfp4.h's AMP_NVFP4_SUM_COLS, which the CUDA code follows). */
#define COL_CHUNK AMP_NVFP4_SUM_COLS
#define COL_CHUNK_MAX COL_CHUNK

/* The counts of one run of elements. */
typedef struct nv_counts {
    unsigned nan, saturated, flushed;
} nv_counts;

/* One element of the RNE loops: its code into *q, its value returned.
 * The magnitude is summed from the same comparisons as the code (each
 * term a multiple of 0.5: exact), so nothing branches. */
static inline float nv_rne_one(float xv, float enc, float sv, float s_dec, uint8_t *q,
                               nv_counts *k) {
    float v = xv * enc, a = fabsf(v);
    int c1 = a > 0.25f, c2 = a >= 0.75f, c3 = a > 1.25f, c4 = a >= 1.75f, c5 = a > 2.5f,
        c6 = a >= 3.5f, c7 = a > 5.0f;
    float mag = 0.5f * (float)(c1 + c2 + c3 + c4) + (float)(c5 + c6) + 2.0f * (float)c7;
    int is_nan = xv != xv;
    uint32_t sign = is_nan ? 0u : amp_f32_bits(v) & 0x80000000u;
    float out = (amp_f32_from_bits(amp_f32_bits(mag) | sign) * sv) * s_dec;
    k->nan += (unsigned)is_nan;
    k->saturated += (unsigned)(!is_nan & (sv != 0.0f) & (a > 6.0f));
    k->flushed += (unsigned)(!is_nan & (xv != 0.0f) & (out == 0.0f));
    *q = (uint8_t)((uint32_t)(c1 + c2 + c3 + c4 + c5 + c6 + c7) | (sign >> 28));
    return out;
}

/* One element of the stochastic loops (amp_float_to_e2m1_sr's result,
 * branch-free: a * (1 / gap) is exact and below 4, so truncation is its
 * floor), with the bias sums. */
static inline float nv_sr_one(float xv, float enc, float sv, float s_dec, uint32_t r, uint8_t *q,
                              nv_counts *k, double *err, double *abs_sum) {
    float v = xv * enc, a = fabsf(v);
    int is_nan = xv != xv, big = a >= 6.0f;
    float gap = a < 2.0f ? 0.5f : a < 4.0f ? 1.0f : 2.0f, inv = a < 2.0f ? 2.0f : a < 4.0f ? 1.0f : 0.5f;
    float am = big ? 0.0f : a; /* inf and NaN stay out of the arithmetic */
    float lo = (float)(int)(am * inv) * gap;
    float frac = (am - lo) * inv;
    float up = (float)(r >> 8) * (1.0f / 16777216.0f) < frac ? gap : 0.0f;
    float mag = big ? 6.0f : is_nan ? 0.0f : lo + up;
    uint32_t sign = is_nan ? 0u : amp_f32_bits(v) & 0x80000000u;
    float out = (amp_f32_from_bits(amp_f32_bits(mag) | sign) * sv) * s_dec;
    int fin = !is_nan & (fabsf(xv) < __builtin_inff());
    k->nan += (unsigned)is_nan;
    k->saturated += (unsigned)(!is_nan & (sv != 0.0f) & (a > 6.0f));
    k->flushed += (unsigned)(!is_nan & (xv != 0.0f) & (out == 0.0f));
    *err += fin ? (double)out - (double)xv : 0.0;
    *abs_sum += fin ? fabs((double)xv) : 0.0;
    *q = (uint8_t)((uint32_t)((mag >= 0.5f) + (mag >= 1.0f) + (mag >= 1.5f) + (mag >= 2.0f) +
                              (mag >= 3.0f) + (mag >= 4.0f) + (mag >= 6.0f)) |
                   (sign >> 28));
    return out;
}

/* n stochastic elements from index j0: per-column enc / sv (step 1) or one
 * for all (step 0). */
static void nv_run_sr(const float *restrict x, float *restrict y, uint8_t *restrict q, size_t n,
                      const float *restrict enc, const float *restrict sv, size_t step,
                      float s_dec, uint64_t key, size_t j0, nv_counts *k, amp_nvfp4_stats *nv) {
    uint32_t r[COL_CHUNK_MAX];
    for (size_t i = 0; i < n; i++) r[i] = amp_nvfp4_random(key, j0 + i);
    nv_counts c = {0, 0, 0};
    double err = 0.0, abs_sum = 0.0;
    unsigned fin = 0;
    for (size_t i = 0; i < n; i++) {
        y[i] = nv_sr_one(x[i], enc[i * step], sv[i * step], s_dec, r[i], &q[i], &c, &err, &abs_sum);
        fin += (unsigned)(fabsf(x[i]) < __builtin_inff());
    }
    k->nan += c.nan;
    k->saturated += c.saturated;
    k->flushed += c.flushed;
    if (nv) {
        nv->sr_err += err;
        nv->sr_abs += abs_sum;
        nv->sr_count += fin;
    }
}

/* n elements of one block (one enc and scale), RNE; branch-free, so the
 * compiler vectorises it. */
static void nv_run_rne_block(const float *restrict x, float *restrict y, uint8_t *restrict q,
                             size_t n, float enc, float sv, float s_dec, nv_counts *k) {
    nv_counts c = {0, 0, 0};
    for (size_t i = 0; i < n; i++) y[i] = nv_rne_one(x[i], enc, sv, s_dec, &q[i], &c);
    k->nan += c.nan;
    k->saturated += c.saturated;
    k->flushed += c.flushed;
}

/* n elements of one row, each of its own column block (enc[i], sv[i]). */
static void nv_run_rne_cols(const float *restrict x, float *restrict y, uint8_t *restrict q,
                            size_t n, const float *restrict enc, const float *restrict sv,
                            float s_dec, nv_counts *k) {
    nv_counts c = {0, 0, 0};
    for (size_t i = 0; i < n; i++) y[i] = nv_rne_one(x[i], enc[i], sv[i], s_dec, &q[i], &c);
    k->nan += c.nan;
    k->saturated += c.saturated;
    k->flushed += c.flushed;
}

/* Element j (value x) of a block with scale byte s: its code, counted. */
static inline uint8_t nv_element(const amp_nvfp4_desc *d, float x, size_t j, uint8_t s,
                                 float enc, float s_dec, float *out, amp_fp8_stats *st,
                                 amp_nvfp4_stats *nv) {
    float v = x * enc;
    uint8_t q = d->stochastic ? amp_float_to_e2m1_sr(v, amp_nvfp4_random(d->sr_key, j))
                              : amp_float_to_e2m1(v);
    *out = amp_nvfp4_decode(q, s, s_dec);
    if (st) {
        int is_nan = isnan(x);
        st->nan += is_nan;
        st->saturated += !is_nan && s != 0 && fabsf(v) > 6.0f;
        st->flushed += !is_nan && x != 0.0f && *out == 0.0f;
    }
    if (nv && d->stochastic && isfinite(x)) {
        nv->sr_err += (double)*out - (double)x;
        nv->sr_abs += fabs((double)x);
        nv->sr_count++;
    }
    return q;
}

/* One block row of n elements from j (at most COL_CHUNK_MAX): enc / sv
 * per element (enc_step 1) or one for all (0), stochastic or RNE. */
static void nv_run(const amp_nvfp4_desc *d, const float *src, float *y, uint8_t *codes, size_t j,
                   size_t n, const float *enc, size_t enc_step, const float *sv, float s_dec,
                   amp_fp8_stats *st, amp_nvfp4_stats *nv) {
    uint8_t q[COL_CHUNK_MAX];
    float tmp[COL_CHUNK_MAX];
    float *out = y && y != src ? y + j : tmp;
    nv_counts k = {0, 0, 0};
    if (d->stochastic)
        nv_run_sr(src + j, out, q, n, enc, sv, enc_step, s_dec, d->sr_key, j, &k, nv);
    else if (enc_step)
        nv_run_rne_cols(src + j, out, q, n, enc, sv, s_dec, &k);
    else
        nv_run_rne_block(src + j, out, q, n, *enc, *sv, s_dec, &k);
    if (y == src)
        for (size_t i = 0; i < n; i++) y[j + i] = tmp[i];
    if (st) {
        st->nan += k.nan;
        st->saturated += k.saturated;
        st->flushed += k.flushed;
    }
    for (size_t i = 0; codes && i < n; i++) nv_store(codes, j + i, q[i]);
}

/* One pass over src: codes and scales (either NULL) and/or decoded values
 * into y (NULL for none). y may be src: a block is read whole first. ROWS
 * and COLS walk the rows in memory order; TILES goes block by block. */
static void nv_pass(uint8_t *codes, uint8_t *scales, float *y, const float *src,
                    const amp_nvfp4_desc *d, float s_enc, amp_fp8_stats *st, amp_nvfp4_stats *nv) {
    size_t R = (size_t)d->rows, C = (size_t)d->cols;
    float s_dec = 1.0f / s_enc;
    if (d->blocks == AMP_NVFP4_ROWS) {
        for (size_t r = 0; r < R; r++)
            for (size_t k = 0; k < C; k += TILE) {
                size_t e = k + TILE < C ? k + TILE : C, row = r * C;
                float bmax = 0.0f;
                for (size_t c = k; c < e; c++) bmax = fabsf(src[row + c]) > bmax ? fabsf(src[row + c]) : bmax;
                uint8_t s = nv_scale(bmax, s_enc, nv);
                float enc = amp_nvfp4_element_factor(s, s_dec), sv = amp_e4m3_to_float(s);
                if (scales) scales[amp_nvfp4_block_of(C, AMP_NVFP4_ROWS, r, k)] = s;
                nv_run(d, src, y, codes, row + k, e - k, &enc, 0, &sv, s_dec, st, nv);
            }
        return;
    }
    if (d->blocks == AMP_NVFP4_COLS) {
        float bmax[COL_CHUNK], enc[COL_CHUNK], sv[COL_CHUNK];
        uint8_t sc[COL_CHUNK];
        for (size_t r0 = 0; r0 < R; r0 += TILE) {
            size_t r1 = r0 + TILE < R ? r0 + TILE : R;
            for (size_t c0 = 0; c0 < C; c0 += COL_CHUNK) {
                size_t w = C - c0 < COL_CHUNK ? C - c0 : COL_CHUNK;
                for (size_t c = 0; c < w; c++) bmax[c] = 0.0f;
                for (size_t r = r0; r < r1; r++)
                    for (size_t c = 0; c < w; c++) {
                        float a = fabsf(src[r * C + c0 + c]);
                        bmax[c] = a > bmax[c] ? a : bmax[c];
                    }
                for (size_t c = 0; c < w; c++) {
                    sc[c] = nv_scale(bmax[c], s_enc, nv);
                    enc[c] = amp_nvfp4_element_factor(sc[c], s_dec);
                    sv[c] = amp_e4m3_to_float(sc[c]);
                    if (scales) scales[r0 / TILE * C + c0 + c] = sc[c];
                }
                for (size_t r = r0; r < r1; r++)
                    nv_run(d, src, y, codes, r * C + c0, w, enc, 1, sv, s_dec, st, nv);
            }
        }
        return;
    }
    size_t nb = nv_blocks(d), idx[TILE * TILE];
    for (size_t b = 0; b < nb; b++) {
        int n = nv_block(d, b, idx);
        float bmax = 0.0f;
        for (int i = 0; i < n; i++) bmax = fabsf(src[idx[i]]) > bmax ? fabsf(src[idx[i]]) : bmax;
        uint8_t s = nv_scale(bmax, s_enc, nv);
        float enc = amp_nvfp4_element_factor(s, s_dec);
        if (scales) scales[b] = s;
        for (int i = 0; i < n; i++) {
            float out;
            uint8_t q = nv_element(d, src[idx[i]], idx[i], s, enc, s_dec, &out, st, nv);
            if (codes) nv_store(codes, idx[i], q);
            if (y) y[idx[i]] = out;
        }
    }
}

/* amp_hadamard16 down every column of 16 rows of C values, as row
 * operations (the same additions per column in the same order, so the
 * same bits; the loops over a row vectorise). */
static void nv_hadamard_rows(float *y, size_t C, uint32_t signs) {
    for (int k = 0; k < TILE; k++)
        if ((signs >> k) & 1u)
            for (size_t c = 0; c < C; c++) y[(size_t)k * C + c] = -y[(size_t)k * C + c];
    for (int h = 1; h < TILE; h <<= 1)
        for (int i = 0; i < TILE; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                float *restrict a = y + (size_t)j * C, *restrict b = y + (size_t)(j + h) * C;
                for (size_t c = 0; c < C; c++) {
                    float u = a[c], v = b[c];
                    a[c] = u + v;
                    b[c] = u - v;
                }
            }
    for (size_t i = 0; i < TILE * C; i++) y[i] *= 0.25f;
}

static float nv_begin(const float *x, size_t n, amp_fp8_stats *st) {
    float amax = nv_amax(x, n);
    if (st && amax > st->amax) st->amax = amax;
    return amp_nvfp4_tensor_scale(amax);
}

int amp_cpu_nvfp4_quantize(amp_backend *be, uint8_t *codes, uint8_t *scales, float *s_dec,
                              const float *x, const amp_nvfp4_desc *d, amp_fp8_stats *st,
                              amp_nvfp4_stats *nv) {
    if (amp_nvfp4_desc_check(be, d, "nvfp4_quantize")) return 1;
    float s_enc = nv_begin(x, (size_t)d->rows * (size_t)d->cols, st);
    nv_pass(codes, scales, NULL, x, d, s_enc, st, nv);
    *s_dec = 1.0f / s_enc;
    return 0;
}

int amp_cpu_nvfp4_dequantize(amp_backend *be, float *x, const uint8_t *codes,
                                const uint8_t *scales, float s_dec, const amp_nvfp4_desc *d) {
    if (amp_nvfp4_desc_check(be, d, "nvfp4_dequantize")) return 1;
    size_t nb = nv_blocks(d), idx[TILE * TILE];
    for (size_t b = 0; b < nb; b++) {
        int n = nv_block(d, b, idx);
        for (int i = 0; i < n; i++) {
            size_t j = idx[i];
            uint8_t q = (uint8_t)((codes[j / 2] >> ((j & 1) * 4)) & 0x0fu);
            x[j] = amp_nvfp4_decode(q, scales[b], s_dec);
        }
    }
    return 0;
}

int amp_cpu_nvfp4_qdq(amp_backend *be, float *y, const float *x, const amp_nvfp4_desc *d,
                         float *s_enc_host, amp_fp8_stats *st, amp_nvfp4_stats *nv) {
    size_t n = (size_t)d->rows * (size_t)d->cols;
    const float *src = x;
    if (amp_nvfp4_desc_check(be, d, "nvfp4_qdq")) return 1;
    if (d->hadamard) {
        if (y != x) memcpy(y, x, n * sizeof *y);
        for (size_t r = 0; r + TILE <= (size_t)d->rows; r += TILE)
            nv_hadamard_rows(y + r * (size_t)d->cols, (size_t)d->cols, d->signs);
        src = y;
    }
    float s_enc = nv_begin(src, n, st);
    if (s_enc_host) *s_enc_host = s_enc;
    nv_pass(NULL, NULL, y, src, d, s_enc, st, nv);
    return 0;
}

