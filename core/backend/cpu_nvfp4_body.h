/* The CPU backend's NVFP4 kernels (cpu_fp8.h's nvfp4_* entries), compiled
 * once per instruction-set path inside cpu_fp8_body.h (AMPF_NAME, the
 * path's flags), over the blocks of amp_nvfp4_desc's three layouts.
 *
 * Every layout but stochastic 16x16 tiles runs as rows: a chunk of up to
 * AMP_NVFP4_SUM_COLS columns gets its block scales first (both scales of a
 * block in that one pass over its values: the amax, then the E4M3 byte and
 * the element factor), each element's factor spread beside it, then one
 * branch-free loop over the chunk the compiler vectorises (the stochastic
 * bits from a vectorised counter loop, the same splitmix64 outputs as
 * nvfp4.h's amp_nvfp4_random), its codes packed two to a byte as they
 * come. The bias sums are the one sequential piece: doubles added in
 * nvfp4.h's order, from per-element terms the vector loop left. The
 * Hadamard transform is a fast Walsh-Hadamard on strips of columns held in
 * registers (cpu_nvfp4_wht.h). Every path gives the header's bits
 * (test_nvfp4_kernels, test_nvfp4_torch, the gpt_nvfp4 pins per path). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu_fp8.h"
#include "backend/kernels/nvfp4.h"

#define TILE AMP_NVFP4_BLOCK
/* Columns handled per chunk (their factors on the stack): the runs the
 * COLS bias sums add (nvfp4.h's AMP_NVFP4_SUM_COLS, which the CUDA code
 * follows), a multiple of 16, so ROWS and TILES chunks hold whole blocks. */
#define CHUNK AMP_NVFP4_SUM_COLS

#include "backend/cpu_nvfp4_wht.h"

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

/* max |x| over the non-NaN elements (inf counts: it saturates), as bits:
 * for non-negative floats the integer order is the float order, and an
 * integer max vectorises (a float one would need -ffinite-math-only). */
static inline uint32_t nv_amax_bits(const float *restrict x, size_t n, uint32_t m) {
    for (size_t i = 0; i < n; i++) {
        uint32_t a = amp_f32_bits(x[i]) & 0x7fffffffu;
        a &= 0u - (uint32_t)(a <= 0x7f800000u); /* NaN counts as 0; a mask, so it vectorises */
        m = a > m ? a : m;
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

/* A block's scale byte (stored when scales is not NULL) and its element
 * factor and decoded scale spread over its w elements. */
static inline void nv_block_factors(float bmax, float s_enc, float s_dec, amp_nvfp4_stats *nv,
                                    uint8_t *scale_out, float *enc, float *sv, size_t w) {
    uint8_t s = nv_scale(bmax, s_enc, nv);
    float e = amp_nvfp4_element_factor(s, s_dec), v = amp_e4m3_to_float(s);
    if (scale_out) *scale_out = s;
    for (size_t i = 0; i < w; i++) enc[i] = e, sv[i] = v;
}

static inline void nv_store(uint8_t *codes, size_t j, uint8_t q) {
    uint8_t *c = &codes[j / 2];
    *c = (uint8_t)((j & 1) ? ((*c & 0x0fu) | (q << 4)) : ((*c & 0xf0u) | q));
}

/* n codes (one per byte) into the packed array from element j: a byte
 * shared with the neighbours at either end is merged, the rest written. */
static void nv_pack(uint8_t *restrict codes, size_t j, const uint8_t *restrict q, size_t n) {
    size_t i = 0;
    if (n && (j & 1)) nv_store(codes, j, q[i++]);
    uint8_t *restrict out = codes + (j + i) / 2;
    size_t pairs = (n - i) / 2;
    for (size_t p = 0; p < pairs; p++) out[p] = (uint8_t)(q[i + 2 * p] | (q[i + 2 * p + 1] << 4));
    i += 2 * pairs;
    if (i < n) nv_store(codes, j + i, q[i]);
}

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

/* c ? a : b on the bits (c 0 or 1): the selects stay data, so the loop
 * around them vectorises. */
static inline float nv_sel(int c, float a, float b) {
    uint32_t m = 0u - (uint32_t)c;
    return amp_f32_from_bits((amp_f32_bits(a) & m) | (amp_f32_bits(b) & ~m));
}

/* One element of the stochastic loops (amp_float_to_e2m1_sr's result,
 * branch-free: a * (1 / gap) is exact and below 4, so truncation is its
 * floor; r >> 8 is below 2^24, so its float is exact), with its bias
 * terms (0 for a non-finite x: adding 0.0 to a sum from +0 gives the bits
 * of leaving it out). */
static inline float nv_sr_one(float xv, float enc, float sv, float s_dec, uint32_t r, uint8_t *q,
                              nv_counts *k, double *t_err, double *t_abs) {
    float v = xv * enc, a = fabsf(v);
    int is_nan = xv != xv, big = a >= 6.0f, ge2 = a >= 2.0f, ge4 = a >= 4.0f;
    float gap = 0.5f * (float)(1 + ge2 + 2 * ge4), inv = 2.0f - (float)ge2 - 0.5f * (float)ge4;
    float am = nv_sel(big | is_nan, 0.0f, a); /* inf and NaN stay out of the arithmetic */
    float lo = (float)(int)(am * inv) * gap;
    float frac = (am - lo) * inv;
    float up = nv_sel((float)(int32_t)(r >> 8) * (1.0f / 16777216.0f) < frac, gap, 0.0f);
    float mag = nv_sel(big, 6.0f, nv_sel(is_nan, 0.0f, lo + up));
    uint32_t sign = (amp_f32_bits(v) & 0x80000000u) & (0u - (uint32_t)!is_nan);
    float out = (amp_f32_from_bits(amp_f32_bits(mag) | sign) * sv) * s_dec;
    int fin = (amp_f32_bits(xv) & 0x7fffffffu) < 0x7f800000u;
    k->nan += (unsigned)is_nan;
    k->saturated += (unsigned)(!is_nan & (sv != 0.0f) & (a > 6.0f));
    k->flushed += (unsigned)(!is_nan & (xv != 0.0f) & (out == 0.0f));
    float xf = nv_sel(fin, xv, 0.0f), of = nv_sel(fin, out, 0.0f);
    *t_err = (double)of - (double)xf;
    *t_abs = fabs((double)xf);
    *q = (uint8_t)((uint32_t)((mag >= 0.5f) + (mag >= 1.0f) + (mag >= 1.5f) + (mag >= 2.0f) +
                              (mag >= 3.0f) + (mag >= 4.0f) + (mag >= 6.0f)) |
                   (sign >> 28));
    return out;
}

/* amp_nvfp4_random(key, j0 + i) for i < n: splitmix64 of the counters,
 * a loop of 64-bit lanes (the top half of the last product is all it
 * keeps, so the final shift-xor works on 32 bits). */
static void nv_random(uint32_t *restrict r, uint64_t key, size_t j0, size_t n) {
    const uint64_t g = 0x9E3779B97F4A7C15ull;
    uint64_t base = key + ((uint64_t)j0 + 1u) * g;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = base + (uint64_t)i * g;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        uint32_t h = (uint32_t)(z >> 32);
        r[i] = h ^ (h >> 31);
    }
}

/* n elements from index j (at most CHUNK), element i with factor enc[i]
 * and scale sv[i]: decoded values into y (NULL for none; may be src),
 * codes into the packed array (NULL for none), counts into st, and for
 * stochastic rounding the bias sums into nv in runs of `run` elements
 * (each summed from 0 in element order, then added). */
static void nv_run(const amp_nvfp4_desc *d, const float *src, float *y, uint8_t *codes, size_t j,
                   size_t n, const float *restrict enc, const float *restrict sv, float s_dec,
                   size_t run, amp_fp8_stats *st, amp_nvfp4_stats *nv) {
    uint8_t q[CHUNK];
    float tmp[CHUNK];
    float *restrict out = y && y != src ? y + j : tmp;
    const float *restrict x = src + j;
    nv_counts k = {0, 0, 0};
    if (d->stochastic) {
        uint32_t r[CHUNK];
        double te[CHUNK], ta[CHUNK];
        nv_random(r, d->sr_key, j, n);
        for (size_t i = 0; i < n; i++)
            out[i] = nv_sr_one(x[i], enc[i], sv[i], s_dec, r[i], &q[i], &k, &te[i], &ta[i]);
        if (nv) {
            unsigned fin = 0;
            for (size_t i = 0; i < n; i++) fin += (amp_f32_bits(x[i]) & 0x7fffffffu) < 0x7f800000u;
            for (size_t i0 = 0; i0 < n; i0 += run) {
                size_t i1 = i0 + run < n ? i0 + run : n;
                double e = 0.0, a = 0.0;
                for (size_t i = i0; i < i1; i++) e += te[i], a += ta[i];
                nv->sr_err += e;
                nv->sr_abs += a;
            }
            nv->sr_count += fin;
        }
    } else {
        for (size_t i = 0; i < n; i++) out[i] = nv_rne_one(x[i], enc[i], sv[i], s_dec, &q[i], &k);
    }
    if (y == src) memcpy(y + j, tmp, n * sizeof *y);
    if (st) {
        st->nan += k.nan;
        st->saturated += k.saturated;
        st->flushed += k.flushed;
    }
    if (codes) nv_pack(codes, j, q, n);
}

/* Element j (value x) of a block with scale byte s: its code, counted
 * (stochastic 16x16 tiles, whose bias terms are added one by one). */
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

/* Stochastic 16x16 tiles, block by block (their bias sums add term by term
 * in tile order). */
static void nv_pass_tiles_sr(uint8_t *codes, uint8_t *scales, float *y, const float *src,
                             const amp_nvfp4_desc *d, float s_enc, amp_fp8_stats *st,
                             amp_nvfp4_stats *nv) {
    float s_dec = 1.0f / s_enc;
    size_t nb = nv_blocks(d), idx[TILE * TILE];
    for (size_t b = 0; b < nb; b++) {
        int n = nv_block(d, b, idx);
        uint32_t m = 0;
        for (int i = 0; i < n; i++) m = nv_amax_bits(&src[idx[i]], 1, m);
        uint8_t s = nv_scale(amp_f32_from_bits(m), s_enc, nv);
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

/* One pass over src: codes and scales (either NULL) and/or decoded values
 * into y (NULL for none). y may be src: a block is read whole first. All
 * three layouts walk groups of rows (1 for ROWS, 16 otherwise) in chunks
 * of CHUNK columns: the chunk's blocks' scales first, then its rows. */
static void nv_pass(uint8_t *codes, uint8_t *scales, float *y, const float *src,
                    const amp_nvfp4_desc *d, float s_enc, amp_fp8_stats *st, amp_nvfp4_stats *nv) {
    if (d->blocks == AMP_NVFP4_TILES && d->stochastic) {
        nv_pass_tiles_sr(codes, scales, y, src, d, s_enc, st, nv);
        return;
    }
    size_t R = (size_t)d->rows, C = (size_t)d->cols, c16 = (C + TILE - 1) / TILE;
    size_t group = d->blocks == AMP_NVFP4_ROWS ? 1 : TILE;
    float s_dec = 1.0f / s_enc;
    float enc[CHUNK], sv[CHUNK];
    uint32_t bmax[CHUNK];
    for (size_t r0 = 0; r0 < R; r0 += group) {
        size_t r1 = r0 + group < R ? r0 + group : R;
        for (size_t c0 = 0; c0 < C; c0 += CHUNK) {
            size_t w = C - c0 < CHUNK ? C - c0 : CHUNK;
            if (d->blocks == AMP_NVFP4_COLS) { /* one block per column */
                for (size_t c = 0; c < w; c++) bmax[c] = 0;
                for (size_t r = r0; r < r1; r++) {
                    const float *restrict row = src + r * C + c0;
                    for (size_t c = 0; c < w; c++) {
                        uint32_t a = amp_f32_bits(row[c]) & 0x7fffffffu;
                        a &= 0u - (uint32_t)(a <= 0x7f800000u);
                        bmax[c] = a > bmax[c] ? a : bmax[c];
                    }
                }
                for (size_t c = 0; c < w; c++)
                    nv_block_factors(amp_f32_from_bits(bmax[c]), s_enc, s_dec, nv,
                                     scales ? &scales[r0 / TILE * C + c0 + c] : NULL, &enc[c],
                                     &sv[c], 1);
            } else { /* blocks of 16 columns over the group's rows */
                for (size_t k = 0; k < w; k += TILE) {
                    size_t bw = w - k < TILE ? w - k : TILE;
                    uint32_t m = 0;
                    for (size_t r = r0; r < r1; r++) m = nv_amax_bits(src + r * C + c0 + k, bw, m);
                    size_t b = d->blocks == AMP_NVFP4_ROWS ? r0 * c16 + (c0 + k) / TILE
                                                           : r0 / TILE * c16 + (c0 + k) / TILE;
                    nv_block_factors(amp_f32_from_bits(m), s_enc, s_dec, nv,
                                     scales ? &scales[b] : NULL, &enc[k], &sv[k], bw);
                }
            }
            /* ROWS sums one run per block; COLS one per row of the chunk */
            size_t run = d->blocks == AMP_NVFP4_ROWS ? TILE : w;
            for (size_t r = r0; r < r1; r++)
                nv_run(d, src, y, codes, r * C + c0, w, enc, sv, s_dec, run, st, nv);
        }
    }
}

static float nv_begin(const float *x, size_t n, amp_fp8_stats *st) {
    float amax = amp_f32_from_bits(nv_amax_bits(x, n, 0));
    if (st && amax > st->amax) st->amax = amax;
    return amp_nvfp4_tensor_scale(amax);
}

static void AMPF_NAME(nvfp4_quantize)(uint8_t *codes, uint8_t *scales, float *s_dec,
                                      const float *x, const amp_nvfp4_desc *d, amp_fp8_stats *st,
                                      amp_nvfp4_stats *nv) {
    float s_enc = nv_begin(x, (size_t)d->rows * (size_t)d->cols, st);
    nv_pass(codes, scales, NULL, x, d, s_enc, st, nv);
    *s_dec = 1.0f / s_enc;
}

/* An E2M1 code's value from its bits, branch-free (so the decode loop
 * vectorises): 0 and 0.5 as m * 0.5, the rest 2^(m/2 - 1) * (1 + (m & 1) / 2)
 * built as FP32 bits; amp_e2m1_to_float's values, -0 included. */
static inline float nv_e2m1_value(uint32_t q) {
    uint32_t m = q & 7u;
    float small = (float)(int32_t)m * 0.5f;
    float big = amp_f32_from_bits((((m >> 1) + 126u) << 23) | ((m & 1u) << 22));
    return amp_f32_from_bits(amp_f32_bits(nv_sel(m >= 2u, big, small)) | ((q & 8u) << 28));
}

/* n codes from element j of the packed array, one per byte. */
static inline void nv_unpack(uint8_t *restrict q, const uint8_t *restrict codes, size_t j, size_t n) {
    size_t i = 0;
    if (n && (j & 1)) q[i++] = (uint8_t)(codes[j / 2] >> 4);
    const uint8_t *restrict in = codes + (j + i) / 2;
    size_t pairs = (n - i) / 2;
    for (size_t p = 0; p < pairs; p++) {
        q[i + 2 * p] = (uint8_t)(in[p] & 15u);
        q[i + 2 * p + 1] = (uint8_t)(in[p] >> 4);
    }
    i += 2 * pairs;
    if (i < n) q[i] = (uint8_t)(codes[(j + i) / 2] & 15u);
}

/* Row by row in chunks of columns: the chunk's block scales decoded and
 * spread per element, its codes unpacked, then one vector loop. */
static void AMPF_NAME(nvfp4_dequantize)(float *x, const uint8_t *codes, const uint8_t *scales,
                                        float s_dec, const amp_nvfp4_desc *d) {
    size_t R = (size_t)d->rows, C = (size_t)d->cols;
    float sv[CHUNK];
    uint8_t q[CHUNK];
    for (size_t r = 0; r < R; r++)
        for (size_t c0 = 0; c0 < C; c0 += CHUNK) {
            size_t w = C - c0 < CHUNK ? C - c0 : CHUNK, j = r * C + c0;
            for (size_t c = 0; c < w; c += d->blocks == AMP_NVFP4_COLS ? 1 : TILE) {
                float v = amp_e4m3_to_float(scales[amp_nvfp4_block_of(C, d->blocks, r, c0 + c)]);
                size_t bw = d->blocks == AMP_NVFP4_COLS ? 1 : w - c < TILE ? w - c : TILE;
                for (size_t i = 0; i < bw; i++) sv[c + i] = v;
            }
            nv_unpack(q, codes, j, w);
            float *restrict out = x + j;
            for (size_t c = 0; c < w; c++) out[c] = (nv_e2m1_value(q[c]) * sv[c]) * s_dec;
        }
}

static void AMPF_NAME(nvfp4_qdq)(float *y, const float *x, const amp_nvfp4_desc *d,
                                 float *s_enc_host, amp_fp8_stats *st, amp_nvfp4_stats *nv) {
    size_t n = (size_t)d->rows * (size_t)d->cols;
    const float *src = x;
    if (d->hadamard) {
        size_t R = (size_t)d->rows, C = (size_t)d->cols, r = 0;
        for (; r + TILE <= R; r += TILE) nv_wht16(y + r * C, x + r * C, C, d->signs);
        if (y != x) memcpy(y + r * C, x + r * C, (R - r) * C * sizeof *y); /* untransformed */
        src = y;
    }
    float s_enc = nv_begin(src, n, st);
    if (s_enc_host) *s_enc_host = s_enc;
    nv_pass(NULL, NULL, y, src, d, s_enc, st, nv);
}
