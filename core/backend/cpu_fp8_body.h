/* The FP8 kernels of cpu_fp8.h, compiled once per path: the including file
 * defines AMPF_NAME(x) (the path's suffix) and AMPF_ISA and is compiled
 * with the path's flags, so __AVX2__ / __AVX512F__ pick the intrinsic
 * quantize below; the rest is plain C over the per-element functions.
 *
 * The vector cast is a second, independent implementation of
 * amp_float_to_fp8: normals round with the same integer RNE on the bits,
 * but subnormals round by one FP32 add of a "magic" power of two (2^14 for
 * E4M3, 2^7 for E5M2: its ulp is the format's smallest subnormal), which
 * the FPU rounds to nearest even (MXCSR's default; with DAZ set, the FP32
 * subnormals it would zero round to 0 anyway). */
#include <string.h>

#include "backend/cpu_fp8.h"
#include "backend/kernels/fp8.h"
#include "backend/kernels/mx.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

/* ---- scalar pieces (the reference, the generic path and vector tails) --- */

static void AMPF_NAME(quantize_scalar)(uint8_t *q, const float *x, size_t i0, size_t n,
                                       float scale, int fmt, amp_fp8_stats *st) {
    uint32_t amax = amp_f32_bits(st->amax);
    for (size_t i = i0; i < n; i++) {
        unsigned f;
        q[i] = amp_fp8_quantize_element(x[i], scale, fmt, &f);
        uint32_t a = amp_f32_bits(x[i]) & 0x7fffffffu;
        if (a <= 0x7f800000u && a > amax) amax = a;
        st->saturated += (f & AMP_F8_SATURATED) != 0;
        st->flushed += (f & AMP_F8_FLUSHED) != 0;
        st->nan += (f & AMP_F8_NAN) != 0;
    }
    st->amax = amp_f32_from_bits(amax);
}

/* Per-format constants of the vector cast. */
typedef struct AMPF_NAME(fp8_consts) {
    uint32_t max, rebias, min_normal, drop, round, magic;
} AMPF_NAME(fp8_consts);

static __attribute__((unused)) AMPF_NAME(fp8_consts) AMPF_NAME(consts_of)(int fmt) {
    AMPF_NAME(fp8_consts) c;
    int e5 = fmt == AMP_FP8_E5M2;
    c.max = amp_fp8_max_bits(fmt);
    c.rebias = (e5 ? 112u : 120u) << 23;
    c.min_normal = c.rebias + (1u << 23);
    c.drop = e5 ? 21u : 20u;
    c.round = (1u << (c.drop - 1u)) - 1u;
    c.magic = (e5 ? 134u : 141u) << 23; /* 2^7 / 2^14: ulp = smallest subnormal */
    return c;
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
/* Codes (one per 32-bit lane) of cast(clamp(v)); *sat and *nan get the
 * lanes that were clamped and the NaN ones. */
static inline __attribute__((always_inline)) __m512i
AMPF_NAME(cast_vec)(__m512 v, const AMPF_NAME(fp8_consts) *c, __mmask16 *sat, __mmask16 *nan) {
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i maxb = _mm512_set1_epi32((int)c->max);
    __m512i u = _mm512_castps_si512(v);
    __m512i sign = _mm512_srli_epi32(_mm512_andnot_si512(absm, u), 24);
    __m512i a = _mm512_and_si512(u, absm);
    *nan = _mm512_cmpgt_epu32_mask(a, inf);
    *sat = _mm512_mask_cmpgt_epu32_mask((__mmask16)~*nan, a, maxb);
    a = _mm512_min_epu32(a, maxb);
    __m512i r = _mm512_sub_epi32(a, _mm512_set1_epi32((int)c->rebias));
    __m512i odd = _mm512_and_si512(_mm512_srl_epi32(r, _mm_cvtsi32_si128((int)c->drop)),
                                   _mm512_set1_epi32(1));
    r = _mm512_add_epi32(r, _mm512_add_epi32(_mm512_set1_epi32((int)c->round), odd));
    __m512i rn = _mm512_srl_epi32(r, _mm_cvtsi32_si128((int)c->drop));
    __m512 magic = _mm512_castsi512_ps(_mm512_set1_epi32((int)c->magic));
    __m512i sub = _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), magic)),
                                   _mm512_set1_epi32((int)c->magic));
    __mmask16 normal = _mm512_cmpge_epu32_mask(a, _mm512_set1_epi32((int)c->min_normal));
    __m512i code = _mm512_mask_mov_epi32(sub, normal, rn);
    code = _mm512_mask_mov_epi32(code, *nan, _mm512_set1_epi32((int)AMP_FP8_NAN));
    return _mm512_or_si512(code, sign);
}

static void AMPF_NAME(quantize)(uint8_t *q, const float *x, size_t n, float scale, int fmt,
                                amp_fp8_stats *st) {
    const AMPF_NAME(fp8_consts) c = AMPF_NAME(consts_of)(fmt);
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i low7 = _mm512_set1_epi32(0x7f), zero = _mm512_setzero_si512();
    const __m512 vs = _mm512_set1_ps(scale);
    __m512i vmax = _mm512_set1_epi32((int)amp_f32_bits(st->amax));
    unsigned long long nsat = 0, nflush = 0, nnan = 0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 xv = _mm512_loadu_ps(x + i);
        __mmask16 sat, nan;
        __m512i code = AMPF_NAME(cast_vec)(_mm512_mul_ps(xv, vs), &c, &sat, &nan);
        _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtepi32_epi8(code));
        __m512i xa = _mm512_and_si512(_mm512_castps_si512(xv), absm);
        __mmask16 xnum = _mm512_cmple_epu32_mask(xa, inf); /* not NaN */
        vmax = _mm512_mask_max_epu32(vmax, xnum, vmax, xa);
        __mmask16 live = _mm512_mask_cmpneq_epi32_mask(xnum, xa, zero);
        __mmask16 flush = _mm512_mask_cmpeq_epi32_mask(live, _mm512_and_si512(code, low7), zero);
        nsat += (unsigned)__builtin_popcount(sat);
        nflush += (unsigned)__builtin_popcount(flush);
        nnan += (unsigned)__builtin_popcount(nan);
    }
    st->amax = amp_f32_from_bits((uint32_t)_mm512_reduce_max_epu32(vmax));
    st->saturated += nsat;
    st->flushed += nflush;
    st->nan += nnan;
    AMPF_NAME(quantize_scalar)(q, x, i, n, scale, fmt, st);
}


#elif defined(__AVX2__)
/* As the AVX-512 branch's (compare results are -1 per lane here). */
static inline __attribute__((always_inline)) __m256i
AMPF_NAME(cast_vec)(__m256 v, const AMPF_NAME(fp8_consts) *c, __m256i *sat, __m256i *nan) {
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i maxb = _mm256_set1_epi32((int)c->max);
    __m256i u = _mm256_castps_si256(v);
    __m256i sign = _mm256_srli_epi32(_mm256_andnot_si256(absm, u), 24);
    __m256i a = _mm256_and_si256(u, absm); /* magnitudes: signed compares are exact */
    *nan = _mm256_cmpgt_epi32(a, inf);
    *sat = _mm256_andnot_si256(*nan, _mm256_cmpgt_epi32(a, maxb));
    a = _mm256_min_epi32(a, maxb);
    __m256i r = _mm256_sub_epi32(a, _mm256_set1_epi32((int)c->rebias));
    __m128i drop = _mm_cvtsi32_si128((int)c->drop);
    __m256i odd = _mm256_and_si256(_mm256_srl_epi32(r, drop), _mm256_set1_epi32(1));
    r = _mm256_add_epi32(r, _mm256_add_epi32(_mm256_set1_epi32((int)c->round), odd));
    __m256i rn = _mm256_srl_epi32(r, drop);
    __m256 magic = _mm256_castsi256_ps(_mm256_set1_epi32((int)c->magic));
    __m256i sub = _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(a), magic)),
                                   _mm256_set1_epi32((int)c->magic));
    __m256i normal = _mm256_cmpgt_epi32(a, _mm256_set1_epi32((int)c->min_normal - 1));
    __m256i code = _mm256_blendv_epi8(sub, rn, normal);
    code = _mm256_blendv_epi8(code, _mm256_set1_epi32((int)AMP_FP8_NAN), *nan);
    return _mm256_or_si256(code, sign);
}

static inline int AMPF_NAME(count)(__m256i m) {
    return __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)));
}

static void AMPF_NAME(quantize)(uint8_t *q, const float *x, size_t n, float scale, int fmt,
                                amp_fp8_stats *st) {
    const AMPF_NAME(fp8_consts) c = AMPF_NAME(consts_of)(fmt);
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i low7 = _mm256_set1_epi32(0x7f), zero = _mm256_setzero_si256();
    /* byte 0 of each dword to the low 4 bytes of each 128-bit lane, then
     * the two lanes' dwords 0 and 4 together */
    const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i join = _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1);
    const __m256 vs = _mm256_set1_ps(scale);
    __m256i vmax = _mm256_set1_epi32((int)amp_f32_bits(st->amax));
    unsigned long long nsat = 0, nflush = 0, nnan = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        __m256i sat, nan;
        __m256i code = AMPF_NAME(cast_vec)(_mm256_mul_ps(xv, vs), &c, &sat, &nan);
        __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(code, pick), join);
        _mm_storel_epi64((__m128i *)(q + i), _mm256_castsi256_si128(bytes));
        __m256i xa = _mm256_and_si256(_mm256_castps_si256(xv), absm);
        __m256i xnan = _mm256_cmpgt_epi32(xa, inf);
        vmax = _mm256_max_epi32(vmax, _mm256_andnot_si256(xnan, xa));
        __m256i live = _mm256_andnot_si256(_mm256_or_si256(xnan, _mm256_cmpeq_epi32(xa, zero)),
                                           _mm256_cmpeq_epi32(_mm256_and_si256(code, low7), zero));
        nsat += (unsigned)AMPF_NAME(count)(sat);
        nflush += (unsigned)AMPF_NAME(count)(live);
        nnan += (unsigned)AMPF_NAME(count)(nan);
    }
    uint32_t m8[8], m = 0;
    _mm256_storeu_si256((__m256i *)m8, vmax);
    for (int j = 0; j < 8; j++) m = m8[j] > m ? m8[j] : m;
    st->amax = amp_f32_from_bits(m);
    st->saturated += nsat;
    st->flushed += nflush;
    st->nan += nnan;
    AMPF_NAME(quantize_scalar)(q, x, i, n, scale, fmt, st);
}


#else /* generic */
static void AMPF_NAME(quantize)(uint8_t *q, const float *x, size_t n, float scale, int fmt,
                                amp_fp8_stats *st) {
    AMPF_NAME(quantize_scalar)(q, x, 0, n, scale, fmt, st);
}
#endif

/* ---- plain loops ----------------------------------------------------------- */

/* An FP8 code's value from its bits, branch-free (so the loops vectorise;
 * a 256-entry table cost a gather per element and its build per call):
 * amp_e4m3_to_float / amp_e5m2_to_float's values, NaNs included. Normals
 * rebias the exponent; subnormals are m * 2^-9 (E4M3) or m * 2^-16 (E5M2),
 * exact; E4M3's one NaN is sign | 0x7ff00000; E5M2's inf and NaNs are the
 * FP16 ones widened, NaNs quieted. */
static inline float AMPF_NAME(e4m3_value)(uint32_t b) {
    uint32_t sign = (b & 0x80u) << 24, e = (b >> 3) & 15u, m = b & 7u;
    uint32_t normal = sign | ((e + 120u) << 23) | (m << 20);
    uint32_t sub = sign | amp_f32_bits((float)(int32_t)m * (1.0f / 512.0f));
    uint32_t nan = sign | 0x7ff00000u;
    uint32_t is_sub = 0u - (uint32_t)(e == 0u), is_nan = 0u - (uint32_t)((b & 0x7fu) == 0x7fu);
    return amp_f32_from_bits((((normal & ~is_sub) | (sub & is_sub)) & ~is_nan) | (nan & is_nan));
}

static inline float AMPF_NAME(e5m2_value)(uint32_t b) {
    uint32_t sign = (b & 0x80u) << 24, e = (b >> 2) & 31u, m = b & 3u;
    uint32_t normal = sign | ((e + 112u) << 23) | (m << 21);
    uint32_t sub = sign | amp_f32_bits((float)(int32_t)m * (1.0f / 65536.0f));
    uint32_t special = sign | 0x7f800000u | (m << 21) | ((0u - (uint32_t)(m != 0u)) & 0x400000u);
    uint32_t is_sub = 0u - (uint32_t)(e == 0u), is_sp = 0u - (uint32_t)(e == 31u);
    return amp_f32_from_bits((((normal & ~is_sub) | (sub & is_sub)) & ~is_sp) | (special & is_sp));
}

static void AMPF_NAME(dequantize)(float *restrict x, const uint8_t *restrict q, size_t n,
                                  float inv_scale, int fmt) {
    if (fmt == AMP_FP8_E5M2)
        for (size_t i = 0; i < n; i++) x[i] = AMPF_NAME(e5m2_value)(q[i]) * inv_scale;
    else
        for (size_t i = 0; i < n; i++) x[i] = AMPF_NAME(e4m3_value)(q[i]) * inv_scale;
}

#include "backend/cpu_fp8_mx_body.h"
#include "backend/cpu_nvfp4_body.h"

static const amp_cpu_fp8 AMPF_NAME(fp8_table) = {
    .isa = AMPF_ISA,
    .quantize = AMPF_NAME(quantize),
    .dequantize = AMPF_NAME(dequantize),
    .mx_quantize = AMPF_NAME(mx_quantize),
    .mx_dequantize = AMPF_NAME(mx_dequantize),
    .mx_pass = AMPF_NAME(mx_pass),
    .mx_decode = AMPF_NAME(mx_decode),
    .nvfp4_quantize = AMPF_NAME(nvfp4_quantize),
    .nvfp4_dequantize = AMPF_NAME(nvfp4_dequantize),
    .nvfp4_qdq = AMPF_NAME(nvfp4_qdq),
};
