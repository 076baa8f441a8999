/* CPU backend, max pooling: amp_maxpool_value's scan (kernels/conv.h, the
 * functions the CUDA kernels call) as plain loops, one plane per thread. */
#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "backend/backend.h"
#include "backend/cpu_cnn_ops.h"
#include "backend/cpu_internal.h"
#include "backend/kernels/conv.h"

/* Without padding every window lies inside the plane: amp_maxpool_value's
 * scan (the first maximum in row-major order wins, the first NaN wins and
 * stays) as a branch-free select, same bits and indices. */
static inline void maxpool_plane_nopad(float *restrict y, uint16_t *restrict idx,
                                       const float *restrict x, int w, int p, int q, int kh,
                                       int kw, int sh, int sw) {
    for (int oy = 0; oy < p; oy++)
        for (int ox = 0; ox < q; ox++) {
            int y0 = oy * sh, x0 = ox * sw, bi = 0;
            float best = x[(size_t)y0 * w + x0];
            for (int ky = 0; ky < kh; ky++)
                for (int kx = 0; kx < kw; kx++) {
                    float v = x[(size_t)(y0 + ky) * w + x0 + kx];
                    int take = (v > best) | ((v != v) & (best == best));
                    best = take ? v : best;
                    bi = take ? ky * kw + kx : bi;
                }
            y[(size_t)oy * q + ox] = best;
            if (idx) idx[(size_t)oy * q + ox] = (uint16_t)bi;
        }
}

#ifdef __SSE2__
/* The 2x2, stride 2 window (the common pool(2)) four outputs at a time:
 * the same select as above on SSE2 lanes (baseline x86-64), so the same
 * bits and indices; compare branches on random data mispredict. */
static void maxpool_plane_2x2(float *restrict y, uint16_t *restrict idx, const float *restrict x,
                              int h, int w, int p, int q) {
    for (int oy = 0; oy < p; oy++) {
        const float *r0 = x + (size_t)(2 * oy) * w, *r1 = r0 + w;
        for (int ox0 = 0; ox0 < q; ox0 += 4) {
            /* the last group overlaps the previous one when q % 4 != 0:
             * the shared outputs are written twice with the same values */
            int ox = ox0 + 4 <= q || q < 4 ? ox0 : q - 4;
            if (ox + 4 > q) { /* a row of fewer than 4 outputs */
                for (; ox < q; ox++) {
                    uint16_t a;
                    float v = amp_maxpool_value(&a, x, h, w, 2, 2, oy, ox, 2, 2, 0, 0);
                    y[(size_t)oy * q + ox] = v;
                    if (idx) idx[(size_t)oy * q + ox] = a;
                }
                break;
            }
            __m128 a0 = _mm_loadu_ps(r0 + 2 * ox), a1 = _mm_loadu_ps(r0 + 2 * ox + 4);
            __m128 b0 = _mm_loadu_ps(r1 + 2 * ox), b1 = _mm_loadu_ps(r1 + 2 * ox + 4);
            __m128 v[4] = {_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                           _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1))};
            /* v[k] is window offset k (row-major 2x2) of four windows */
            __m128 best = v[0];
            __m128i bi = _mm_setzero_si128();
            for (int k = 1; k < 4; k++) {
                __m128 take = _mm_or_ps(_mm_cmpgt_ps(v[k], best),
                                        _mm_and_ps(_mm_cmpunord_ps(v[k], v[k]),
                                                   _mm_cmpord_ps(best, best)));
                __m128i ti = _mm_castps_si128(take);
                best = _mm_or_ps(_mm_and_ps(take, v[k]), _mm_andnot_ps(take, best));
                bi = _mm_or_si128(_mm_and_si128(ti, _mm_set1_epi32(k)), _mm_andnot_si128(ti, bi));
            }
            _mm_storeu_ps(y + (size_t)oy * q + ox, best);
            if (idx) /* offsets 0..3: narrowing with signed saturation is exact */
                _mm_storel_epi64((__m128i *)(idx + (size_t)oy * q + ox), _mm_packs_epi32(bi, bi));
        }
    }
}
#endif

int amp_cpu_max_pool2d_forward(amp_backend *be, float *y, uint16_t *idx, const float *x,
                               const amp_pool2d_desc *d) {
    if (amp_pool2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    int p = amp_pool2d_out_h(d), q = amp_pool2d_out_w(d);
    size_t planes = (size_t)d->n * d->c, in_plane = (size_t)d->h * d->w, out_plane = (size_t)p * q;
    int nopad = d->pad_h == 0 && d->pad_w == 0;
#pragma omp parallel for schedule(static) if (planes * out_plane > 32768)
    for (size_t pl = 0; pl < planes; pl++) {
        if (nopad) {
            float *yp = y + pl * out_plane;
            uint16_t *ip = idx ? idx + pl * out_plane : NULL;
            const float *xp = x + pl * in_plane;
#ifdef __SSE2__
            if (d->kh == 2 && d->kw == 2 && d->stride_h == 2 && d->stride_w == 2)
                maxpool_plane_2x2(yp, ip, xp, d->h, d->w, p, q);
            else
#endif
                maxpool_plane_nopad(yp, ip, xp, d->w, p, q, d->kh, d->kw, d->stride_h,
                                    d->stride_w);
            continue;
        }
        for (int oy = 0; oy < p; oy++)
            for (int ox = 0; ox < q; ox++) {
                uint16_t a;
                size_t o = pl * out_plane + (size_t)oy * q + ox;
                y[o] = amp_maxpool_value(&a, x + pl * in_plane, d->h, d->w, d->kh, d->kw, oy, ox,
                                         d->stride_h, d->stride_w, d->pad_h, d->pad_w);
                if (idx) idx[o] = a;
            }
    }
    return 0;
}

int amp_cpu_max_pool2d_backward(amp_backend *be, float *dx, const float *dy, const uint16_t *idx,
                                const amp_pool2d_desc *d) {
    if (amp_pool2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    int p = amp_pool2d_out_h(d), q = amp_pool2d_out_w(d);
    size_t planes = (size_t)d->n * d->c, in_plane = (size_t)d->h * d->w, out_plane = (size_t)p * q;
    int disjoint = d->stride_h >= d->kh && d->stride_w >= d->kw;
#pragma omp parallel for schedule(static) if (planes * in_plane > 32768)
    for (size_t pl = 0; pl < planes; pl++) {
        if (disjoint) {
            /* Windows do not overlap: each input gets at most one term, so a
             * scatter of 0 + dy is the gather's sum, bit for bit. */
            float *dp = dx + pl * in_plane;
            memset(dp, 0, in_plane * sizeof(float));
            for (size_t o = 0; o < out_plane; o++)
                dp[amp_maxpool_arg_index(idx[pl * out_plane + o], d->w, d->kw, (int)(o / q),
                                         (int)(o % q), d->stride_h, d->stride_w, d->pad_h,
                                         d->pad_w)] = 0.0f + dy[pl * out_plane + o];
            continue;
        }
        for (int iy = 0; iy < d->h; iy++)
            for (int ix = 0; ix < d->w; ix++)
                dx[pl * in_plane + (size_t)iy * d->w + ix] =
                    amp_maxpool_grad(dy + pl * out_plane, idx + pl * out_plane, d->w, p, q, d->kh,
                                     d->kw, iy, ix, d->stride_h, d->stride_w, d->pad_h, d->pad_w);
    }
    return 0;
}
