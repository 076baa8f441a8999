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

/* ---- scalar pieces (the reference, and the generic path) --------------- */

AMPK_STATIC void AMPK_NAME(round_scalar)(uint16_t *dst, const float *src, size_t n, int dt,
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

AMPK_STATIC void AMPK_NAME(widen_scalar)(float *dst, const uint16_t *src, size_t n, int dt) {
    if (dt == AMP_DTYPE_BF16)
        for (size_t i = 0; i < n; i++) dst[i] = amp_bf16_to_float(src[i]);
    else
        for (size_t i = 0; i < n; i++) dst[i] = amp_half_to_float(src[i]);
}

/* round_body's elements [i, n) past its last full vector (fewer than 16):
 * the scalar pieces through a 16-bit tile. */
static inline void AMPK_NAME(round_tail)(uint16_t *dst, float *wide, const float *src, size_t i,
                                         size_t n, int dt, amp_tally *t) {
    uint16_t tail[16];
    if (i >= n) return;
    AMPK_NAME(round_scalar)(tail, src + i, n - i, dt, t);
    if (dst) memcpy(dst + i, tail, (n - i) * sizeof *tail);
    if (wide) AMPK_NAME(widen_scalar)(wide + i, tail, n - i, dt);
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
    AMPK_NAME(round_tail)(dst, wide, src, i, n, dt, t);
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
    if (i < n) { /* the tail as one padded vector */
        uint16_t pad[16] = {0};
        float out[16];
        memcpy(pad, src + i, (n - i) * sizeof *pad);
        AMPK_NAME(widen16)(out, pad, 16, dt);
        memcpy(dst + i, out, (n - i) * sizeof *out);
    }
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
/* The counters of round_body: 16-bit lanes, each lane gaining at most one a
 * group, flushed after this many groups so none passes 32767. */
#define AMPK_COUNT_BLOCK ((size_t)32767)

typedef struct {
    __m256i z, inf, r0, rinf; /* inputs +-0, inputs +-inf, results +-0, results +-inf */
} AMPK_NAME(round_counts);

/* Sum of the 16 lanes of c (each 0..32767). */
static inline unsigned long long AMPK_NAME(lanes16_sum)(__m256i c) {
    __m256i s = _mm256_madd_epi16(c, _mm256_set1_epi16(1));
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    return (unsigned)_mm_cvtsi128_si32(x);
}

/* The lanes [0, len) of 8 (len may be <= 0 or > 8) as a mask. */
static inline __m256i AMPK_NAME(lanes_below)(long len) {
    long c = len < 0 ? 0 : len > 8 ? 8 : len;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* One group of 16 floats v0, v1: their results (in order), and the
 * widened results in *w0, *w1 when wide; counted into c unless NULL, the
 * inputs' +-0 and +-inf only when inputs. A compare mask is -1 a lane, so
 * subtracting it counts; the input masks are packed to 16 bits to share
 * the results' lanes (their order does not matter to a sum). */
static inline __attribute__((always_inline)) __m256i
AMPK_NAME(round_group)(__m256 v0, __m256 v1, int dt, int wide, __m256 *w0, __m256 *w1,
                       AMPK_NAME(round_counts) *c, int inputs) {
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    __m256i u0 = _mm256_castps_si256(v0), u1 = _mm256_castps_si256(v1);
    __m256i a0 = _mm256_and_si256(u0, absm), a1 = _mm256_and_si256(u1, absm);
    __m256i h;
    if (dt == AMP_DTYPE_BF16) {
        const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
        __m256i hi0 = _mm256_srli_epi32(u0, 16), hi1 = _mm256_srli_epi32(u1, 16);
        __m256i r0 = _mm256_srli_epi32(
            _mm256_add_epi32(u0, _mm256_add_epi32(half, _mm256_and_si256(hi0, one))), 16);
        __m256i r1 = _mm256_srli_epi32(
            _mm256_add_epi32(u1, _mm256_add_epi32(half, _mm256_and_si256(hi1, one))), 16);
        __m256i nan0 = _mm256_cmpgt_epi32(a0, inf), nan1 = _mm256_cmpgt_epi32(a1, inf);
        __m256i nan = _mm256_or_si256(nan0, nan1);
        if (!_mm256_testz_si256(nan, nan)) { /* NaNs keep their sign and payload, quieted */
            const __m256i quiet = _mm256_set1_epi32(0x40);
            r0 = _mm256_blendv_epi8(r0, _mm256_or_si256(hi0, quiet), nan0);
            r1 = _mm256_blendv_epi8(r1, _mm256_or_si256(hi1, quiet), nan1);
        }
        /* packus per 128-bit lane: r0 0-3, r1 0-3 | r0 4-7, r1 4-7 */
        h = _mm256_permute4x64_epi64(_mm256_packus_epi32(r0, r1), 0xd8);
        if (wide) {
            *w0 = _mm256_castsi256_ps(_mm256_slli_epi32(r0, 16));
            *w1 = _mm256_castsi256_ps(_mm256_slli_epi32(r1, 16));
        }
    } else {
        __m128i h0 = _mm256_cvtps_ph(v0, _MM_FROUND_TO_NEAREST_INT);
        __m128i h1 = _mm256_cvtps_ph(v1, _MM_FROUND_TO_NEAREST_INT);
        h = _mm256_inserti128_si256(_mm256_castsi128_si256(h0), h1, 1);
        if (wide) {
            *w0 = _mm256_cvtph_ps(h0);
            *w1 = _mm256_cvtph_ps(h1);
        }
    }
    if (c) {
        const __m256i zero = _mm256_setzero_si256();
        __m256i ra = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
        __m256i rinf = _mm256_set1_epi16(dt == AMP_DTYPE_BF16 ? 0x7f80 : 0x7c00);
        c->r0 = _mm256_sub_epi16(c->r0, _mm256_cmpeq_epi16(ra, zero));
        c->rinf = _mm256_sub_epi16(c->rinf, _mm256_cmpeq_epi16(ra, rinf));
        if (inputs) {
            c->z = _mm256_sub_epi16(c->z, _mm256_packs_epi32(_mm256_cmpeq_epi32(a0, zero),
                                                             _mm256_cmpeq_epi32(a1, zero)));
            c->inf = _mm256_sub_epi16(c->inf, _mm256_packs_epi32(_mm256_cmpeq_epi32(a0, inf),
                                                                 _mm256_cmpeq_epi32(a1, inf)));
        }
    }
    return h;
}

/* The groups [i, i + 16 groups) of round_body, then its tail when len
 * (1..15) elements follow them, through masked loads that read the missing
 * lanes as +0. inputs as round_group's. */
static inline __attribute__((always_inline)) void
AMPK_NAME(round_groups)(uint16_t *dst, float *wide, const float *src, size_t i, size_t groups,
                        long len, int dt, AMPK_NAME(round_counts) *cp, int inputs) {
    __m256 w0 = _mm256_setzero_ps(), w1 = w0;
    for (size_t g = 0; g < groups; g++, i += 16) {
        __m256i h = AMPK_NAME(round_group)(_mm256_loadu_ps(src + i), _mm256_loadu_ps(src + i + 8), dt,
                                           wide != NULL, &w0, &w1, cp, inputs);
        if (dst) _mm256_storeu_si256((__m256i *)(dst + i), h);
        if (wide) {
            _mm256_storeu_ps(wide + i, w0);
            _mm256_storeu_ps(wide + i + 8, w1);
        }
    }
    if (len <= 0) return;
    __m256i m0 = AMPK_NAME(lanes_below)(len), m1 = AMPK_NAME(lanes_below)(len - 8);
    __m256i h = AMPK_NAME(round_group)(_mm256_maskload_ps(src + i, m0),
                                       _mm256_maskload_ps(src + i + 8, m1), dt, wide != NULL, &w0,
                                       &w1, cp, inputs);
    if (dst) {
        uint16_t tail[16];
        _mm256_storeu_si256((__m256i *)tail, h);
        for (long j = 0; j < len; j++) dst[i + (size_t)j] = tail[j];
    }
    if (wide) {
        _mm256_maskstore_ps(wide + i, m0, w0);
        _mm256_maskstore_ps(wide + i + 8, m1, w1);
    }
}

/* How many of the floats that round_groups(.., i, groups, len, ..) read
 * have |x| == target (its bits: 0 or 0x7f800000), the tail's missing lanes
 * read as +0 as there. groups < AMPK_COUNT_BLOCK. */
static inline unsigned long long AMPK_NAME(count_equal)(const float *src, size_t i, size_t groups,
                                                        long len, int target) {
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), want = _mm256_set1_epi32(target);
    __m256i c = _mm256_setzero_si256();
    for (size_t g = 0; g < groups; g++, i += 16) {
        __m256i a0 = _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(src + i)), absm);
        __m256i a1 = _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(src + i + 8)), absm);
        c = _mm256_sub_epi16(c, _mm256_packs_epi32(_mm256_cmpeq_epi32(a0, want),
                                                   _mm256_cmpeq_epi32(a1, want)));
    }
    if (len > 0) {
        __m256i m0 = AMPK_NAME(lanes_below)(len), m1 = AMPK_NAME(lanes_below)(len - 8);
        __m256i a0 = _mm256_and_si256(_mm256_castps_si256(_mm256_maskload_ps(src + i, m0)), absm);
        __m256i a1 = _mm256_and_si256(_mm256_castps_si256(_mm256_maskload_ps(src + i + 8, m1)), absm);
        c = _mm256_sub_epi16(c, _mm256_packs_epi32(_mm256_cmpeq_epi32(a0, want),
                                                   _mm256_cmpeq_epi32(a1, want)));
    }
    return AMPK_NAME(lanes16_sum)(c);
}

/* Groups a block when round_body counts the inputs afterwards: 4 KiB of
 * them, still in L1 when a block is read again. */
#define AMPK_LAZY_BLOCK ((size_t)64)
/* Shorter calls count the inputs as they read them: a second pass over a
 * few groups costs more than it saves (bench_convert). */
#define AMPK_LAZY_MIN ((size_t)128)

/* Adds the lanes of every counter of c to the four sums. */
static inline void AMPK_NAME(counts_add)(const AMPK_NAME(round_counts) *c, unsigned long long *z,
                                         unsigned long long *inf, unsigned long long *r0,
                                         unsigned long long *rinf) {
    *z += AMPK_NAME(lanes16_sum)(c->z);
    *inf += AMPK_NAME(lanes16_sum)(c->inf);
    *r0 += AMPK_NAME(lanes16_sum)(c->r0);
    *rinf += AMPK_NAME(lanes16_sum)(c->rinf);
}

/* The tallies of n rounded elements from the sums of inputs +-0 (z), +-inf
 * and results +-0 (r0), +-inf: every group counted 16 elements, n and the
 * tail's padding as zeros. */
static inline void AMPK_NAME(tally_add)(amp_tally *t, size_t n, unsigned long long z,
                                        unsigned long long inf, unsigned long long r0,
                                        unsigned long long rinf) {
    t->nz += ((unsigned long long)n + 15) / 16 * 16 - z;
    t->uf += r0 - z;
    t->of += rinf - inf;
}

/* As the AVX-512 branch's round_body, in groups of 16. A result is +-0 for
 * an input +-0 or an underflow and +-inf for an input +-inf or an overflow
 * (a NaN stays a NaN), so underflows and overflows are those counts less
 * the inputs'. An input can be +-0 (+-inf) only where a result is, so the
 * inputs are counted afterwards, per block of AMPK_LAZY_BLOCK groups and
 * only in the blocks that have such results: most blocks have none, and
 * they skip half of the counting. Calls shorter than AMPK_LAZY_MIN are one
 * block without the loop around it, and they, and calls whose wide
 * overlaps src (the inputs are gone by the end of a block), count the
 * inputs as they read them. The tail is one group whose missing lanes load
 * as +0, which adds as many zero inputs as zero results and so leaves
 * every tally as it is. */
static inline __attribute__((always_inline)) void
AMPK_NAME(round_body)(uint16_t *dst, float *wide, const float *src, size_t n, int dt, amp_tally *t) {
    unsigned long long z = 0, inf = 0, r0 = 0, rinf = 0;
    if (n < AMPK_LAZY_MIN) {
        AMPK_NAME(round_counts) c = {_mm256_setzero_si256(), _mm256_setzero_si256(),
                                     _mm256_setzero_si256(), _mm256_setzero_si256()};
        AMPK_NAME(round_groups)(dst, wide, src, 0, n / 16, (long)(n % 16), dt, t ? &c : NULL, 1);
        if (t) {
            AMPK_NAME(counts_add)(&c, &z, &inf, &r0, &rinf);
            AMPK_NAME(tally_add)(t, n, z, inf, r0, rinf);
        }
        return;
    }
    uintptr_t s0 = (uintptr_t)src, w0 = (uintptr_t)wide, bytes = n * sizeof *src;
    int later = t && !(wide && w0 < s0 + bytes && s0 < w0 + bytes);
    size_t block = later ? AMPK_LAZY_BLOCK : AMPK_COUNT_BLOCK - 1; /* room for a tail */
    size_t i = 0;
    do {
        size_t groups = (n - i) / 16;
        if (groups > block) groups = block;
        long len = groups < block ? (long)(n - i - 16 * groups) : 0;
        AMPK_NAME(round_counts) c = {_mm256_setzero_si256(), _mm256_setzero_si256(),
                                     _mm256_setzero_si256(), _mm256_setzero_si256()};
        if (!t)
            AMPK_NAME(round_groups)(dst, wide, src, i, groups, len, dt, NULL, 0);
        else if (later)
            AMPK_NAME(round_groups)(dst, wide, src, i, groups, len, dt, &c, 0);
        else
            AMPK_NAME(round_groups)(dst, wide, src, i, groups, len, dt, &c, 1);
        if (later) { /* a block's inputs read again only where its results have +-0 or +-inf */
            if (!_mm256_testz_si256(c.r0, c.r0)) {
                r0 += AMPK_NAME(lanes16_sum)(c.r0);
                z += AMPK_NAME(count_equal)(src, i, groups, len, 0);
            }
            if (!_mm256_testz_si256(c.rinf, c.rinf)) {
                rinf += AMPK_NAME(lanes16_sum)(c.rinf);
                inf += AMPK_NAME(count_equal)(src, i, groups, len, 0x7f800000);
            }
        } else if (t) {
            AMPK_NAME(counts_add)(&c, &z, &inf, &r0, &rinf);
        }
        i += 16 * groups + (size_t)len;
    } while (i < n);
    if (t) AMPK_NAME(tally_add)(t, n, z, inf, r0, rinf);
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
    /* the tail one by one (a padded vector would wait on its stores) */
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

/* ---- expf over an array, with libm's bits --------------------------------- */
/* glibc's expf (2.28 and later, sysdeps/ieee754/flt-32/e_expf.c) as its
 * x86-64 FMA build (__expf_fma, what libm's resolver picks on every CPU
 * with AVX2 and FMA) computes it, in vector registers: in double, k = round(x
 * 32/ln2) through the 1.5*2^52 shift, r = x 32/ln2 - k (one FMA), 2^(k/32)
 * from a 32-entry table, a cubic in r with three FMAs, one product, one
 * rounding to float. The same operations in the same order give the same
 * bits as the scalar call (tests/test_cpu_kernels.c checks it against
 * expf); |x| >= 88 and NaN lanes (where glibc branches) take the scalar
 * call. */
#if (defined(__AVX512F__) && defined(__AVX512DQ__)) || (defined(__AVX2__) && defined(__FMA__))
static const uint64_t AMPK_NAME(exp_tab)[32] __attribute__((aligned(64))) = {
    0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full, 0x3fef9301d0125b51ull,
    0x3fef72b83c7d517bull, 0x3fef54873168b9aaull, 0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull,
    0x3fef06fe0a31b715ull, 0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
    0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull, 0x3feea47eb03a5585ull,
    0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull, 0x3feea11473eb0187ull, 0x3feea589994cce13ull,
    0x3feeace5422aa0dbull, 0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
    0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull, 0x3fef3720dcef9069ull,
    0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full, 0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull,
};
#define AMPK_EXP_INVLN2N 0x1.71547652b82fep+5
#define AMPK_EXP_SHIFT 0x1.8p+52
#define AMPK_EXP_C0 0x1.c6af84b912394p-20
#define AMPK_EXP_C1 0x1.ebfce50fac4f3p-13
#define AMPK_EXP_C2 0x1.62e42ff0c52d6p-6
#define AMPK_EXP_TOP_88 0x42bu /* top12(88.0f): from here on glibc branches */
#endif

#if defined(__AVX512F__) && defined(__AVX512DQ__)
static inline __m256 AMPK_NAME(exp8)(__m256 x) {
    const __m512i *tab = (const __m512i *)AMPK_NAME(exp_tab);
    __m512d xd = _mm512_cvtps_pd(x);
    __m512d kd = _mm512_fmadd_pd(_mm512_set1_pd(AMPK_EXP_INVLN2N), xd, _mm512_set1_pd(AMPK_EXP_SHIFT));
    __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, _mm512_set1_pd(AMPK_EXP_SHIFT));
    __m512d r = _mm512_fmsub_pd(_mm512_set1_pd(AMPK_EXP_INVLN2N), xd, kd);
    __m512i idx = _mm512_and_si512(ki, _mm512_set1_epi64(31));
    __m512i lo = _mm512_permutex2var_epi64(_mm512_load_si512(tab), idx, _mm512_load_si512(tab + 1));
    __m512i hi = _mm512_permutex2var_epi64(_mm512_load_si512(tab + 2), idx, _mm512_load_si512(tab + 3));
    __mmask8 upper = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
    __m512i t = _mm512_mask_mov_epi64(lo, upper, hi);
    __m512d sc = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64(ki, 47)));
    __m512d z = _mm512_fmadd_pd(_mm512_set1_pd(AMPK_EXP_C0), r, _mm512_set1_pd(AMPK_EXP_C1));
    __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(r, _mm512_set1_pd(AMPK_EXP_C2), _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(z, r2, y);
    return _mm512_cvtpd_ps(_mm512_mul_pd(y, sc));
}

static void AMPK_NAME(vexp)(float *y, const float *x, size_t n) {
    size_t i = 0;
    const __m512i top = _mm512_set1_epi32((int)AMPK_EXP_TOP_88), m11 = _mm512_set1_epi32(0x7ff);
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512i abstop = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(v), 20), m11);
        __mmask16 special = _mm512_cmpge_epu32_mask(abstop, top);
        __m256 lo = AMPK_NAME(exp8)(_mm512_castps512_ps256(v));
        __m256 hi = AMPK_NAME(exp8)(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        __m512 e = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
        float in[16]; /* x may be y: keep the inputs for the scalar lanes */
        if (special) _mm512_storeu_ps(in, v);
        _mm512_storeu_ps(y + i, e);
        if (special)
            for (int j = 0; j < 16; j++)
                if (special & (1u << j)) y[i + j] = expf(in[j]);
    }
    if (i < n) { /* the tail as one padded vector (in may be y) */
        float pad[16] = {0}, out[16];
        memcpy(pad, x + i, (n - i) * sizeof *pad);
        AMPK_NAME(vexp)(out, pad, 16);
        memcpy(y + i, out, (n - i) * sizeof *out);
    }
}
#elif defined(__AVX2__) && defined(__FMA__)
static inline __m128 AMPK_NAME(exp4)(__m128 x) {
    __m256d xd = _mm256_cvtps_pd(x);
    __m256d kd = _mm256_fmadd_pd(_mm256_set1_pd(AMPK_EXP_INVLN2N), xd, _mm256_set1_pd(AMPK_EXP_SHIFT));
    __m256i ki = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, _mm256_set1_pd(AMPK_EXP_SHIFT));
    __m256d r = _mm256_fmsub_pd(_mm256_set1_pd(AMPK_EXP_INVLN2N), xd, kd);
    __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
    __m256i t = _mm256_i64gather_epi64((const long long *)AMPK_NAME(exp_tab), idx, 8);
    __m256d sc = _mm256_castsi256_pd(_mm256_add_epi64(t, _mm256_slli_epi64(ki, 47)));
    __m256d z = _mm256_fmadd_pd(_mm256_set1_pd(AMPK_EXP_C0), r, _mm256_set1_pd(AMPK_EXP_C1));
    __m256d r2 = _mm256_mul_pd(r, r);
    __m256d y = _mm256_fmadd_pd(r, _mm256_set1_pd(AMPK_EXP_C2), _mm256_set1_pd(1.0));
    y = _mm256_fmadd_pd(z, r2, y);
    return _mm256_cvtpd_ps(_mm256_mul_pd(y, sc));
}

static void AMPK_NAME(vexp)(float *y, const float *x, size_t n) {
    size_t i = 0;
    const __m256i top = _mm256_set1_epi32((int)AMPK_EXP_TOP_88 - 1), m11 = _mm256_set1_epi32(0x7ff);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256i abstop = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 20), m11);
        unsigned special = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(abstop, top)));
        __m128 lo = AMPK_NAME(exp4)(_mm256_castps256_ps128(v));
        __m128 hi = AMPK_NAME(exp4)(_mm256_extractf128_ps(v, 1));
        float in[8]; /* x may be y: keep the inputs for the scalar lanes */
        if (special) _mm256_storeu_ps(in, v);
        _mm256_storeu_ps(y + i, _mm256_set_m128(hi, lo));
        if (special)
            for (int j = 0; j < 8; j++)
                if (special & (1u << j)) y[i + j] = expf(in[j]);
    }
    if (i < n) { /* the tail as one padded vector (in may be y) */
        float pad[8] = {0}, out[8];
        memcpy(pad, x + i, (n - i) * sizeof *pad);
        AMPK_NAME(vexp)(out, pad, 8);
        memcpy(y + i, out, (n - i) * sizeof *out);
    }
}
#else
static void AMPK_NAME(vexp)(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = expf(x[i]);
}
#endif

/* ---- plain loops, vectorised by the compiler ------------------------------ */

static void AMPK_NAME(add)(float *restrict y, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* Tiles of the GELUs: the argument of expf, vexp over the tile, the rest;
 * each step is the per-element function's, so the bits are too. */
#define AMPK_ACT_TILE 256

/* y[i] = FROM_EXP(x[i], expf(ARG(x[i]))), a tile at a time (y may be x) */
#define AMPK_EXP_TILES(ARG, FROM_EXP)                                                   \
    do {                                                                                \
        float e[AMPK_ACT_TILE];                                                         \
        for (size_t i0 = 0; i0 < n; i0 += AMPK_ACT_TILE) {                              \
            size_t len = n - i0 < AMPK_ACT_TILE ? n - i0 : AMPK_ACT_TILE;               \
            for (size_t i = 0; i < len; i++) e[i] = ARG(x[i0 + i]);                     \
            AMPK_NAME(vexp)(e, e, len);                                                 \
            for (size_t i = 0; i < len; i++) y[i0 + i] = FROM_EXP(x[i0 + i], e[i]);     \
        }                                                                               \
    } while (0)

static void AMPK_NAME(act)(float *y, const float *x, size_t n, int act) {
    if (act == 1) {
        for (size_t i = 0; i < n; i++) y[i] = amp_relu(x[i]);
    } else if (act == 2) {
        AMPK_EXP_TILES(amp_gelu_arg, amp_gelu_from_exp);
    } else if (act == 3) {
        AMPK_EXP_TILES(amp_gelu_tanh_arg, amp_gelu_tanh_from_exp);
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
        float e[2 * AMPK_ACT_TILE]; /* erf's exponentials, then phi's */
        for (size_t i0 = 0; i0 < n; i0 += AMPK_ACT_TILE) {
            size_t len = n - i0 < AMPK_ACT_TILE ? n - i0 : AMPK_ACT_TILE;
            for (size_t i = 0; i < len; i++) e[i] = amp_gelu_arg(z[i0 + i]);
            for (size_t i = 0; i < len; i++) e[len + i] = amp_gelu_grad_pdf_arg(z[i0 + i]);
            AMPK_NAME(vexp)(e, e, 2 * len);
            for (size_t i = 0; i < len; i++)
                y[i0 + i] = da[i0 + i] * amp_gelu_grad_from_exp(z[i0 + i], e[i], e[len + i]);
        }
    } else if (act == 3) {
        float e[AMPK_ACT_TILE];
        for (size_t i0 = 0; i0 < n; i0 += AMPK_ACT_TILE) {
            size_t len = n - i0 < AMPK_ACT_TILE ? n - i0 : AMPK_ACT_TILE;
            for (size_t i = 0; i < len; i++) e[i] = amp_gelu_tanh_grad_arg(z[i0 + i]);
            AMPK_NAME(vexp)(e, e, len);
            for (size_t i = 0; i < len; i++)
                y[i0 + i] = da[i0 + i] * amp_gelu_tanh_grad_from_exp(z[i0 + i], e[i]);
        }
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
    .vexp = AMPK_NAME(vexp),
    .acc_add = AMPK_NAME(acc_add),
    .col_sum = AMPK_NAME(col_sum),
    .unscale = AMPK_NAME(unscale),
    .sgd = AMPK_NAME(sgd),
    .adamw = AMPK_NAME(adamw),
    .scale = AMPK_NAME(scale),
};
