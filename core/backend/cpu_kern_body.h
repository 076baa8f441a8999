/* The element-wise kernels of cpu_kern.h, compiled once per path: the
 * including file defines AMPK_NAME(x) (the path's suffix) and AMPK_ISA, and
 * is compiled with that path's flags, so __AVX2__/__F16C__/__AVX512F__ pick
 * the intrinsic versions below. Everything else is plain C over the shared
 * per-element functions, vectorised by the compiler; -ffp-contract=off keeps
 * it from fusing a*b+c, so the bits are those of the scalar code. */
#include <math.h>
#include <string.h>

#include "backend/cpu_kern.h"
#include "backend/kernels/act.h"
#include "backend/kernels/convert.h"
#include "backend/kernels/optim.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#define AMPK_STATIC static __attribute__((unused))

/* ---- scalar pieces (the reference; also the vector loops' tails) -------- */

static void AMPK_NAME(round_scalar)(uint16_t *dst, const float *src, size_t n, int dt,
                                    amp_tally *t) {
    amp_tally l = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        unsigned f = 0;
        dst[i] = amp_round16(src[i], dt, &f);
        l.nz += f & AMP_RF_NONZERO;
        l.uf += (f & AMP_RF_UNDERFLOW) != 0;
        l.of += (f & AMP_RF_OVERFLOW) != 0;
    }
    if (t) {
        t->nz += l.nz;
        t->uf += l.uf;
        t->of += l.of;
    }
}

static void AMPK_NAME(widen_scalar)(float *dst, const uint16_t *src, size_t n, int dt) {
    if (dt == AMP_DTYPE_BF16)
        for (size_t i = 0; i < n; i++) dst[i] = amp_bf16_to_float(src[i]);
    else
        for (size_t i = 0; i < n; i++) dst[i] = amp_half_to_float(src[i]);
}

/* amp_unscale_element with the square going to lane[i % 8]: a non-finite
 * element, or a finite one whose product is not (stored, as there), adds 0
 * (which leaves a lane's non-negative sum unchanged). */
static void AMPK_NAME(unscale_scalar)(float *g, size_t i0, size_t n, float inv_scale,
                                      amp_unscale_acc *acc) {
    for (size_t i = i0; i < n; i++) {
        float v = g[i];
        int fin = isfinite(v);
        if (fin && inv_scale != 1.0f) {
            g[i] = v = v * inv_scale;
            fin = isfinite(v);
        }
        double sq = fin ? (double)v * (double)v : 0.0;
        acc->lane[i % 8] += sq;
        acc->bad += !fin;
        float a = fin ? fabsf(v) : 0.0f;
        if (a > acc->maxabs) acc->maxabs = a;
    }
}

/* ---- conversions ---------------------------------------------------------- */

#if defined(__AVX512F__) && defined(__AVX512BW__)
/* Vector counters flushed every this many vectors, so no 32-bit lane of
 * them can overflow whatever n is. */
#define AMPK_COUNT_BLOCK ((size_t)1 << 20)

/* dst(dt)[n] = round(src) and/or wide[n] = widen(round(src)) (either may be
 * NULL; wide may be src), counted into t unless NULL. dt is a constant at
 * every call, so each caller gets its own loop. */
static inline __attribute__((always_inline)) void
AMPK_NAME(round_body)(uint16_t *dst, float *wide, const float *src, size_t n, int dt, amp_tally *t) {
    size_t i = 0;
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i rmask = _mm512_set1_epi32(0x7fff), zero = _mm512_setzero_si512();
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i rinf = _mm512_set1_epi32(dt == AMP_DTYPE_BF16 ? 0x7f80 : 0x7c00);
    unsigned long long nz = 0, uf = 0, of = 0;
    while (i + 16 <= n) {
        size_t stop = n - i > 16 * AMPK_COUNT_BLOCK ? i + 16 * AMPK_COUNT_BLOCK : n;
        __m512i vnz = zero, vuf = zero, vof = zero;
        for (; i + 16 <= stop; i += 16) {
            __m512 v = _mm512_loadu_ps(src + i);
            __m512i u = _mm512_castps_si512(v), r32;
            __m256i h;
            if (dt == AMP_DTYPE_BF16) {
                __m512i hi = _mm512_srli_epi32(u, 16);
                __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, one));
                r32 = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
                __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, absm), inf);
                r32 = _mm512_mask_mov_epi32(r32, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
                h = _mm512_cvtepi32_epi16(r32);
            } else {
                h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
                r32 = _mm512_cvtepu16_epi32(h);
            }
            if (dst) _mm256_storeu_si256((__m256i *)(dst + i), h);
            if (wide)
                _mm512_storeu_ps(wide + i, dt == AMP_DTYPE_BF16
                                               ? _mm512_castsi512_ps(_mm512_slli_epi32(r32, 16))
                                               : _mm512_cvtph_ps(h));
            if (t) {
                __m512i a = _mm512_and_si512(u, absm);
                __mmask16 nzm = _mm512_cmpneq_epi32_mask(a, zero);
                __mmask16 nzfin = _mm512_mask_cmplt_epi32_mask(nzm, a, inf);
                __m512i ra = _mm512_and_si512(r32, rmask);
                vnz = _mm512_mask_add_epi32(vnz, nzm, vnz, one);
                vuf = _mm512_mask_add_epi32(vuf, _mm512_mask_cmpeq_epi32_mask(nzfin, ra, zero), vuf, one);
                vof = _mm512_mask_add_epi32(vof, _mm512_mask_cmpeq_epi32_mask(nzfin, ra, rinf), vof, one);
            }
        }
        nz += (unsigned)_mm512_reduce_add_epi32(vnz);
        uf += (unsigned)_mm512_reduce_add_epi32(vuf);
        of += (unsigned)_mm512_reduce_add_epi32(vof);
    }
    if (t) {
        t->nz += nz;
        t->uf += uf;
        t->of += of;
    }
    if (i < n) {
        uint16_t tail[16];
        AMPK_NAME(round_scalar)(tail, src + i, n - i, dt, t);
        if (dst) memcpy(dst + i, tail, (n - i) * sizeof *tail);
        if (wide) AMPK_NAME(widen_scalar)(wide + i, tail, n - i, dt);
    }
}

static void AMPK_NAME(widen16)(float *dst, const uint16_t *src, size_t n, int dt) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(src + i));
        __m512 v = dt == AMP_DTYPE_BF16
                       ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                       : _mm512_cvtph_ps(h);
        _mm512_storeu_ps(dst + i, v);
    }
    AMPK_NAME(widen_scalar)(dst + i, src + i, n - i, dt);
}

static void AMPK_NAME(unscale)(float *g, size_t n, float inv_scale, amp_unscale_acc *acc) {
    size_t i = 0;
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512 inv = _mm512_set1_ps(inv_scale);
    int scaled = inv_scale != 1.0f;
    __m512d s = _mm512_loadu_pd(acc->lane);
    __m512 mx = _mm512_set1_ps(acc->maxabs);
    unsigned long long bad = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(g + i);
        __m512i a = _mm512_and_si512(_mm512_castps_si512(v), absm);
        __mmask16 fin = _mm512_cmplt_epi32_mask(a, inf);
        if (scaled) { /* the product is checked too (it may overflow) */
            v = _mm512_mask_mul_ps(v, fin, v, inv);
            _mm512_storeu_ps(g + i, v);
            a = _mm512_and_si512(_mm512_castps_si512(v), absm);
            fin = _mm512_cmplt_epi32_mask(a, inf);
        }
        bad += 16u - (unsigned)__builtin_popcount(fin);
        __m512 vz = _mm512_maskz_mov_ps(fin, v);
        __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(vz));
        __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(vz), 1)));
        s = _mm512_add_pd(s, _mm512_mul_pd(lo, lo));
        s = _mm512_add_pd(s, _mm512_mul_pd(hi, hi));
        mx = _mm512_max_ps(mx, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(vz), absm)));
    }
    _mm512_storeu_pd(acc->lane, s);
    float m = _mm512_reduce_max_ps(mx);
    if (m > acc->maxabs) acc->maxabs = m;
    acc->bad += bad;
    AMPK_NAME(unscale_scalar)(g, i, n, inv_scale, acc);
}

#elif defined(__AVX2__) && defined(__F16C__)
#define AMPK_COUNT_BLOCK ((size_t)1 << 20) /* as in the AVX-512 branch */

/* As the AVX-512 branch's round_body; counts go to vector lanes (a compare
 * mask is -1 per lane, so subtracting it counts). */
static inline __attribute__((always_inline)) void
AMPK_NAME(round_body)(uint16_t *dst, float *wide, const float *src, size_t n, int dt, amp_tally *t) {
    size_t i = 0;
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i rmask = _mm256_set1_epi32(0x7fff), zero = _mm256_setzero_si256();
    const __m256i rinf = _mm256_set1_epi32(dt == AMP_DTYPE_BF16 ? 0x7f80 : 0x7c00);
    unsigned long long nz = 0, uf = 0, of = 0;
    while (i + 8 <= n) {
        size_t stop = n - i > 8 * AMPK_COUNT_BLOCK ? i + 8 * AMPK_COUNT_BLOCK : n, i0 = i;
        __m256i vz = zero, vuf = zero, vof = zero; /* zeros, underflows, overflows */
        for (; i + 8 <= stop; i += 8) {
            __m256 v = _mm256_loadu_ps(src + i);
            __m256i u = _mm256_castps_si256(v), r32;
            __m128i h;
            if (dt == AMP_DTYPE_BF16) {
                __m256i hi = _mm256_srli_epi32(u, 16);
                __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                                _mm256_and_si256(hi, _mm256_set1_epi32(1)));
                r32 = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
                __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absm), inf);
                r32 = _mm256_blendv_epi8(r32, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
                __m256i p = _mm256_packus_epi32(r32, r32); /* per 128-bit lane: r0-3 r0-3 | r4-7 r4-7 */
                h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08));
            } else {
                h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
                r32 = _mm256_cvtepu16_epi32(h);
            }
            if (dst) _mm_storeu_si128((__m128i *)(dst + i), h);
            if (wide)
                _mm256_storeu_ps(wide + i, dt == AMP_DTYPE_BF16
                                               ? _mm256_castsi256_ps(_mm256_slli_epi32(r32, 16))
                                               : _mm256_cvtph_ps(h));
            if (t) {
                __m256i a = _mm256_and_si256(u, absm);
                __m256i isz = _mm256_cmpeq_epi32(a, zero);
                __m256i nzfin = _mm256_andnot_si256(isz, _mm256_cmpgt_epi32(inf, a));
                __m256i ra = _mm256_and_si256(r32, rmask);
                vz = _mm256_sub_epi32(vz, isz);
                vuf = _mm256_sub_epi32(vuf, _mm256_and_si256(nzfin, _mm256_cmpeq_epi32(ra, zero)));
                vof = _mm256_sub_epi32(vof, _mm256_and_si256(nzfin, _mm256_cmpeq_epi32(ra, rinf)));
            }
        }
        if (t) {
            uint32_t cz[8], cu[8], co[8];
            _mm256_storeu_si256((__m256i *)cz, vz);
            _mm256_storeu_si256((__m256i *)cu, vuf);
            _mm256_storeu_si256((__m256i *)co, vof);
            nz += i - i0;
            for (int j = 0; j < 8; j++) nz -= cz[j], uf += cu[j], of += co[j];
        }
    }
    if (t) {
        t->nz += nz;
        t->uf += uf;
        t->of += of;
    }
    if (i < n) {
        uint16_t tail[8];
        AMPK_NAME(round_scalar)(tail, src + i, n - i, dt, t);
        if (dst) memcpy(dst + i, tail, (n - i) * sizeof *tail);
        if (wide) AMPK_NAME(widen_scalar)(wide + i, tail, n - i, dt);
    }
}

static void AMPK_NAME(widen16)(float *dst, const uint16_t *src, size_t n, int dt) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        __m256 v = dt == AMP_DTYPE_BF16
                       ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                       : _mm256_cvtph_ps(h);
        _mm256_storeu_ps(dst + i, v);
    }
    AMPK_NAME(widen_scalar)(dst + i, src + i, n - i, dt);
}

static void AMPK_NAME(unscale)(float *g, size_t n, float inv_scale, amp_unscale_acc *acc) {
    size_t i = 0;
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256 inv = _mm256_set1_ps(inv_scale);
    int scaled = inv_scale != 1.0f;
    __m256d s0 = _mm256_loadu_pd(acc->lane), s1 = _mm256_loadu_pd(acc->lane + 4);
    __m256 mx = _mm256_set1_ps(acc->maxabs);
    unsigned long long bad = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(g + i);
        __m256i a = _mm256_and_si256(_mm256_castps_si256(v), absm);
        __m256 fin = _mm256_castsi256_ps(_mm256_cmpgt_epi32(inf, a));
        if (scaled) { /* the product is checked too (it may overflow) */
            v = _mm256_blendv_ps(v, _mm256_mul_ps(v, inv), fin);
            _mm256_storeu_ps(g + i, v);
            a = _mm256_and_si256(_mm256_castps_si256(v), absm);
            fin = _mm256_castsi256_ps(_mm256_cmpgt_epi32(inf, a));
        }
        bad += 8u - (unsigned)__builtin_popcount((unsigned)_mm256_movemask_ps(fin));
        __m256 vz = _mm256_and_ps(v, fin);
        __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(vz));
        __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(vz, 1));
        s0 = _mm256_add_pd(s0, _mm256_mul_pd(lo, lo));
        s1 = _mm256_add_pd(s1, _mm256_mul_pd(hi, hi));
        mx = _mm256_max_ps(mx, _mm256_and_ps(vz, _mm256_castsi256_ps(absm)));
    }
    _mm256_storeu_pd(acc->lane, s0);
    _mm256_storeu_pd(acc->lane + 4, s1);
    float m8[8];
    _mm256_storeu_ps(m8, mx);
    for (int j = 0; j < 8; j++)
        if (m8[j] > acc->maxabs) acc->maxabs = m8[j];
    acc->bad += bad;
    AMPK_NAME(unscale_scalar)(g, i, n, inv_scale, acc);
}

#else /* generic */
/* As the vector branches' round_body, over tiles of the scalar pieces. */
static inline void AMPK_NAME(round_body)(uint16_t *dst, float *wide, const float *src, size_t n,
                                         int dt, amp_tally *t) {
    uint16_t tile[256];
    for (size_t i = 0; i < n; i += 256) {
        size_t len = n - i < 256 ? n - i : 256;
        uint16_t *h = dst ? dst + i : tile;
        AMPK_NAME(round_scalar)(h, src + i, len, dt, t);
        if (wide) AMPK_NAME(widen_scalar)(wide + i, h, len, dt);
    }
}

static void AMPK_NAME(widen16)(float *dst, const uint16_t *src, size_t n, int dt) {
    AMPK_NAME(widen_scalar)(dst, src, n, dt);
}

static void AMPK_NAME(unscale)(float *g, size_t n, float inv_scale, amp_unscale_acc *acc) {
    AMPK_NAME(unscale_scalar)(g, 0, n, inv_scale, acc);
}
#endif

/* The entry points: dt made a constant so each gets its own loop. */
static void AMPK_NAME(round16)(uint16_t *dst, const float *src, size_t n, int dt, amp_tally *t) {
    if (dt == AMP_DTYPE_BF16)
        AMPK_NAME(round_body)(dst, NULL, src, n, AMP_DTYPE_BF16, t);
    else
        AMPK_NAME(round_body)(dst, NULL, src, n, AMP_DTYPE_F16, t);
}

static void AMPK_NAME(round16_wide)(uint16_t *dst, float *wide, const float *src, size_t n, int dt,
                                    amp_tally *t) {
    if (dt == AMP_DTYPE_BF16)
        AMPK_NAME(round_body)(dst, wide, src, n, AMP_DTYPE_BF16, t);
    else
        AMPK_NAME(round_body)(dst, wide, src, n, AMP_DTYPE_F16, t);
}

static void AMPK_NAME(quantize16)(float *wide, const float *src, size_t n, int dt, amp_tally *t) {
    if (dt == AMP_DTYPE_BF16)
        AMPK_NAME(round_body)(NULL, wide, src, n, AMP_DTYPE_BF16, t);
    else
        AMPK_NAME(round_body)(NULL, wide, src, n, AMP_DTYPE_F16, t);
}

/* ---- plain loops, vectorised by the compiler ------------------------------ */

static void AMPK_NAME(add)(float *restrict y, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

static void AMPK_NAME(act)(float *y, const float *x, size_t n, int act) {
    if (act == 1) {
        for (size_t i = 0; i < n; i++) y[i] = amp_relu(x[i]);
    } else if (act == 2) {
        for (size_t i = 0; i < n; i++) y[i] = amp_gelu(x[i]);
    } else if (act == 3) {
        for (size_t i = 0; i < n; i++) y[i] = amp_gelu_tanh(x[i]);
    } else if (y != x) {
        memmove(y, x, n * sizeof *y);
    }
}

/* y = da * relu'(z) over the vector part of n, as the scalar loop computes
 * it (da * 1 or da * 0, so NaN and inf give what they give there); returns
 * how many elements it did. The compiler does not vectorise the scalar
 * loop (y may alias da), and its branch mispredicts on random signs. */
static size_t AMPK_NAME(relu_grad_mul_vec)(float *y, const float *da, const float *z, size_t n) {
    size_t i = 0;
#if defined(__AVX512F__)
    const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        __mmask16 pos = _mm512_cmp_ps_mask(_mm512_loadu_ps(z + i), zero, _CMP_GT_OQ);
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(da + i), _mm512_maskz_mov_ps(pos, one)));
    }
#elif defined(__AVX2__)
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        __m256 pos = _mm256_cmp_ps(_mm256_loadu_ps(z + i), zero, _CMP_GT_OQ);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(da + i), _mm256_and_ps(pos, one)));
    }
#else
    (void)y, (void)da, (void)z, (void)n;
#endif
    return i;
}

static void AMPK_NAME(act_grad_mul)(float *y, const float *da, const float *z, size_t n,
                                    int act) {
    if (act == 1) {
        for (size_t i = AMPK_NAME(relu_grad_mul_vec)(y, da, z, n); i < n; i++)
            y[i] = da[i] * amp_relu_grad(z[i]);
    } else if (act == 2) {
        for (size_t i = 0; i < n; i++) y[i] = da[i] * amp_gelu_grad(z[i]);
    } else if (act == 3) {
        for (size_t i = 0; i < n; i++) y[i] = da[i] * amp_gelu_tanh_grad(z[i]);
    } else {
        for (size_t i = 0; i < n; i++) y[i] = da[i] * 1.0f;
    }
}

static void AMPK_NAME(acc_add)(float *restrict dst, const float *restrict q, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float d = dst[i], x = q[i];
        dst[i] = x != x ? x + x : d + x;
    }
}

static void AMPK_NAME(col_sum)(float *restrict out, const float *restrict in, size_t rows,
                               size_t cols, size_t ld) {
    for (size_t j = 0; j < cols; j++) out[j] = 0.0f;
    for (size_t r = 0; r < rows; r++) {
        const float *row = in + r * ld;
        for (size_t j = 0; j < cols; j++) out[j] += row[j];
    }
}

static void AMPK_NAME(sgd)(float *restrict w, float *restrict mom, const float *restrict g,
                           size_t n, float lr, float momentum, float wd) {
    if (momentum != 0.0f)
        for (size_t i = 0; i < n; i++) amp_sgd_element(&w[i], &mom[i], g[i], lr, momentum, wd);
    else
        for (size_t i = 0; i < n; i++) amp_sgd_element(&w[i], &mom[i], g[i], lr, 0.0f, wd);
}

static void AMPK_NAME(adamw)(float *restrict w, float *restrict m, float *restrict v,
                             const float *restrict g, size_t n, float lr, float beta1, float beta2,
                             float eps, float wd, float bc1, float bc2_sqrt) {
    for (size_t i = 0; i < n; i++)
        amp_adamw_element(&w[i], &m[i], &v[i], g[i], lr, beta1, beta2, eps, wd, bc1, bc2_sqrt);
}

static void AMPK_NAME(scale)(float *x, size_t n, float s) {
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

static const amp_cpu_kern AMPK_NAME(table) = {
    .isa = AMPK_ISA,
    .round16 = AMPK_NAME(round16),
    .widen16 = AMPK_NAME(widen16),
    .round16_wide = AMPK_NAME(round16_wide),
    .quantize16 = AMPK_NAME(quantize16),
    .add = AMPK_NAME(add),
    .act = AMPK_NAME(act),
    .act_grad_mul = AMPK_NAME(act_grad_mul),
    .acc_add = AMPK_NAME(acc_add),
    .col_sum = AMPK_NAME(col_sum),
    .unscale = AMPK_NAME(unscale),
    .sgd = AMPK_NAME(sgd),
    .adamw = AMPK_NAME(adamw),
    .scale = AMPK_NAME(scale),
};
