/* The MX32 kernels of cpu_fp8.h (mx_pass, mx_decode and the row-only
 * mx_quantize / mx_dequantize), part of cpu_fp8_body.h: compiled once per
 * path with AMPF_NAME, AMPF_ISA and the path's cast_vec.
 *
 * Every path gives the bits of the scalar block below, which is mx.h's
 * arithmetic element by element (amp_mx_scale_e8m0 on the integer max of
 * the magnitudes, amp_fp8_quantize_element's codes and flags,
 * amp_mx_dequantize_element's values). The vector code keeps that
 * arithmetic and changes only the order the elements go in:
 *   - blocks along rows: a full block is 32 contiguous values, its scale a
 *     horizontal max, its elements two (AVX-512) or four (AVX2) vectors;
 *   - blocks down columns: the 32 rows of a block-row are loaded column
 *     chunk by column chunk, so one vector holds one element of 16 (8)
 *     blocks side by side, each lane with its own scale: the amax a
 *     vertical max, no shuffles.
 * The decode is arithmetic (sign, exponent rebias, subnormals as an exact
 * int-to-float times a power of two), bit for bit amp_fp8_to_float's,
 * NaNs included; a block with a NaN scale decodes to 0x7fc00000. */

/* ---- the scalar block: the reference, the generic path and the tails ---- */

/* One block of n values at x[first + i * stride]: its scale into *sc, codes
 * into elem, decoded values into y (each may be NULL; same indices as x),
 * flags counted into the three counters. */
static void AMPF_NAME(mx_block_scalar)(uint8_t *elem, uint8_t *sc, float *y, const float *x,
                                       size_t first, int n, size_t stride, int fmt,
                                       unsigned long long cnt[3]) {
    uint32_t m = 0;
    for (int i = 0; i < n; i++) {
        uint32_t a = amp_f32_bits(x[first + (size_t)i * stride]) & 0x7fffffffu;
        if (a > 0x7f800000u) {
            m = 0x7fc00000u;
            break;
        }
        if (a > m) m = a;
    }
    uint8_t s = amp_mx_scale_e8m0(m, fmt);
    float f = amp_mx_element_factor(s);
    if (sc) *sc = s;
    for (int i = 0; i < n; i++) {
        size_t j = first + (size_t)i * stride;
        unsigned fl;
        uint8_t q = amp_fp8_quantize_element(x[j], f, fmt, &fl);
        cnt[0] += (fl & AMP_F8_SATURATED) != 0;
        cnt[1] += (fl & AMP_F8_FLUSHED) != 0;
        cnt[2] += (fl & AMP_F8_NAN) != 0;
        if (elem) elem[j] = q;
        if (y) y[j] = amp_mx_dequantize_element(q, s, fmt);
    }
}

static void AMPF_NAME(mx_decode_scalar)(float *x, const uint8_t *elem, uint8_t s, size_t first,
                                        int n, size_t stride, int fmt) {
    for (int i = 0; i < n; i++) {
        size_t j = first + (size_t)i * stride;
        x[j] = amp_mx_dequantize_element(elem[j], s, fmt);
    }
}

static inline void AMPF_NAME(mx_count)(amp_fp8_stats *st, const unsigned long long cnt[3]) {
    if (!st) return;
    st->saturated += cnt[0];
    st->flushed += cnt[1];
    st->nan += cnt[2];
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define AMPF_MX_LANES 16

/* amp_fp8_to_float of 16 codes (one per 32-bit lane). */
static inline __attribute__((always_inline)) __m512 AMPF_NAME(decode_vec)(__m512i code, int fmt) {
    int e5 = fmt == AMP_FP8_E5M2;
    __m512i sign = _mm512_slli_epi32(_mm512_and_si512(code, _mm512_set1_epi32(0x80)), 24);
    __m512i mag = _mm512_and_si512(code, _mm512_set1_epi32(0x7f));
    __m512i bits = _mm512_add_epi32(_mm512_sll_epi32(mag, _mm_cvtsi32_si128(e5 ? 21 : 20)),
                                    _mm512_set1_epi32((e5 ? 112 : 120) << 23));
    __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(mag), _mm512_set1_ps(e5 ? 0x1p-16f : 0x1p-9f));
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(e5 ? 4 : 8)),
                                 _mm512_castps_si512(sub));
    if (e5) { /* inf, NaN quieted as vcvtph2ps */
        __m512i m2 = _mm512_and_si512(mag, _mm512_set1_epi32(3));
        __m512i sp = _mm512_or_si512(_mm512_set1_epi32(0x7f800000), _mm512_slli_epi32(m2, 21));
        sp = _mm512_mask_or_epi32(sp, _mm512_test_epi32_mask(m2, m2), sp, _mm512_set1_epi32(0x400000));
        bits = _mm512_mask_mov_epi32(bits, _mm512_cmpge_epu32_mask(mag, _mm512_set1_epi32(0x7c)), sp);
    } else {
        bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7f)),
                                     _mm512_set1_epi32(0x7ff00000));
    }
    return _mm512_castsi512_ps(_mm512_or_si512(bits, sign));
}

/* Per lane from a block's amax bits: the E8M0 byte, the element factor and
 * the scale's value (amp_mx_scale_e8m0, _element_factor, _scale_to_float). */
typedef struct AMPF_NAME(mx_lanes) {
    __m512i s;
    __m512 f, val;
    __mmask16 nan;
} AMPF_NAME(mx_lanes);

static inline __attribute__((always_inline)) AMPF_NAME(mx_lanes)
    AMPF_NAME(mx_scales_of)(__m512i s) {
    AMPF_NAME(mx_lanes) L;
    L.s = s;
    L.nan = _mm512_cmpeq_epi32_mask(s, _mm512_set1_epi32(0xff));
    __m512i fb = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(254), s), 23);
    L.f = _mm512_castsi512_ps(_mm512_maskz_mov_epi32((__mmask16)~L.nan, fb));
    __m512i v = _mm512_slli_epi32(s, 23);
    v = _mm512_mask_mov_epi32(v, _mm512_cmpeq_epi32_mask(s, _mm512_setzero_si512()),
                              _mm512_set1_epi32(0x00400000));
    L.val = _mm512_castsi512_ps(v);
    return L;
}

static inline __attribute__((always_inline)) AMPF_NAME(mx_lanes)
    AMPF_NAME(mx_lanes_of)(__m512i amax, int fmt) {
    __m512i s = _mm512_max_epi32(
        _mm512_sub_epi32(_mm512_srli_epi32(amax, 23), _mm512_set1_epi32(amp_mx_emax(fmt))),
        _mm512_setzero_si512());
    s = _mm512_mask_mov_epi32(s, _mm512_cmpgt_epu32_mask(amax, _mm512_set1_epi32(0x7f800000)),
                              _mm512_set1_epi32(0xff));
    return AMPF_NAME(mx_scales_of)(s);
}

static inline __attribute__((always_inline)) __m512i AMPF_NAME(abs_bits)(__m512 v) {
    return _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff));
}

/* 16 values of 16 blocks (or one block): codes to elem, values to y. */
static inline __attribute__((always_inline)) void
AMPF_NAME(mx_step)(uint8_t *elem, float *y, __m512 xv, const AMPF_NAME(mx_lanes) *L,
                   const AMPF_NAME(fp8_consts) *c, int fmt, unsigned long long cnt[3]) {
    __mmask16 sat, nan;
    __m512i code = AMPF_NAME(cast_vec)(_mm512_mul_ps(xv, L->f), c, &sat, &nan);
    __m512i xa = AMPF_NAME(abs_bits)(xv);
    __mmask16 live = _mm512_test_epi32_mask(xa, xa) &
                     _mm512_cmple_epu32_mask(xa, _mm512_set1_epi32(0x7f800000));
    __mmask16 flush = _mm512_mask_testn_epi32_mask(live, code, _mm512_set1_epi32(0x7f));
    cnt[0] += (unsigned)__builtin_popcount(sat);
    cnt[1] += (unsigned)__builtin_popcount(flush);
    cnt[2] += (unsigned)__builtin_popcount(nan);
    if (elem) _mm_storeu_si128((__m128i *)elem, _mm512_cvtepi32_epi8(code));
    if (y) {
        __m512 d = _mm512_mul_ps(AMPF_NAME(decode_vec)(code, fmt), L->val);
        _mm512_storeu_ps(y, _mm512_mask_mov_ps(d, L->nan, _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000))));
    }
}

static inline __attribute__((always_inline)) void
AMPF_NAME(mx_decode_step)(float *x, const uint8_t *elem, const AMPF_NAME(mx_lanes) *L, int fmt) {
    __m512i code = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)elem));
    __m512 d = _mm512_mul_ps(AMPF_NAME(decode_vec)(code, fmt), L->val);
    _mm512_storeu_ps(x, _mm512_mask_mov_ps(d, L->nan, _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000))));
}

/* The integer max of 32 magnitudes: NaN's are above inf's, so it is a NaN
 * when any is (amp_mx_scale_e8m0 takes any NaN alike). */
static inline __attribute__((always_inline)) uint32_t AMPF_NAME(mx_amax_row)(const float *x) {
    return (uint32_t)_mm512_reduce_max_epu32(
        _mm512_max_epu32(AMPF_NAME(abs_bits)(_mm512_loadu_ps(x)),
                         AMPF_NAME(abs_bits)(_mm512_loadu_ps(x + 16))));
}

static inline __attribute__((always_inline)) __m512i AMPF_NAME(load_scales)(const uint8_t *s) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)s));
}

static inline __attribute__((always_inline)) void AMPF_NAME(store_scales)(uint8_t *dst, __m512i s) {
    _mm_storeu_si128((__m128i *)dst, _mm512_cvtepi32_epi8(s));
}

#define AMPF_VLOAD(p) _mm512_loadu_ps(p)
#define AMPF_VMAX(a, b) _mm512_max_epu32(a, b)
#define AMPF_VZERO() _mm512_setzero_si512()
#define AMPF_VSET1(v) _mm512_set1_epi32((int)(v))

#elif defined(__AVX2__)
#define AMPF_MX_LANES 8

/* As the AVX-512 branch's (lanes as all-ones / zero vectors; magnitudes
 * are below 2^31, so signed compares are exact). */
static inline __attribute__((always_inline)) __m256 AMPF_NAME(decode_vec)(__m256i code, int fmt) {
    int e5 = fmt == AMP_FP8_E5M2;
    __m256i sign = _mm256_slli_epi32(_mm256_and_si256(code, _mm256_set1_epi32(0x80)), 24);
    __m256i mag = _mm256_and_si256(code, _mm256_set1_epi32(0x7f));
    __m256i bits = _mm256_add_epi32(_mm256_sll_epi32(mag, _mm_cvtsi32_si128(e5 ? 21 : 20)),
                                    _mm256_set1_epi32((e5 ? 112 : 120) << 23));
    __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(mag), _mm256_set1_ps(e5 ? 0x1p-16f : 0x1p-9f));
    bits = _mm256_blendv_epi8(bits, _mm256_castps_si256(sub),
                              _mm256_cmpgt_epi32(_mm256_set1_epi32(e5 ? 4 : 8), mag));
    if (e5) {
        __m256i m2 = _mm256_and_si256(mag, _mm256_set1_epi32(3));
        __m256i quiet = _mm256_andnot_si256(_mm256_cmpeq_epi32(m2, _mm256_setzero_si256()),
                                            _mm256_set1_epi32(0x400000));
        __m256i sp = _mm256_or_si256(_mm256_or_si256(_mm256_set1_epi32(0x7f800000),
                                                     _mm256_slli_epi32(m2, 21)), quiet);
        bits = _mm256_blendv_epi8(bits, sp, _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7b)));
    } else {
        bits = _mm256_blendv_epi8(bits, _mm256_set1_epi32(0x7ff00000),
                                  _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f)));
    }
    return _mm256_castsi256_ps(_mm256_or_si256(bits, sign));
}

typedef struct AMPF_NAME(mx_lanes) {
    __m256i s;
    __m256 f, val;
    __m256i nan;
} AMPF_NAME(mx_lanes);

static inline __attribute__((always_inline)) AMPF_NAME(mx_lanes)
    AMPF_NAME(mx_scales_of)(__m256i s) {
    AMPF_NAME(mx_lanes) L;
    L.s = s;
    L.nan = _mm256_cmpeq_epi32(s, _mm256_set1_epi32(0xff));
    __m256i fb = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_set1_epi32(254), s), 23);
    L.f = _mm256_castsi256_ps(_mm256_andnot_si256(L.nan, fb));
    __m256i v = _mm256_slli_epi32(s, 23);
    v = _mm256_blendv_epi8(v, _mm256_set1_epi32(0x00400000),
                           _mm256_cmpeq_epi32(s, _mm256_setzero_si256()));
    L.val = _mm256_castsi256_ps(v);
    return L;
}

static inline __attribute__((always_inline)) AMPF_NAME(mx_lanes)
    AMPF_NAME(mx_lanes_of)(__m256i amax, int fmt) {
    __m256i s = _mm256_max_epi32(
        _mm256_sub_epi32(_mm256_srli_epi32(amax, 23), _mm256_set1_epi32(amp_mx_emax(fmt))),
        _mm256_setzero_si256());
    s = _mm256_blendv_epi8(s, _mm256_set1_epi32(0xff),
                           _mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7f800000)));
    return AMPF_NAME(mx_scales_of)(s);
}

static inline __attribute__((always_inline)) __m256i AMPF_NAME(abs_bits)(__m256 v) {
    return _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff));
}

static inline int AMPF_NAME(lanes)(__m256i m) {
    return __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)));
}

/* The low byte of each 32-bit lane, in order, into 8 bytes at dst. */
static inline __attribute__((always_inline)) void AMPF_NAME(store_bytes)(uint8_t *dst, __m256i v) {
    const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i join = _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1);
    __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, pick), join);
    _mm_storel_epi64((__m128i *)dst, _mm256_castsi256_si128(b));
}

static inline __attribute__((always_inline)) void
AMPF_NAME(mx_step)(uint8_t *elem, float *y, __m256 xv, const AMPF_NAME(mx_lanes) *L,
                   const AMPF_NAME(fp8_consts) *c, int fmt, unsigned long long cnt[3]) {
    __m256i sat, nan;
    __m256i code = AMPF_NAME(cast_vec)(_mm256_mul_ps(xv, L->f), c, &sat, &nan);
    __m256i xa = AMPF_NAME(abs_bits)(xv), zero = _mm256_setzero_si256();
    __m256i dead = _mm256_or_si256(_mm256_cmpeq_epi32(xa, zero),
                                   _mm256_cmpgt_epi32(xa, _mm256_set1_epi32(0x7f800000)));
    __m256i flush = _mm256_andnot_si256(
        dead, _mm256_cmpeq_epi32(_mm256_and_si256(code, _mm256_set1_epi32(0x7f)), zero));
    cnt[0] += (unsigned)AMPF_NAME(lanes)(sat);
    cnt[1] += (unsigned)AMPF_NAME(lanes)(flush);
    cnt[2] += (unsigned)AMPF_NAME(lanes)(nan);
    if (elem) AMPF_NAME(store_bytes)(elem, code);
    if (y) {
        __m256 d = _mm256_mul_ps(AMPF_NAME(decode_vec)(code, fmt), L->val);
        _mm256_storeu_ps(y, _mm256_blendv_ps(d, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)),
                                             _mm256_castsi256_ps(L->nan)));
    }
}

static inline __attribute__((always_inline)) void
AMPF_NAME(mx_decode_step)(float *x, const uint8_t *elem, const AMPF_NAME(mx_lanes) *L, int fmt) {
    __m256i code = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)elem));
    __m256 d = _mm256_mul_ps(AMPF_NAME(decode_vec)(code, fmt), L->val);
    _mm256_storeu_ps(x, _mm256_blendv_ps(d, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)),
                                         _mm256_castsi256_ps(L->nan)));
}

static inline __attribute__((always_inline)) uint32_t AMPF_NAME(mx_amax_row)(const float *x) {
    __m256i m = _mm256_setzero_si256();
    for (int j = 0; j < 4; j++) m = _mm256_max_epi32(m, AMPF_NAME(abs_bits)(_mm256_loadu_ps(x + 8 * j)));
    __m128i h = _mm_max_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    h = _mm_max_epi32(h, _mm_shuffle_epi32(h, 0x4e));
    h = _mm_max_epi32(h, _mm_shuffle_epi32(h, 0xb1));
    return (uint32_t)_mm_cvtsi128_si32(h);
}

static inline __attribute__((always_inline)) __m256i AMPF_NAME(load_scales)(const uint8_t *s) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)s));
}

static inline __attribute__((always_inline)) void AMPF_NAME(store_scales)(uint8_t *dst, __m256i s) {
    AMPF_NAME(store_bytes)(dst, s);
}

#define AMPF_VLOAD(p) _mm256_loadu_ps(p)
#define AMPF_VMAX(a, b) _mm256_max_epi32(a, b)
#define AMPF_VZERO() _mm256_setzero_si256()
#define AMPF_VSET1(v) _mm256_set1_epi32((int)(v))
#endif

/* ---- the kernels ---- */

static void AMPF_NAME(mx_pass)(uint8_t *elem, uint8_t *scales, float *y, const float *x,
                               size_t rows, size_t cols, int along_cols, int fmt,
                               amp_fp8_stats *st) {
    unsigned long long cnt[3] = {0, 0, 0};
#ifdef AMPF_MX_LANES
    const AMPF_NAME(fp8_consts) c = AMPF_NAME(consts_of)(fmt);
#endif
    if (!along_cols) {
        size_t nb = (cols + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK;
        for (size_t r = 0; r < rows; r++)
            for (size_t b = 0; b < nb; b++) {
                size_t j = r * cols + b * AMP_MX_BLOCK;
                int len = (int)(cols - b * AMP_MX_BLOCK < AMP_MX_BLOCK ? cols - b * AMP_MX_BLOCK
                                                                       : AMP_MX_BLOCK);
                uint8_t *sc = scales ? scales + r * nb + b : NULL;
#ifdef AMPF_MX_LANES
                if (len == AMP_MX_BLOCK) {
                    uint8_t sb = amp_mx_scale_e8m0(AMPF_NAME(mx_amax_row)(x + j), fmt);
                    AMPF_NAME(mx_lanes) L = AMPF_NAME(mx_scales_of)(AMPF_VSET1(sb));
                    if (sc) *sc = sb;
                    for (int k = 0; k < AMP_MX_BLOCK; k += AMPF_MX_LANES)
                        AMPF_NAME(mx_step)(elem ? elem + j + k : NULL, y ? y + j + k : NULL,
                                           AMPF_VLOAD(x + j + k), &L, &c, fmt, cnt);
                    continue;
                }
#endif
                AMPF_NAME(mx_block_scalar)(elem, sc, y, x, j, len, 1, fmt, cnt);
            }
    } else {
        for (size_t k0 = 0; k0 < rows; k0 += AMP_MX_BLOCK) {
            int n = (int)(rows - k0 < AMP_MX_BLOCK ? rows - k0 : AMP_MX_BLOCK);
            size_t c0 = 0;
#ifdef AMPF_MX_LANES
            for (; c0 + AMPF_MX_LANES <= cols; c0 += AMPF_MX_LANES) {
                const float *xc = x + k0 * cols + c0;
                __typeof__(AMPF_VZERO()) m = AMPF_VZERO();
                for (int i = 0; i < n; i++)
                    m = AMPF_VMAX(m, AMPF_NAME(abs_bits)(AMPF_VLOAD(xc + (size_t)i * cols)));
                AMPF_NAME(mx_lanes) L = AMPF_NAME(mx_lanes_of)(m, fmt);
                if (scales) AMPF_NAME(store_scales)(scales + (k0 / AMP_MX_BLOCK) * cols + c0, L.s);
                for (int i = 0; i < n; i++) {
                    size_t j = (k0 + (size_t)i) * cols + c0;
                    AMPF_NAME(mx_step)(elem ? elem + j : NULL, y ? y + j : NULL, AMPF_VLOAD(x + j),
                                       &L, &c, fmt, cnt);
                }
            }
#endif
            for (; c0 < cols; c0++)
                AMPF_NAME(mx_block_scalar)(elem,
                                           scales ? scales + (k0 / AMP_MX_BLOCK) * cols + c0 : NULL,
                                           y, x, k0 * cols + c0, n, cols, fmt, cnt);
        }
    }
    AMPF_NAME(mx_count)(st, cnt);
}

static void AMPF_NAME(mx_decode)(float *x, const uint8_t *elem, const uint8_t *scales, size_t rows,
                                 size_t cols, int along_cols, int fmt) {
    if (!along_cols) {
        size_t nb = (cols + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK;
        for (size_t r = 0; r < rows; r++)
            for (size_t b = 0; b < nb; b++) {
                size_t j = r * cols + b * AMP_MX_BLOCK;
                int len = (int)(cols - b * AMP_MX_BLOCK < AMP_MX_BLOCK ? cols - b * AMP_MX_BLOCK
                                                                       : AMP_MX_BLOCK);
                uint8_t s = scales[r * nb + b];
#ifdef AMPF_MX_LANES
                if (len == AMP_MX_BLOCK) {
                    AMPF_NAME(mx_lanes) L = AMPF_NAME(mx_scales_of)(AMPF_VSET1(s));
                    for (int k = 0; k < AMP_MX_BLOCK; k += AMPF_MX_LANES)
                        AMPF_NAME(mx_decode_step)(x + j + k, elem + j + k, &L, fmt);
                    continue;
                }
#endif
                AMPF_NAME(mx_decode_scalar)(x, elem, s, j, len, 1, fmt);
            }
        return;
    }
    for (size_t k0 = 0; k0 < rows; k0 += AMP_MX_BLOCK) {
        int n = (int)(rows - k0 < AMP_MX_BLOCK ? rows - k0 : AMP_MX_BLOCK);
        const uint8_t *sr = scales + (k0 / AMP_MX_BLOCK) * cols;
        size_t c0 = 0;
#ifdef AMPF_MX_LANES
        for (; c0 + AMPF_MX_LANES <= cols; c0 += AMPF_MX_LANES) {
            AMPF_NAME(mx_lanes) L = AMPF_NAME(mx_scales_of)(AMPF_NAME(load_scales)(sr + c0));
            for (int i = 0; i < n; i++) {
                size_t j = (k0 + (size_t)i) * cols + c0;
                AMPF_NAME(mx_decode_step)(x + j, elem + j, &L, fmt);
            }
        }
#endif
        for (; c0 < cols; c0++)
            AMPF_NAME(mx_decode_scalar)(x, elem, sr[c0], k0 * cols + c0, n, cols, fmt);
    }
}

static void AMPF_NAME(mx_quantize)(uint8_t *elem, uint8_t *scales, const float *x, size_t rows,
                                   size_t cols, int fmt) {
    AMPF_NAME(mx_pass)(elem, scales, NULL, x, rows, cols, 0, fmt, NULL);
}

static void AMPF_NAME(mx_dequantize)(float *x, const uint8_t *elem, const uint8_t *scales,
                                     size_t rows, size_t cols, int fmt) {
    AMPF_NAME(mx_decode)(x, elem, scales, rows, cols, 0, fmt);
}

#undef AMPF_MX_LANES
#undef AMPF_VLOAD
#undef AMPF_VMAX
#undef AMPF_VZERO
#undef AMPF_VSET1
