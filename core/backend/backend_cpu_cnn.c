/* CPU backend, convolutional-network ops: conv2d as im2col + the backend's
 * FP32 GEMM (16-bit operands widened exactly to FP32 first by the backend's
 * widen op, so the accumulation is FP32), max pooling and batch
 * normalisation as plain loops. The per-element math is kernels/conv.h, the
 * same functions the CUDA kernels call. Deterministic: the loops run in a
 * fixed order and the backend's GEMMs are deterministic.
 *
 * Also the shape checks every backend runs first (amp_*_desc_check). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/backend_cpu_cnn.h"
#include "backend/kernels/conv.h"

/* ---- shape checks ------------------------------------------------------- */

static int positive(const char *what, const char *field, int v, char *err, size_t errlen) {
    if (v > 0) return 0;
    snprintf(err, errlen, "%s: %s must be positive (got %d)", what, field, v);
    return -1;
}

/* The largest tensor of a shape must be indexable by size_t and its planes
 * by int (the kernels index planes with int). */
static int small_enough(const char *what, double elems, double plane, char *err, size_t errlen) {
    if (elems <= 1e15 && plane <= (double)INT_MAX) return 0;
    snprintf(err, errlen, "%s: tensor too large (%.0f elements, plane %.0f)", what, elems, plane);
    return -1;
}

int amp_conv2d_desc_check(const amp_conv2d_desc *d, char *err, size_t errlen) {
    const char *w = "conv2d";
    if (positive(w, "n", d->n, err, errlen) || positive(w, "c_in", d->c_in, err, errlen) ||
        positive(w, "h", d->h, err, errlen) || positive(w, "w", d->w, err, errlen) ||
        positive(w, "c_out", d->c_out, err, errlen) || positive(w, "kh", d->kh, err, errlen) ||
        positive(w, "kw", d->kw, err, errlen) || positive(w, "stride_h", d->stride_h, err, errlen) ||
        positive(w, "stride_w", d->stride_w, err, errlen))
        return -1;
    if (d->pad_h < 0 || d->pad_w < 0) {
        snprintf(err, errlen, "conv2d: padding must be >= 0 (got %d, %d)", d->pad_h, d->pad_w);
        return -1;
    }
    if (d->dt != AMP_DTYPE_F32 && d->dt != AMP_DTYPE_F16 && d->dt != AMP_DTYPE_BF16) {
        snprintf(err, errlen, "conv2d: unknown dtype %d", (int)d->dt);
        return -1;
    }
    if (d->h + 2 * d->pad_h < d->kh || d->w + 2 * d->pad_w < d->kw) {
        snprintf(err, errlen,
                 "conv2d: the %dx%d kernel is larger than the padded %dx%d input (%dx%d, "
                 "padding %d,%d)",
                 d->kh, d->kw, d->h + 2 * d->pad_h, d->w + 2 * d->pad_w, d->h, d->w, d->pad_h,
                 d->pad_w);
        return -1;
    }
    double pq = (double)amp_conv2d_out_h(d) * amp_conv2d_out_w(d);
    double k = (double)d->c_in * d->kh * d->kw;
    double big = (double)d->n * d->c_in * d->h * d->w;
    if ((double)d->n * d->c_out * pq > big) big = (double)d->n * d->c_out * pq;
    if (k * pq > big) big = k * pq;
    double plane = (double)d->h * d->w > pq ? (double)d->h * d->w : pq;
    if (k > plane) plane = k;
    return small_enough(w, big, plane, err, errlen);
}

int amp_pool2d_desc_check(const amp_pool2d_desc *d, char *err, size_t errlen) {
    const char *w = "max_pool2d";
    if (positive(w, "n", d->n, err, errlen) || positive(w, "c", d->c, err, errlen) ||
        positive(w, "h", d->h, err, errlen) || positive(w, "w", d->w, err, errlen) ||
        positive(w, "kh", d->kh, err, errlen) || positive(w, "kw", d->kw, err, errlen) ||
        positive(w, "stride_h", d->stride_h, err, errlen) ||
        positive(w, "stride_w", d->stride_w, err, errlen))
        return -1;
    /* PyTorch: "pad should be at most half of effective kernel size"; it
     * also guarantees every window holds an input element. */
    if (d->pad_h < 0 || d->pad_w < 0 || 2 * d->pad_h > d->kh || 2 * d->pad_w > d->kw) {
        snprintf(err, errlen,
                 "max_pool2d: padding (%d, %d) must be >= 0 and at most half the %dx%d window",
                 d->pad_h, d->pad_w, d->kh, d->kw);
        return -1;
    }
    if (d->h + 2 * d->pad_h < d->kh || d->w + 2 * d->pad_w < d->kw) {
        snprintf(err, errlen, "max_pool2d: the %dx%d window is larger than the padded %dx%d input",
                 d->kh, d->kw, d->h + 2 * d->pad_h, d->w + 2 * d->pad_w);
        return -1;
    }
    return small_enough(w, (double)d->n * d->c * d->h * d->w, (double)d->h * d->w, err, errlen);
}

static int bn_check(amp_backend *be, int n, int c, int hw, int training) {
    if (n <= 0 || c <= 0 || hw <= 0 || (double)n * c * hw > 1e15) {
        snprintf(be->err, sizeof be->err, "batch_norm: bad shape n=%d c=%d hw=%d", n, c, hw);
        return -1;
    }
    if (training && (double)n * hw < 2) {
        snprintf(be->err, sizeof be->err,
                 "batch_norm: training needs more than 1 value per channel (n=%d, hw=%d), as "
                 "PyTorch does",
                 n, hw);
        return -1;
    }
    return 0;
}

/* ---- conv2d ------------------------------------------------------------- */

/* dst[n] = elements off .. off+n-1 of src(dt) as FP32, exactly: the
 * backend's own widen op (its vector kernels). */
static int widen_into(amp_backend *be, float *dst, const void *src, size_t off, amp_dtype dt,
                      size_t n) {
    const char *p = (const char *)src + off * (dt == AMP_DTYPE_F32 ? 4 : 2);
    return be->ops->widen(be, dst, p, dt, n);
}

/* C[m, n] = alpha op(A) op(B) + beta C in FP32 through the backend's GEMM
 * (OpenBLAS or oneDNN, whichever path it runs: deterministic either way). */
static int gemm32(amp_backend *be, int trans_a, int trans_b, int m, int n, int k, const float *a,
                  int lda, const float *b, int ldb, float beta, float *c, int ldc) {
    amp_gemm_desc g = amp_gemm_plain(c, a, b, AMP_DTYPE_F32, trans_a, trans_b, m, n, k);
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.beta = beta;
    return be->ops->gemm_ex(be, &g);
}

/* Images go through the GEMMs in chunks of G side by side (one GEMM of
 * G*p*q columns instead of G small ones); G depends on the shape alone, so
 * the summation order, and the result, are fixed. */
#define CONV_CHUNK_FLOATS ((size_t)16 << 20) /* col + out of one chunk: 64 MiB */

typedef struct conv_geom {
    int p, q, K, P; /* output plane, rows of the column matrix, p*q */
    int G;          /* images per chunk */
} conv_geom;

static conv_geom geom(const amp_conv2d_desc *d) {
    conv_geom g;
    g.p = amp_conv2d_out_h(d);
    g.q = amp_conv2d_out_w(d);
    g.K = d->c_in * d->kh * d->kw;
    g.P = g.p * g.q;
    size_t per = ((size_t)g.K + (size_t)d->c_out) * (size_t)g.P;
    size_t G = per ? CONV_CHUNK_FLOATS / per : 1;
    if (G < 1) G = 1;
    if (G > (size_t)d->n) G = (size_t)d->n;
    g.G = (int)G;
    return g;
}

/* Workspace in floats: the column matrix [K, G*P] and the chunk's output or
 * gathered dy [c_out, G*P], plus for a 16-bit dt the widened weights
 * [c_out, K] and the chunk's widened images [G, c_in, h, w]. */
static size_t conv_ws_floats(const amp_conv2d_desc *d, size_t *col, size_t *yc) {
    conv_geom g = geom(d);
    *col = (size_t)g.K * g.G * g.P;
    *yc = (size_t)d->c_out * g.G * g.P;
    size_t wf = d->dt == AMP_DTYPE_F32 ? 0 : (size_t)d->c_out * g.K;
    size_t xf = d->dt == AMP_DTYPE_F32 ? 0 : (size_t)g.G * d->c_in * d->h * d->w;
    return *col + *yc + wf + xf;
}

int amp_cpu_conv2d_workspace(amp_backend *be, const amp_conv2d_desc *d, size_t *bytes) {
    if (amp_conv2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    size_t col, yc;
    *bytes = conv_ws_floats(d, &col, &yc) * sizeof(float);
    return 0;
}

typedef struct conv_ws {
    float *col, *yc, *wf, *xf;
    conv_geom g;
} conv_ws;

/* Carves the workspace; for a 16-bit dt also widens w into wf (w may be
 * NULL when the op has no weight operand). */
static int conv_setup(amp_backend *be, conv_ws *s, const amp_conv2d_desc *d, const void *w,
                      void *ws, size_t ws_bytes) {
    if (amp_conv2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    size_t col, yc, need = conv_ws_floats(d, &col, &yc) * sizeof(float);
    if (ws_bytes < need || (need && !ws)) {
        snprintf(be->err, sizeof be->err,
                 "conv2d: workspace of %zu bytes is smaller than the %zu bytes "
                 "conv2d_workspace asked for",
                 ws_bytes, need);
        return 1;
    }
    s->g = geom(d);
    s->col = ws;
    s->yc = s->col + col;
    s->wf = s->yc + yc;
    s->xf = s->wf + (d->dt == AMP_DTYPE_F32 ? 0 : (size_t)d->c_out * s->g.K);
    if (w && d->dt != AMP_DTYPE_F32 &&
        widen_into(be, s->wf, w, 0, d->dt, (size_t)d->c_out * s->g.K) != 0)
        return 1;
    return 0;
}

static const float *weights(const conv_ws *s, const void *w, const amp_conv2d_desc *d) {
    return d->dt == AMP_DTYPE_F32 ? (const float *)w : s->wf;
}

/* col[K, g*P] for images i0 .. i0+g-1 of x, side by side: entry (ci, ky,
 * kx), (oy, ox) is x[ci, oy*stride - pad + ky, ox*stride - pad + kx], 0 in
 * the padding. A 16-bit x is widened into
 * xf first, once per element rather than once per use. */
static int im2col(amp_backend *be, float *col, float *xf, const void *x, const amp_conv2d_desc *d,
                  const conv_geom *gm, int i0, int g) {
    size_t cols = (size_t)g * gm->P, x_img = (size_t)d->c_in * d->h * d->w;
    const float *xs = (const float *)x + (size_t)i0 * x_img;
    if (d->dt != AMP_DTYPE_F32) {
        if (widen_into(be, xf, x, (size_t)i0 * x_img, d->dt, (size_t)g * x_img) != 0) return 1;
        xs = xf;
    }
    for (int ci = 0; ci < d->c_in; ci++)
        for (int ky = 0; ky < d->kh; ky++)
            for (int kx = 0; kx < d->kw; kx++) {
                float *row = col + ((size_t)(ci * d->kh + ky) * d->kw + kx) * cols;
                for (int gi = 0; gi < g; gi++) {
                    const float *plane = xs + (size_t)gi * x_img + (size_t)ci * d->h * d->w;
                    float *r = row + (size_t)gi * gm->P;
                    for (int oy = 0; oy < gm->p; oy++) {
                        float *ro = r + (size_t)oy * gm->q;
                        int iy = oy * d->stride_h - d->pad_h + ky;
                        if (iy < 0 || iy >= d->h) {
                            memset(ro, 0, (size_t)gm->q * sizeof(float));
                            continue;
                        }
                        const float *src = plane + (size_t)iy * d->w;
                        for (int ox = 0; ox < gm->q; ox++) {
                            int ix = ox * d->stride_w - d->pad_w + kx;
                            ro[ox] = ix >= 0 && ix < d->w ? src[ix] : 0.0f;
                        }
                    }
                }
            }
    return 0;
}

/* yc[c_out, g*P] = dy of images i0 .. i0+g-1 (NCHW, dt), as FP32. */
static int gather_dy(amp_backend *be, float *yc, const void *dy, const amp_conv2d_desc *d,
                     const conv_geom *gm, int i0, int g) {
    size_t cols = (size_t)g * gm->P;
    for (int co = 0; co < d->c_out; co++)
        for (int gi = 0; gi < g; gi++) {
            size_t src = ((size_t)(i0 + gi) * d->c_out + co) * gm->P;
            if (widen_into(be, yc + (size_t)co * cols + (size_t)gi * gm->P, dy, src, d->dt,
                           (size_t)gm->P) != 0)
                return 1;
        }
    return 0;
}

int amp_cpu_conv2d_forward(amp_backend *be, float *y, const void *x, const void *w,
                           const float *bias, const amp_conv2d_desc *d, void *ws,
                           size_t ws_bytes) {
    conv_ws s;
    if (conv_setup(be, &s, d, w, ws, ws_bytes) != 0) return 1;
    const conv_geom *gm = &s.g;
    const float *wf = weights(&s, w, d);
    for (int i0 = 0; i0 < d->n; i0 += gm->G) {
        int g = d->n - i0 < gm->G ? d->n - i0 : gm->G, cols = g * gm->P;
        if (im2col(be, s.col, s.xf, x, d, gm, i0, g) != 0) return 1;
        /* yc[c_out, cols] = W[c_out, K] . col[K, cols] */
        if (gemm32(be, 0, 0, d->c_out, cols, gm->K, wf, gm->K, s.col, cols, 0.0f, s.yc, cols))
            return 1;
        for (int gi = 0; gi < g; gi++)
            for (int co = 0; co < d->c_out; co++) {
                const float *src = s.yc + (size_t)co * cols + (size_t)gi * gm->P;
                float *dst = y + ((size_t)(i0 + gi) * d->c_out + co) * gm->P;
                float b = bias ? bias[co] : 0.0f;
                for (int j = 0; j < gm->P; j++) {
                    float v = amp_quantize(src[j], (int)d->dt, NULL);
                    dst[j] = bias ? v + b : v;
                }
            }
    }
    return 0;
}

int amp_cpu_conv2d_backward_data(amp_backend *be, float *dx, const void *dy, const void *w,
                                 const amp_conv2d_desc *d, void *ws, size_t ws_bytes) {
    conv_ws s;
    if (conv_setup(be, &s, d, w, ws, ws_bytes) != 0) return 1;
    const conv_geom *gm = &s.g;
    const float *wf = weights(&s, w, d);
    size_t x_img = (size_t)d->c_in * d->h * d->w;
    for (int i0 = 0; i0 < d->n; i0 += gm->G) {
        int g = d->n - i0 < gm->G ? d->n - i0 : gm->G, cols = g * gm->P;
        if (gather_dy(be, s.yc, dy, d, gm, i0, g) != 0) return 1;
        /* dcol[K, cols] = W[c_out, K]^T . dy[c_out, cols] */
        if (gemm32(be, 1, 0, gm->K, cols, d->c_out, wf, gm->K, s.yc, cols, 0.0f, s.col, cols))
            return 1;
        /* col2im as a scatter in row order (ci, ky, kx): each input element
         * receives its terms in (ky, kx) ascending order starting from 0,
         * so the order of the sum is fixed by the shape. */
        float *dxc = dx + (size_t)i0 * x_img;
        memset(dxc, 0, (size_t)g * x_img * sizeof(float));
        for (int ci = 0; ci < d->c_in; ci++)
            for (int ky = 0; ky < d->kh; ky++)
                for (int kx = 0; kx < d->kw; kx++) {
                    const float *row = s.col + ((size_t)(ci * d->kh + ky) * d->kw + kx) * cols;
                    for (int gi = 0; gi < g; gi++) {
                        float *plane = dxc + (size_t)gi * x_img + (size_t)ci * d->h * d->w;
                        const float *r = row + (size_t)gi * gm->P;
                        for (int oy = 0; oy < gm->p; oy++) {
                            int iy = oy * d->stride_h - d->pad_h + ky;
                            if (iy < 0 || iy >= d->h) continue;
                            float *dst = plane + (size_t)iy * d->w;
                            const float *ro = r + (size_t)oy * gm->q;
                            for (int ox = 0; ox < gm->q; ox++) {
                                int ix = ox * d->stride_w - d->pad_w + kx;
                                if (ix >= 0 && ix < d->w) dst[ix] += ro[ox];
                            }
                        }
                    }
                }
        if (d->dt != AMP_DTYPE_F32)
            for (size_t i = 0; i < (size_t)g * x_img; i++)
                dxc[i] = amp_quantize(dxc[i], (int)d->dt, NULL);
    }
    return 0;
}

int amp_cpu_conv2d_backward_filter(amp_backend *be, float *dw, float *dbias, const void *x,
                                   const void *dy, const amp_conv2d_desc *d, void *ws,
                                   size_t ws_bytes) {
    conv_ws s;
    if (conv_setup(be, &s, d, NULL, ws, ws_bytes) != 0) return 1;
    const conv_geom *gm = &s.g;
    for (int i0 = 0; i0 < d->n; i0 += gm->G) {
        int g = d->n - i0 < gm->G ? d->n - i0 : gm->G, cols = g * gm->P;
        if (im2col(be, s.col, s.xf, x, d, gm, i0, g) != 0) return 1;
        if (gather_dy(be, s.yc, dy, d, gm, i0, g) != 0) return 1;
        /* dW[c_out, K] (+)= dy[c_out, cols] . col[K, cols]^T, chunks in order */
        if (gemm32(be, 0, 1, d->c_out, gm->K, cols, s.yc, cols, s.col, cols, i0 ? 1.0f : 0.0f, dw,
                   gm->K))
            return 1;
    }
    if (d->dt != AMP_DTYPE_F32)
        for (size_t j = 0; j < (size_t)d->c_out * gm->K; j++)
            dw[j] = amp_quantize(dw[j], (int)d->dt, NULL);
    if (dbias) {
        for (int co = 0; co < d->c_out; co++) {
            double sum = 0.0;
            for (int i = 0; i < d->n; i++) {
                size_t base = ((size_t)i * d->c_out + co) * gm->P;
                for (int j = 0; j < gm->P; j++) sum += amp_load_dt(dy, base + j, (int)d->dt);
            }
            dbias[co] = (float)sum;
        }
    }
    return 0;
}

/* ---- max pooling -------------------------------------------------------- */

int amp_cpu_max_pool2d_forward(amp_backend *be, float *y, int32_t *idx, const float *x,
                               const amp_pool2d_desc *d) {
    if (amp_pool2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    int p = amp_pool2d_out_h(d), q = amp_pool2d_out_w(d);
    size_t planes = (size_t)d->n * d->c, in_plane = (size_t)d->h * d->w, out_plane = (size_t)p * q;
    for (size_t pl = 0; pl < planes; pl++)
        for (int oy = 0; oy < p; oy++)
            for (int ox = 0; ox < q; ox++) {
                int32_t a;
                size_t o = pl * out_plane + (size_t)oy * q + ox;
                y[o] = amp_maxpool_value(&a, x + pl * in_plane, d->h, d->w, d->kh, d->kw, oy, ox,
                                         d->stride_h, d->stride_w, d->pad_h, d->pad_w);
                if (idx) idx[o] = a;
            }
    return 0;
}

int amp_cpu_max_pool2d_backward(amp_backend *be, float *dx, const float *dy, const int32_t *idx,
                                const amp_pool2d_desc *d) {
    if (amp_pool2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    int p = amp_pool2d_out_h(d), q = amp_pool2d_out_w(d);
    size_t planes = (size_t)d->n * d->c, in_plane = (size_t)d->h * d->w, out_plane = (size_t)p * q;
    if (d->stride_h >= d->kh && d->stride_w >= d->kw) {
        /* Windows do not overlap: each input gets at most one term, so a
         * scatter of 0 + dy is the gather's sum, bit for bit. */
        memset(dx, 0, planes * in_plane * sizeof(float));
        for (size_t pl = 0; pl < planes; pl++)
            for (size_t o = 0; o < out_plane; o++) {
                float *t = &dx[pl * in_plane + (size_t)idx[pl * out_plane + o]];
                *t = 0.0f + dy[pl * out_plane + o];
            }
        return 0;
    }
    for (size_t pl = 0; pl < planes; pl++)
        for (int iy = 0; iy < d->h; iy++)
            for (int ix = 0; ix < d->w; ix++)
                dx[pl * in_plane + (size_t)iy * d->w + ix] =
                    amp_maxpool_grad(dy + pl * out_plane, idx + pl * out_plane, d->w, p, q, d->kh,
                                     d->kw, iy, ix, d->stride_h, d->stride_w, d->pad_h, d->pad_w);
    return 0;
}

/* ---- batch normalisation ------------------------------------------------ */

int amp_cpu_batch_norm_forward(amp_backend *be, float *y, float *save_mean, float *save_invstd,
                               float *running_mean, float *running_var, const float *x,
                               const float *gamma, const float *beta, int n, int c, int hw,
                               int training, float momentum, float eps) {
    if (bn_check(be, n, c, hw, training) != 0) return 1;
    double count = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        float mean, invstd;
        if (training) {
            double sum = 0.0, sq = 0.0;
            for (int i = 0; i < n; i++) {
                const float *xp = x + ((size_t)i * c + ch) * hw;
                for (int j = 0; j < hw; j++) sum += xp[j];
            }
            double m = sum / count;
            for (int i = 0; i < n; i++) {
                const float *xp = x + ((size_t)i * c + ch) * hw;
                for (int j = 0; j < hw; j++) {
                    double t = (double)xp[j] - m;
                    sq += t * t;
                }
            }
            double var = sq / count;
            mean = (float)m;
            invstd = amp_bn_invstd(var, eps);
            if (running_mean && running_var)
                amp_bn_running_update(&running_mean[ch], &running_var[ch], m, var, count,
                                      momentum);
        } else {
            mean = running_mean[ch];
            invstd = amp_bn_invstd((double)running_var[ch], eps);
        }
        save_mean[ch] = mean;
        save_invstd[ch] = invstd;
        for (int i = 0; i < n; i++) {
            size_t base = ((size_t)i * c + ch) * hw;
            for (int j = 0; j < hw; j++)
                y[base + j] = amp_bn_apply(x[base + j], mean, invstd, gamma[ch], beta[ch]);
        }
    }
    return 0;
}

int amp_cpu_batch_norm_backward(amp_backend *be, float *dx, float *dgamma, float *dbeta,
                                const float *dy, const float *x, const float *gamma,
                                const float *save_mean, const float *save_invstd, int n, int c,
                                int hw, int training) {
    if (bn_check(be, n, c, hw, training) != 0) return 1;
    double count = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        float mean = save_mean[ch], invstd = save_invstd[ch];
        double sdy = 0.0, sdyx = 0.0;
        for (int i = 0; i < n; i++) {
            size_t base = ((size_t)i * c + ch) * hw;
            for (int j = 0; j < hw; j++) {
                sdy += dy[base + j];
                sdyx += (double)dy[base + j] * amp_bn_xhat(x[base + j], mean, invstd);
            }
        }
        dgamma[ch] = (float)sdyx;
        dbeta[ch] = (float)sdy;
        float mdy = (float)(sdy / count), mdyx = (float)(sdyx / count);
        for (int i = 0; i < n; i++) {
            size_t base = ((size_t)i * c + ch) * hw;
            for (int j = 0; j < hw; j++)
                dx[base + j] = amp_bn_grad(dy[base + j], x[base + j], mean, invstd, gamma[ch], mdy,
                                           mdyx, training);
        }
    }
    return 0;
}
