/* CPU backend, convolutional-network ops: conv2d as im2col + OpenBLAS sgemm
 * per image (16-bit operands widened exactly to FP32 first, so the
 * accumulation is FP32), max pooling and batch normalisation as plain
 * loops. The per-element math is kernels/conv.h, the same functions the
 * CUDA kernels call. Deterministic: the loops run in a fixed order and
 * OpenBLAS splits sgemm over the output, never over the summed dimension.
 *
 * Also the shape checks every backend runs first (amp_*_desc_check). */
#include <cblas.h>
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

/* Workspace in floats: the column matrix [K, P] of one image, plus for a
 * 16-bit dt the widened weights [c_out, K] and one image's widened dy
 * [c_out, P]. */
static size_t conv_ws_floats(const amp_conv2d_desc *d, size_t *col, size_t *wf) {
    size_t pq = (size_t)amp_conv2d_out_h(d) * (size_t)amp_conv2d_out_w(d);
    size_t k = (size_t)d->c_in * d->kh * d->kw;
    *col = k * pq;
    *wf = d->dt == AMP_DTYPE_F32 ? 0 : (size_t)d->c_out * k;
    size_t dyf = d->dt == AMP_DTYPE_F32 ? 0 : (size_t)d->c_out * pq;
    return *col + *wf + dyf;
}

int amp_cpu_conv2d_workspace(amp_backend *be, const amp_conv2d_desc *d, size_t *bytes) {
    if (amp_conv2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    size_t col, wf;
    *bytes = conv_ws_floats(d, &col, &wf) * sizeof(float);
    return 0;
}

typedef struct conv_ws {
    float *col, *wf, *dyf;
} conv_ws;

static int conv_setup(amp_backend *be, conv_ws *s, const amp_conv2d_desc *d, void *ws,
                      size_t ws_bytes) {
    if (amp_conv2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    size_t col, wf, need = conv_ws_floats(d, &col, &wf) * sizeof(float);
    if (ws_bytes < need || (need && !ws)) {
        snprintf(be->err, sizeof be->err,
                 "conv2d: workspace of %zu bytes is smaller than the %zu bytes "
                 "conv2d_workspace asked for",
                 ws_bytes, need);
        return 1;
    }
    s->col = ws;
    s->wf = s->col + col;
    s->dyf = s->wf + wf;
    return 0;
}

static void widen_dt(float *dst, const void *src, amp_dtype dt, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = amp_load_dt(src, i, (int)dt);
}

static void im2col(float *col, const void *x_img, const amp_conv2d_desc *d, int p, int q) {
    size_t pq = (size_t)p * q;
    for (int ci = 0; ci < d->c_in; ci++)
        for (int ky = 0; ky < d->kh; ky++)
            for (int kx = 0; kx < d->kw; kx++) {
                float *row = col + ((size_t)(ci * d->kh + ky) * d->kw + kx) * pq;
                for (int oy = 0; oy < p; oy++)
                    for (int ox = 0; ox < q; ox++)
                        row[(size_t)oy * q + ox] =
                            amp_im2col_value(x_img, (int)d->dt, d->h, d->w, ci, ky, kx, oy, ox,
                                             d->stride_h, d->stride_w, d->pad_h, d->pad_w);
            }
}

static size_t dt_size(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

int amp_cpu_conv2d_forward(amp_backend *be, float *y, const void *x, const void *w,
                           const float *bias, const amp_conv2d_desc *d, void *ws,
                           size_t ws_bytes) {
    conv_ws s;
    if (conv_setup(be, &s, d, ws, ws_bytes) != 0) return 1;
    int p = amp_conv2d_out_h(d), q = amp_conv2d_out_w(d);
    int K = d->c_in * d->kh * d->kw, P = p * q;
    const float *wf = w;
    if (d->dt != AMP_DTYPE_F32) {
        widen_dt(s.wf, w, d->dt, (size_t)d->c_out * K);
        wf = s.wf;
    }
    size_t x_img = (size_t)d->c_in * d->h * d->w, y_img = (size_t)d->c_out * P;
    for (int i = 0; i < d->n; i++) {
        im2col(s.col, (const char *)x + (size_t)i * x_img * dt_size(d->dt), d, p, q);
        float *yi = y + (size_t)i * y_img;
        /* y_img[c_out, P] = W[c_out, K] . col[K, P] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d->c_out, P, K, 1.0f, wf, K, s.col,
                    P, 0.0f, yi, P);
        for (int co = 0; co < d->c_out; co++) {
            float b = bias ? bias[co] : 0.0f;
            float *row = yi + (size_t)co * P;
            for (int j = 0; j < P; j++) {
                float v = amp_quantize(row[j], (int)d->dt, NULL);
                row[j] = bias ? v + b : v;
            }
        }
    }
    return 0;
}

/* One image's dy as FP32: the input itself for F32, else widened into dyf. */
static const float *dy_image(const conv_ws *s, const void *dy, const amp_conv2d_desc *d, int i,
                             size_t y_img) {
    if (d->dt == AMP_DTYPE_F32) return (const float *)dy + (size_t)i * y_img;
    widen_dt(s->dyf, (const char *)dy + (size_t)i * y_img * 2, d->dt, y_img);
    return s->dyf;
}

int amp_cpu_conv2d_backward_data(amp_backend *be, float *dx, const void *dy, const void *w,
                                 const amp_conv2d_desc *d, void *ws, size_t ws_bytes) {
    conv_ws s;
    if (conv_setup(be, &s, d, ws, ws_bytes) != 0) return 1;
    int p = amp_conv2d_out_h(d), q = amp_conv2d_out_w(d);
    int K = d->c_in * d->kh * d->kw, P = p * q;
    const float *wf = w;
    if (d->dt != AMP_DTYPE_F32) {
        widen_dt(s.wf, w, d->dt, (size_t)d->c_out * K);
        wf = s.wf;
    }
    size_t x_img = (size_t)d->c_in * d->h * d->w, y_img = (size_t)d->c_out * P;
    for (int i = 0; i < d->n; i++) {
        const float *dyi = dy_image(&s, dy, d, i, y_img);
        /* dcol[K, P] = W[c_out, K]^T . dy[c_out, P] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, P, d->c_out, 1.0f, wf, K, dyi, P,
                    0.0f, s.col, P);
        float *dxi = dx + (size_t)i * x_img;
        for (int ci = 0; ci < d->c_in; ci++)
            for (int iy = 0; iy < d->h; iy++)
                for (int ix = 0; ix < d->w; ix++) {
                    float v = amp_col2im_value(s.col, p, q, d->kh, d->kw, ci, iy, ix, d->stride_h,
                                               d->stride_w, d->pad_h, d->pad_w);
                    dxi[((size_t)ci * d->h + iy) * d->w + ix] = amp_quantize(v, (int)d->dt, NULL);
                }
    }
    return 0;
}

int amp_cpu_conv2d_backward_filter(amp_backend *be, float *dw, float *dbias, const void *x,
                                   const void *dy, const amp_conv2d_desc *d, void *ws,
                                   size_t ws_bytes) {
    conv_ws s;
    if (conv_setup(be, &s, d, ws, ws_bytes) != 0) return 1;
    int p = amp_conv2d_out_h(d), q = amp_conv2d_out_w(d);
    int K = d->c_in * d->kh * d->kw, P = p * q;
    size_t x_img = (size_t)d->c_in * d->h * d->w, y_img = (size_t)d->c_out * P;
    for (int i = 0; i < d->n; i++) {
        im2col(s.col, (const char *)x + (size_t)i * x_img * dt_size(d->dt), d, p, q);
        const float *dyi = dy_image(&s, dy, d, i, y_img);
        /* dW[c_out, K] (+)= dy[c_out, P] . col[K, P]^T, images in order */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d->c_out, K, P, 1.0f, dyi, P, s.col,
                    P, i ? 1.0f : 0.0f, dw, K);
    }
    if (d->dt != AMP_DTYPE_F32)
        for (size_t j = 0; j < (size_t)d->c_out * K; j++) dw[j] = amp_quantize(dw[j], (int)d->dt, NULL);
    if (dbias) {
        for (int co = 0; co < d->c_out; co++) {
            double sum = 0.0;
            for (int i = 0; i < d->n; i++) {
                size_t base = (size_t)i * y_img + (size_t)co * P;
                for (int j = 0; j < P; j++) sum += amp_load_dt(dy, base + j, (int)d->dt);
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
