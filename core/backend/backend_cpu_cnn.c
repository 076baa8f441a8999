/* CPU backend, convolutional-network ops: conv2d as im2col + the backend's
 * FP32 GEMM (16-bit operands widened exactly to FP32 first by the backend's
 * widen op, so the accumulation is FP32), and the "conv" family's op table
 * (max pooling in cpu_maxpool.c, batch normalisation in cpu_batchnorm.c).
 * The per-element math is kernels/conv.h, the same functions the CUDA
 * kernels call. Deterministic: the loops run in a fixed order and the
 * backend's GEMMs are deterministic.
 *
 * Also the shape checks every backend runs first (amp_*_desc_check). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/backend_cpu_cnn.h"
#include "backend/cpu_cnn_ops.h"
#include "backend/cpu_cnn_variants.h"
#include "backend/cpu_internal.h"
#include "backend/cpu_kern.h"
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
    if ((long long)d->kh * d->kw > 65536) { /* the argmax is a 2-byte window offset */
        snprintf(err, errlen, "max_pool2d: the %dx%d window has more than 65536 elements", d->kh,
                 d->kw);
        return -1;
    }
    if (d->h + 2 * d->pad_h < d->kh || d->w + 2 * d->pad_w < d->kw) {
        snprintf(err, errlen, "max_pool2d: the %dx%d window is larger than the padded %dx%d input",
                 d->kh, d->kw, d->h + 2 * d->pad_h, d->w + 2 * d->pad_w);
        return -1;
    }
    return small_enough(w, (double)d->n * d->c * d->h * d->w, (double)d->h * d->w, err, errlen);
}

/* ---- conv2d ------------------------------------------------------------- */

/* The loops below split their work across OpenMP threads by output (a row
 * of the column matrix, an input plane, a channel), each computed in a fixed
 * order by one thread: results do not depend on the thread count. 16-bit
 * data is converted by the kernel table of the backend's ISA path while it
 * is packed, not in separate passes. */



/* dst[n] = amp_quantize(src[n], dt) (+ b when add_b) with the ISA path's
 * kernels: quantize16 rounds and widens in registers (no 16-bit tile to
 * store and load back); uncounted, as the ops' internal roundings are.
 * dst may equal src. */
static void quantize_add(const amp_cpu_kern *k, float *dst, const float *src, size_t n, int dt,
                         int add_b, float b) {
    if (dt == AMP_DTYPE_F32) {
        if (add_b)
            for (size_t j = 0; j < n; j++) dst[j] = src[j] + b;
        else if (dst != src)
            memmove(dst, src, n * sizeof(float));
        return;
    }
    k->quantize16(dst, src, n, dt, NULL);
    if (add_b)
        for (size_t j = 0; j < n; j++) dst[j] += b;
}

/* C[m, n] = alpha op(A) op(B) + beta C in FP32 through the backend's GEMM
 * (OpenBLAS or oneDNN, whichever path it runs: deterministic either way). */
static int gemm32(amp_backend *be, int trans_a, int trans_b, int m, int n, int k, const float *a,
                  int lda, const float *b, int ldb, float beta, float *c, int ldc) {
    amp_gemm_desc g =
        amp_gemm_plain(c, a, b, AMP_DTYPE_F32, AMP_GEMM_TRANS(trans_a, trans_b), m, n, k);
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.beta = beta;
    return be->ops->gemm_ex(be, &g);
}

/* Images go through the GEMMs in chunks of G side by side (one GEMM of
 * G*p*q columns instead of G small ones). A chunk's column matrix and
 * output (1 MiB per thread) stay in the threads' caches from im2col to the
 * GEMM and on to the epilogue or col2im: one chunk of the whole batch
 * (29 MiB for the second conv of the fashion CNN) made every pass a trip to
 * memory, and 1 MiB chunks on 2 threads mean twice the parallel regions for
 * half the work each. G depends on the shape and the thread count only, so
 * the summation order (dW accumulates chunk by chunk) and the result are
 * fixed for a thread count; another thread count may round dW differently. */
#define CONV_CHUNK_FLOATS ((size_t)1 << 18)
#define CONV_CHUNK_MAX_THREADS 16

typedef struct conv_geom {
    int p, q, K, P; /* output plane, rows of the column matrix, p*q */
    int G;          /* images per chunk */
} conv_geom;

static conv_geom geom(const amp_conv2d_desc *d, int threads) {
    conv_geom g;
    size_t t = threads < 1 ? 1 : threads > CONV_CHUNK_MAX_THREADS ? CONV_CHUNK_MAX_THREADS : (size_t)threads;
    g.p = amp_conv2d_out_h(d);
    g.q = amp_conv2d_out_w(d);
    g.K = d->c_in * d->kh * d->kw;
    g.P = g.p * g.q;
    size_t per = ((size_t)g.K + (size_t)d->c_out) * (size_t)g.P;
    size_t G = per ? CONV_CHUNK_FLOATS * t / per : 1;
    if (G < 1) G = 1;
    if (G > (size_t)d->n) G = (size_t)d->n;
    g.G = (int)G;
    return g;
}

/* The outputs o in [*lo, *hi) of a row whose input o*stride - pad + k lies
 * in [0, len). */
static void valid_range(int n_out, int stride, int pad, int k, int len, int *lo, int *hi) {
    int a = pad - k, b = len - 1 + pad - k; /* o*stride in [a, b] */
    int l = a <= 0 ? 0 : (a + stride - 1) / stride;
    int h = b < 0 ? 0 : b / stride + 1;
    *lo = l < n_out ? l : n_out;
    *hi = h < n_out ? h : n_out;
    if (*hi < *lo) *hi = *lo;
}

/* Workspace in floats: the column matrix [K, G*P] and the chunk's output or
 * gathered dy [c_out, G*P], plus for a 16-bit dt the widened weights
 * [c_out, K] and the chunk's widened images [G, c_in, h, w] (one vector
 * pass; widening the short rows of im2col one by one costs more). */
static size_t conv_ws_floats(const amp_conv2d_desc *d, int threads, size_t *col, size_t *yc) {
    conv_geom g = geom(d, threads);
    *col = (size_t)g.K * g.G * g.P;
    *yc = (size_t)d->c_out * g.G * g.P;
    size_t wf = d->dt == AMP_DTYPE_F32 ? 0 : (size_t)d->c_out * g.K;
    size_t xf = d->dt == AMP_DTYPE_F32 ? 0 : (size_t)g.G * d->c_in * d->h * d->w;
    return *col + *yc + wf + xf;
}

static int cpu_conv2d_workspace(amp_backend *be, const amp_conv2d_desc *d, size_t *bytes) {
    if (amp_conv2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    size_t col, yc;
    *bytes = conv_ws_floats(d, be->info.threads, &col, &yc) * sizeof(float);
    return 0;
}

typedef struct conv_ws {
    float *col, *yc, *wf, *xf;
    conv_geom g;
    const amp_cpu_kern *k;
} conv_ws;

/* Carves the workspace; for a 16-bit dt also widens w into wf (w may be
 * NULL when the op has no weight operand). */
static int conv_setup(amp_backend *be, conv_ws *s, const amp_conv2d_desc *d, const void *w,
                      void *ws, size_t ws_bytes) {
    if (amp_conv2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    size_t col, yc, need = conv_ws_floats(d, be->info.threads, &col, &yc) * sizeof(float);
    if (ws_bytes < need || (need && !ws)) {
        snprintf(be->err, sizeof be->err,
                 "conv2d: workspace of %zu bytes is smaller than the %zu bytes "
                 "conv2d_workspace asked for",
                 ws_bytes, need);
        return 1;
    }
    s->g = geom(d, be->info.threads);
    s->k = amp_cpu_kern_of(be);
    s->col = ws;
    s->yc = s->col + col;
    s->wf = s->yc + yc;
    s->xf = s->wf + (d->dt == AMP_DTYPE_F32 ? 0 : (size_t)d->c_out * s->g.K);
    if (w && d->dt != AMP_DTYPE_F32)
        s->k->widen16(s->wf, w, (size_t)d->c_out * s->g.K, (int)d->dt);
    return 0;
}

static const float *weights(const conv_ws *s, const void *w, const amp_conv2d_desc *d) {
    return d->dt == AMP_DTYPE_F32 ? (const float *)w : s->wf;
}

/* One row (ci, ky, kx) of one image of the column matrix: o[P] from the
 * image's plane xp [h, w]. */
CNN_INLINE void im2col_row_body(float *o, const float *xp, const amp_conv2d_desc *d, int p, int q,
                                int ky, int kx) {
    int y0, y1, x0, x1;
    valid_range(p, d->stride_h, d->pad_h, ky, d->h, &y0, &y1);
    valid_range(q, d->stride_w, d->pad_w, kx, d->w, &x0, &x1);
    for (size_t i = 0; i < (size_t)y0 * q; i++) o[i] = 0.0f;
    for (int oy = y0; oy < y1; oy++) {
        float *ro = o + (size_t)oy * q;
        int iy = oy * d->stride_h - d->pad_h + ky;
        for (int ox = 0; ox < x0; ox++) ro[ox] = 0.0f;
        const float *restrict src = xp + (size_t)iy * d->w + (x0 * d->stride_w - d->pad_w + kx);
        float *restrict dst = ro + x0;
        if (d->stride_w == 1) /* short rows: a loop beats a memcpy call */
            for (int i = 0; i < x1 - x0; i++) dst[i] = src[i];
        else
            for (int i = 0; i < x1 - x0; i++) dst[i] = src[(size_t)i * d->stride_w];
        for (int ox = x1; ox < q; ox++) ro[ox] = 0.0f;
    }
    for (size_t i = (size_t)y1 * q; i < (size_t)p * q; i++) o[i] = 0.0f;
}
CNN_VARIANTS(im2col_row,
             (float *o, const float *xp, const amp_conv2d_desc *d, int p, int q, int ky, int kx),
             (o, xp, d, p, q, ky, kx))

/* col[K, g*P] for images i0 .. i0+g-1 of x (dt), side by side: entry (ci,
 * ky, kx), (oy, ox) is x[ci, oy*stride - pad + ky, ox*stride - pad + kx] as
 * FP32, 0 in the padding. A 16-bit x is widened (exactly) into xf first. */
static int im2col(amp_backend *be, const conv_ws *s, const void *x, const amp_conv2d_desc *d,
                  int i0, int g) {
    const conv_geom *gm = &s->g;
    size_t cols = (size_t)g * gm->P, x_img = (size_t)d->c_in * d->h * d->w;
    int rows = gm->K, lvl = isa_level(s->k);
    const float *xs = (const float *)x;
    if (d->dt != AMP_DTYPE_F32) {
        const uint16_t *x16 = (const uint16_t *)x + (size_t)i0 * x_img;
        if (be->ops->widen(be, s->xf, x16, d->dt, (size_t)g * x_img) != 0) return 1;
        xs = s->xf;
        i0 = 0;
    }
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)rows * cols > 32768)
    for (int r = 0; r < rows; r++)
        for (int gi = 0; gi < g; gi++) {
            int ci = r / (d->kh * d->kw), ky = r / d->kw % d->kh, kx = r % d->kw;
            CNN_PICK(im2col_row, lvl)(s->col + (size_t)r * cols + (size_t)gi * gm->P,
                                      xs + (size_t)(i0 + gi) * x_img + (size_t)ci * d->h * d->w,
                                      d, gm->p, gm->q, ky, kx);
        }
    return 0;
}

/* How the backward ops read dy: stored in d->dt, or (conv2d_backward_round)
 * FP32 to be rounded to d->dt as it is read, counted into t unless NULL. */
typedef struct dy_src {
    const void *p;
    int f32;
    amp_tally *t;
} dy_src;

/* yc[c_out, g*P] = dy of images i0 .. i0+g-1 (NCHW), as FP32 values of dt. */
static void gather_dy(const conv_ws *s, const dy_src *dy, const amp_conv2d_desc *d, int i0, int g) {
    const conv_geom *gm = &s->g;
    size_t cols = (size_t)g * gm->P;
    unsigned long long nz = 0, uf = 0, of = 0;
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : nz, uf, of) \
    if ((size_t)d->c_out * cols > 32768)
    for (int co = 0; co < d->c_out; co++)
        for (int gi = 0; gi < g; gi++) {
            float *dst = s->yc + (size_t)co * cols + (size_t)gi * gm->P;
            size_t off = ((size_t)(i0 + gi) * d->c_out + co) * gm->P;
            if (d->dt == AMP_DTYPE_F32) {
                memcpy(dst, (const float *)dy->p + off, (size_t)gm->P * sizeof(float));
            } else if (dy->f32) {
                amp_tally l = {0, 0, 0};
                s->k->quantize16(dst, (const float *)dy->p + off, (size_t)gm->P, (int)d->dt,
                                 dy->t ? &l : NULL);
                nz += l.nz;
                uf += l.uf;
                of += l.of;
            } else {
                s->k->widen16(dst, (const uint16_t *)dy->p + off, (size_t)gm->P, (int)d->dt);
            }
        }
    if (dy->t) {
        dy->t->nz += nz;
        dy->t->uf += uf;
        dy->t->of += of;
    }
}

/* One output plane of conv2d_forward_round: out(out_dt) = round(quantize(yc)
 * + b), a tile at a time through FP32 on the stack, counted into t. */
static void round_plane(const amp_cpu_kern *k, uint16_t *out, const float *yc, size_t n, int dt,
                        int out_dt, int add_b, float b, amp_tally *t) {
    float v[QTILE];
    for (size_t i = 0; i < n; i += QTILE) {
        size_t len = n - i < QTILE ? n - i : QTILE;
        quantize_add(k, v, yc + i, len, dt, add_b, b);
        k->round16(out + i, v, len, out_dt, t);
    }
}

/* conv2d_forward into y (FP32), or with out16 into out16(out_dt) rounded
 * and counted into cnt. */
static int conv_forward(amp_backend *be, float *y, uint16_t *out16, amp_dtype out_dt,
                        amp_round_count *cnt, const void *x, const void *w, const float *bias,
                        const amp_conv2d_desc *d, void *ws, size_t ws_bytes) {
    conv_ws s;
    if (conv_setup(be, &s, d, w, ws, ws_bytes) != 0) return 1;
    const conv_geom *gm = &s.g;
    const float *wf = weights(&s, w, d);
    unsigned long long nz = 0, uf = 0, of = 0;
    for (int i0 = 0; i0 < d->n; i0 += gm->G) {
        int g = d->n - i0 < gm->G ? d->n - i0 : gm->G, cols = g * gm->P;
        if (im2col(be, &s, x, d, i0, g) != 0) return 1;
        /* yc[c_out, cols] = W[c_out, K] . col[K, cols] */
        if (gemm32(be, 0, 0, d->c_out, cols, gm->K, wf, gm->K, s.col, cols, 0.0f, s.yc, cols))
            return 1;
        /* y = quantize(yc) + bias (and out = round(y)), one pass per plane */
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : nz, uf, of) \
    if ((size_t)d->c_out * cols > 32768)
        for (int gi = 0; gi < g; gi++)
            for (int co = 0; co < d->c_out; co++) {
                size_t o = ((size_t)(i0 + gi) * d->c_out + co) * gm->P;
                const float *src = s.yc + (size_t)co * cols + (size_t)gi * gm->P;
                if (!out16) {
                    quantize_add(s.k, y + o, src, (size_t)gm->P, (int)d->dt, bias != NULL,
                                 bias ? bias[co] : 0.0f);
                    continue;
                }
                amp_tally l = {0, 0, 0};
                round_plane(s.k, out16 + o, src, (size_t)gm->P, (int)d->dt, (int)out_dt,
                            bias != NULL, bias ? bias[co] : 0.0f, &l);
                nz += l.nz;
                uf += l.uf;
                of += l.of;
            }
    }
    amp_cpu_count_add(cnt, nz, uf, of);
    return 0;
}

static int cpu_conv2d_forward(amp_backend *be, float *y, const void *x, const void *w,
                              const float *bias, const amp_conv2d_desc *d, void *ws,
                              size_t ws_bytes) {
    return conv_forward(be, y, NULL, AMP_DTYPE_F32, NULL, x, w, bias, d, ws, ws_bytes);
}

static int cpu_conv2d_forward_round(amp_backend *be, const amp_round_out *out, const void *x,
                                    const void *w, const float *bias, const amp_conv2d_desc *d,
                                    void *ws, size_t ws_bytes) {
    if (out->dt == AMP_DTYPE_F32)
        return conv_forward(be, out->p, NULL, AMP_DTYPE_F32, NULL, x, w, bias, d, ws, ws_bytes);
    return conv_forward(be, NULL, out->p, out->dt, out->cnt, x, w, bias, d, ws, ws_bytes);
}

/* One input plane [h, w] of dx from the column matrix rows (ci, ky, kx)
 * (r: row (ci, 0, 0) at this image's columns, ld apart): each element
 * receives its terms in (ky, kx) ascending order starting from 0, so the
 * order of the sum is fixed by the shape. */
CNN_INLINE void col2im_plane_body(float *plane, const float *r, size_t ld,
                                  const amp_conv2d_desc *d, int p, int q) {
    for (size_t i = 0; i < (size_t)d->h * d->w; i++) plane[i] = 0.0f;
    for (int ky = 0; ky < d->kh; ky++)
        for (int kx = 0; kx < d->kw; kx++, r += ld) {
            int y0, y1, x0, x1;
            valid_range(p, d->stride_h, d->pad_h, ky, d->h, &y0, &y1);
            valid_range(q, d->stride_w, d->pad_w, kx, d->w, &x0, &x1);
            for (int oy = y0; oy < y1; oy++) {
                int iy = oy * d->stride_h - d->pad_h + ky;
                float *restrict dst = plane + (size_t)iy * d->w + (x0 * d->stride_w - d->pad_w + kx);
                const float *restrict ro = r + (size_t)oy * q;
                if (d->stride_w == 1)
                    for (int ox = x0; ox < x1; ox++) dst[ox - x0] += ro[ox];
                else
                    for (int ox = x0; ox < x1; ox++) dst[(size_t)(ox - x0) * d->stride_w] += ro[ox];
            }
        }
}
CNN_VARIANTS(col2im_plane,
             (float *plane, const float *r, size_t ld, const amp_conv2d_desc *d, int p, int q),
             (plane, r, ld, d, p, q))

/* dx of images i0 .. i0+g-1 from the chunk's dy in s->yc: dcol = W^T dy
 * into s->col, then col2im as a gather per input plane, the plane rounded to
 * dt while it is in cache (and then to dx_dt, counted into t, unless F32). */
static int backward_data_chunk(amp_backend *be, const conv_ws *s, float *dx, const float *wf,
                               const amp_conv2d_desc *d, int i0, int g, amp_dtype dx_dt,
                               amp_tally *t) {
    const conv_geom *gm = &s->g;
    size_t x_img = (size_t)d->c_in * d->h * d->w, hw = (size_t)d->h * d->w;
    int lvl = isa_level(s->k), cols = g * gm->P;
    /* dcol[K, cols] = W[c_out, K]^T . dy[c_out, cols] */
    if (gemm32(be, 1, 0, gm->K, cols, d->c_out, wf, gm->K, s->yc, cols, 0.0f, s->col, cols))
        return 1;
    unsigned long long nz = 0, uf = 0, of = 0;
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : nz, uf, of) \
    if ((size_t)g * x_img > 32768)
    for (int gi = 0; gi < g; gi++)
        for (int ci = 0; ci < d->c_in; ci++) {
            float *plane = dx + (size_t)(i0 + gi) * x_img + (size_t)ci * hw;
            CNN_PICK(col2im_plane, lvl)(plane, s->col + (size_t)ci * d->kh * d->kw * cols +
                                                   (size_t)gi * gm->P,
                                        (size_t)cols, d, gm->p, gm->q);
            if (d->dt != AMP_DTYPE_F32) quantize_add(s->k, plane, plane, hw, (int)d->dt, 0, 0.0f);
            if (dx_dt != AMP_DTYPE_F32) {
                amp_tally l = {0, 0, 0};
                s->k->quantize16(plane, plane, hw, (int)dx_dt, t ? &l : NULL);
                nz += l.nz;
                uf += l.uf;
                of += l.of;
            }
        }
    if (t) {
        t->nz += nz;
        t->uf += uf;
        t->of += of;
    }
    return 0;
}

static int conv_backward_data(amp_backend *be, float *dx, const dy_src *dy, const void *w,
                              const amp_conv2d_desc *d, void *ws, size_t ws_bytes) {
    conv_ws s;
    if (conv_setup(be, &s, d, w, ws, ws_bytes) != 0) return 1;
    const conv_geom *gm = &s.g;
    const float *wf = weights(&s, w, d);
    for (int i0 = 0; i0 < d->n; i0 += gm->G) {
        int g = d->n - i0 < gm->G ? d->n - i0 : gm->G;
        gather_dy(&s, dy, d, i0, g);
        if (backward_data_chunk(be, &s, dx, wf, d, i0, g, AMP_DTYPE_F32, NULL) != 0) return 1;
    }
    return 0;
}

/* ---- the whole batch's column matrix, for a Conv2d whose GEMM operands
 * the kit quantizes (the "scaled" family): one chunk of all n images ---- */

static int whole_batch(amp_backend *be, conv_ws *s, float *col, const amp_conv2d_desc *d,
                       amp_conv2d_desc *d32) {
    if (amp_conv2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    *d32 = *d;
    d32->dt = AMP_DTYPE_F32;
    s->g = geom(d32, be->info.threads);
    s->g.G = d->n;
    s->k = amp_cpu_kern_of(be);
    s->col = col;
    s->yc = s->wf = s->xf = NULL;
    return 0;
}

int amp_cpu_conv2d_im2col(amp_backend *be, float *col, const float *x, const amp_conv2d_desc *d) {
    conv_ws s;
    amp_conv2d_desc d32;
    if (whole_batch(be, &s, col, d, &d32) != 0) return 1;
    return im2col(be, &s, x, &d32, 0, d->n);
}

int amp_cpu_conv2d_col2im(amp_backend *be, float *dx, const float *col, const amp_conv2d_desc *d) {
    conv_ws s;
    amp_conv2d_desc d32;
    if (whole_batch(be, &s, (float *)col, d, &d32) != 0) return 1;
    const conv_geom *gm = &s.g;
    size_t cols = (size_t)d->n * gm->P, x_img = (size_t)d->c_in * d->h * d->w;
    int lvl = isa_level(s.k);
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)d->n * x_img > 32768)
    for (int gi = 0; gi < d->n; gi++)
        for (int ci = 0; ci < d->c_in; ci++)
            CNN_PICK(col2im_plane, lvl)(dx + (size_t)gi * x_img + (size_t)ci * d->h * d->w,
                                        col + (size_t)ci * d->kh * d->kw * cols + (size_t)gi * gm->P,
                                        cols, &d32, gm->p, gm->q);
    return 0;
}

/* The bias gradient's FP64 channel sums of dy, taken from each chunk's
 * FP32 dy while it is in cache (no second pass over dy, and no second
 * widening of a 16-bit one): lane[co][j % 8] over the images in order,
 * each plane's elements in order, as a sum over dy itself would add them. */
#define BIAS_LANES_STACK 256 /* channels whose lanes live on the stack */

static void chunk_channel_sums(double (*lane)[LANES], const conv_ws *s, const amp_conv2d_desc *d,
                               int g) {
    const conv_geom *gm = &s->g;
    size_t cols = (size_t)g * gm->P;
    int lvl = isa_level(s->k);
#pragma omp parallel for schedule(static) if ((size_t)d->c_out * cols > 32768)
    for (int co = 0; co < d->c_out; co++)
        for (int gi = 0; gi < g; gi++)
            CNN_PICK(lanes_sum, lvl)(lane[co], s->yc + (size_t)co * cols + (size_t)gi * gm->P, gm->P);
}

/* conv2d_backward_filter; with dx (and w) also conv2d_backward_data, chunk
 * by chunk on the same gathered dy: after dW's GEMM has read the chunk's
 * column matrix, dcol overwrites it. Each GEMM has the shape and operands
 * of the separate ops, so the bits are theirs. */
static int conv_backward_filter(amp_backend *be, float *dw, float *dbias, float *dx, const void *x,
                                const dy_src *dy, const void *w, const amp_conv2d_desc *d,
                                void *ws, size_t ws_bytes, amp_dtype dx_dt, amp_tally *dx_t) {
    conv_ws s;
    if (conv_setup(be, &s, d, dx ? w : NULL, ws, ws_bytes) != 0) return 1;
    const conv_geom *gm = &s.g;
    const float *wf = dx ? weights(&s, w, d) : NULL;
    double stack_lanes[BIAS_LANES_STACK][LANES], (*lane)[LANES] = NULL;
    if (dbias) {
        lane = d->c_out <= BIAS_LANES_STACK ? stack_lanes
                                            : malloc((size_t)d->c_out * sizeof *lane);
        if (!lane) {
            snprintf(be->err, sizeof be->err, "conv2d: out of host memory");
            return 1;
        }
        memset(lane, 0, (size_t)d->c_out * sizeof *lane);
    }
    int rc = 0;
    for (int i0 = 0; i0 < d->n && rc == 0; i0 += gm->G) {
        int g = d->n - i0 < gm->G ? d->n - i0 : gm->G, cols = g * gm->P;
        if ((rc = im2col(be, &s, x, d, i0, g)) != 0) break;
        gather_dy(&s, dy, d, i0, g);
        if (lane) chunk_channel_sums(lane, &s, d, g);
        /* dW[c_out, K] (+)= dy[c_out, cols] . col[K, cols]^T, chunks in order */
        rc = gemm32(be, 0, 1, d->c_out, gm->K, cols, s.yc, cols, s.col, cols, i0 ? 1.0f : 0.0f, dw,
                    gm->K);
        if (rc == 0 && dx) rc = backward_data_chunk(be, &s, dx, wf, d, i0, g, dx_dt, dx_t);
    }
    if (rc == 0 && d->dt != AMP_DTYPE_F32) {
        size_t wn = (size_t)d->c_out * gm->K;
        quantize_add(s.k, dw, dw, wn, (int)d->dt, 0, 0.0f);
    }
    if (rc == 0 && lane)
        for (int co = 0; co < d->c_out; co++) dbias[co] = (float)lanes_total(lane[co]);
    if (lane != stack_lanes) free(lane);
    return rc;
}

static int cpu_conv2d_backward_data(amp_backend *be, float *dx, const void *dy, const void *w,
                                    const amp_conv2d_desc *d, void *ws, size_t ws_bytes) {
    dy_src s = {dy, 0, NULL};
    return conv_backward_data(be, dx, &s, w, d, ws, ws_bytes);
}

static int cpu_conv2d_backward_filter(amp_backend *be, float *dw, float *dbias, const void *x,
                                      const void *dy, const amp_conv2d_desc *d, void *ws,
                                      size_t ws_bytes) {
    dy_src s = {dy, 0, NULL};
    return conv_backward_filter(be, dw, dbias, NULL, x, &s, NULL, d, ws, ws_bytes, AMP_DTYPE_F32,
                                NULL);
}

static int cpu_conv2d_backward_round(amp_backend *be, const amp_conv2d_grads *g, const void *x,
                                     const float *dy, const void *w, const amp_conv2d_desc *d,
                                     void *ws, size_t ws_bytes) {
    if (d->dt == AMP_DTYPE_F32) {
        snprintf(be->err, sizeof be->err, "conv2d_backward_round: needs a 16-bit dtype");
        return 1;
    }
    amp_tally t = {0, 0, 0}, tx = {0, 0, 0};
    dy_src counted = {dy, 1, g->dy_cnt ? &t : NULL};
    /* dW and dx in one loop over the chunks: each chunk of dy gathered once */
    if (conv_backward_filter(be, g->dw, g->dbias, g->dx, x, &counted, w, d, ws, ws_bytes, g->dx_dt,
                             g->dx_cnt ? &tx : NULL) != 0)
        return 1;
    amp_cpu_count_add(g->dy_cnt, t.nz, t.uf, t.of);
    amp_cpu_count_add(g->dx_cnt, tx.nz, tx.uf, tx.of);
    return 0;
}

const amp_conv_ops amp_cpu_conv_ops = {
    .conv2d_workspace = cpu_conv2d_workspace,
    .conv2d_forward = cpu_conv2d_forward,
    .conv2d_backward_data = cpu_conv2d_backward_data,
    .conv2d_backward_filter = cpu_conv2d_backward_filter,
    .max_pool2d_forward = amp_cpu_max_pool2d_forward,
    .max_pool2d_backward = amp_cpu_max_pool2d_backward,
    .batch_norm_forward = amp_cpu_batch_norm_forward,
    .batch_norm_backward = amp_cpu_batch_norm_backward,
    .batch_norm_x16 = 1,
    .conv2d_forward_round = cpu_conv2d_forward_round,
    .conv2d_backward_round = cpu_conv2d_backward_round,
};
