/* CPU backend, batch normalisation: FP64 channel sums in 8 lanes of a fixed
 * order, one channel per thread (the same bits at any thread count and
 * vector width); the per-element math is kernels/conv.h's, the functions
 * the CUDA kernels call. With [dist] sync_batchnorm the sums are those of
 * every rank's rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu_cnn_ops.h"
#include "backend/cpu_cnn_variants.h"
#include "backend/cpu_internal.h"
#include "backend/cpu_kern.h"
#include "backend/kernels/conv.h"

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

/* lane[j % 8] += (v[j] - m)^2 */
CNN_INLINE void lanes_sqdev_body(double *restrict lane, const float *restrict v, int n, double m) {
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) {
            double t = (double)v[j + l] - m;
            lane[l] += t * t;
        }
    for (; j < n; j++) {
        double t = (double)v[j] - m;
        lane[j % LANES] += t * t;
    }
}
CNN_VARIANTS(lanes_sqdev, (double *restrict lane, const float *restrict v, int n, double m),
             (lane, v, n, m))

/* batch norm backward's sums: sdy += dy, sdyx += dy * xhat */
CNN_INLINE void lanes_bn_bwd_body(double *restrict sdy, double *restrict sdyx,
                                  const float *restrict dy, const float *restrict x, int n,
                                  float mean, float invstd) {
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) {
            sdy[l] += dy[j + l];
            sdyx[l] += (double)dy[j + l] * amp_bn_xhat(x[j + l], mean, invstd);
        }
    for (; j < n; j++) {
        sdy[j % LANES] += dy[j];
        sdyx[j % LANES] += (double)dy[j] * amp_bn_xhat(x[j], mean, invstd);
    }
}
CNN_VARIANTS(lanes_bn_bwd,
             (double *restrict sdy, double *restrict sdyx, const float *restrict dy,
              const float *restrict x, int n, float mean, float invstd),
             (sdy, sdyx, dy, x, n, mean, invstd))

CNN_INLINE void bn_apply_body(float *y, const float *x, int n, float mean, float invstd, float g,
                              float b) {
    for (int j = 0; j < n; j++) y[j] = amp_bn_apply(x[j], mean, invstd, g, b);
}
CNN_VARIANTS(bn_apply, (float *y, const float *x, int n, float mean, float invstd, float g, float b),
             (y, x, n, mean, invstd, g, b))

/* dx may equal dy (element j is read before it is written) */
CNN_INLINE void bn_grad_body(float *dx, const float *dy, const float *x, int n, float mean,
                             float invstd, float g, float mdy, float mdyx, int training) {
    for (int j = 0; j < n; j++)
        dx[j] = amp_bn_grad(dy[j], x[j], mean, invstd, g, mdy, mdyx, training);
}
CNN_VARIANTS(bn_grad,
             (float *dx, const float *dy, const float *x, int n, float mean, float invstd, float g,
              float mdy, float mdyx, int training),
             (dx, dy, x, n, mean, invstd, g, mdy, mdyx, training))


/* The x of a batch-norm op: FP32, or 16-bit values widened a tile of a
 * plane at a time as the loops read them (no FP32 copy of the whole
 * activation to write and read back). Tiles start at multiples of QTILE,
 * a multiple of LANES, so every element keeps its lane and every lane its
 * order of additions: the same bits as over the FP32 copy. */
typedef struct bn_x {
    const float *f;
    const uint16_t *h; /* NULL: f */
    int dt;
    const amp_cpu_kern *k;
    int lvl;
} bn_x;

static bn_x bn_x_of(const amp_cpu_kern *k, const float *f, const uint16_t *h, amp_dtype dt) {
    bn_x x = {f, h, (int)dt, k, isa_level(k)};
    return x;
}

/* Elements [at, at + len) of x as FP32: x's own, or widened into t. */
static inline const float *bn_x_at(const bn_x *x, size_t at, int len, float *t) {
    if (!x->h) return x->f + at;
    x->k->widen16(t, x->h + at, (size_t)len, x->dt);
    return t;
}

/* The tile length over a plane of hw: the whole plane for an FP32 x. */
static inline int bn_x_step(const bn_x *x, int hw) { return x->h ? QTILE : hw; }

static void plane_sum(double *lane, const bn_x *x, size_t base, int hw) {
    float t[QTILE];
    for (int j0 = 0, st = bn_x_step(x, hw); j0 < hw; j0 += st) {
        int len = hw - j0 < st ? hw - j0 : st;
        CNN_PICK(lanes_sum, x->lvl)(lane, bn_x_at(x, base + j0, len, t), len);
    }
}

static void plane_sqdev(double *lane, const bn_x *x, size_t base, int hw, double m) {
    float t[QTILE];
    for (int j0 = 0, st = bn_x_step(x, hw); j0 < hw; j0 += st) {
        int len = hw - j0 < st ? hw - j0 : st;
        CNN_PICK(lanes_sqdev, x->lvl)(lane, bn_x_at(x, base + j0, len, t), len, m);
    }
}

static void plane_apply(float *y, const bn_x *x, size_t base, int hw, float mean, float invstd,
                        float g, float b) {
    float t[QTILE];
    for (int j0 = 0, st = bn_x_step(x, hw); j0 < hw; j0 += st) {
        int len = hw - j0 < st ? hw - j0 : st;
        CNN_PICK(bn_apply, x->lvl)(y + base + j0, bn_x_at(x, base + j0, len, t), len, mean, invstd,
                                   g, b);
    }
}

static void plane_bn_bwd(double *sdy, double *sdyx, const float *dy, const bn_x *x, size_t base,
                         int hw, float mean, float invstd) {
    float t[QTILE];
    for (int j0 = 0, st = bn_x_step(x, hw); j0 < hw; j0 += st) {
        int len = hw - j0 < st ? hw - j0 : st;
        CNN_PICK(lanes_bn_bwd, x->lvl)(sdy, sdyx, dy + base + j0, bn_x_at(x, base + j0, len, t), len,
                                       mean, invstd);
    }
}

static void plane_grad(float *dx, const float *dy, const bn_x *x, size_t base, int hw, float mean,
                       float invstd, float g, float mdy, float mdyx, int training) {
    float t[QTILE];
    for (int j0 = 0, st = bn_x_step(x, hw); j0 < hw; j0 += st) {
        int len = hw - j0 < st ? hw - j0 : st;
        CNN_PICK(bn_grad, x->lvl)(dx + base + j0, dy + base + j0, bn_x_at(x, base + j0, len, t), len,
                                  mean, invstd, g, mdy, mdyx, training);
    }
}

/* Synchronised batch norm (a->sync): the channel loops of the forward and
 * backward below, cut where a sum over the ranks must come in. Pass 1 sums
 * x per channel (with the row count), pass 2 the squared deviations from
 * the GLOBAL mean, so the variance is the same two-pass formula one process
 * computes over all rows; only the order of the FP64 additions differs. */
static int cpu_bn_sync_sum(amp_backend *be, const amp_allsum *sync, double *v, size_t n) {
    if (sync->sum(sync->ctx, v, n) != 0) {
        if (!be->err[0]) snprintf(be->err, sizeof be->err, "batch_norm: the sum over the ranks failed");
        return 1;
    }
    return 0;
}

static int cpu_bn_forward_sync(amp_backend *be, const amp_batch_norm_fwd *a, const bn_x *x) {
    int n = a->n, c = a->c, hw = a->hw;
    /* [c] sums, the row count, [c] squared deviations */
    double *v = malloc((2 * (size_t)c + 1) * sizeof *v), *sq = v + c + 1;
    if (!v) {
        snprintf(be->err, sizeof be->err, "batch_norm: out of host memory");
        return 1;
    }
#pragma omp parallel for schedule(static) if ((double)n * c * hw > 32768)
    for (int ch = 0; ch < c; ch++) {
        double sum[LANES] = {0};
        for (int i = 0; i < n; i++) plane_sum(sum, x, ((size_t)i * c + ch) * hw, hw);
        v[ch] = lanes_total(sum);
    }
    v[c] = (double)n * hw;
    if (cpu_bn_sync_sum(be, a->sync, v, (size_t)c + 1) != 0) goto fail;
    double count = v[c];
#pragma omp parallel for schedule(static) if ((double)n * c * hw > 32768)
    for (int ch = 0; ch < c; ch++) {
        double d[LANES] = {0}, m = v[ch] / count;
        for (int i = 0; i < n; i++) plane_sqdev(d, x, ((size_t)i * c + ch) * hw, hw, m);
        sq[ch] = lanes_total(d);
    }
    if (cpu_bn_sync_sum(be, a->sync, sq, (size_t)c) != 0) goto fail;
#pragma omp parallel for schedule(static) if ((double)n * c * hw > 32768)
    for (int ch = 0; ch < c; ch++) {
        double m = v[ch] / count, var = sq[ch] / count;
        float mean = (float)m, invstd = amp_bn_invstd(var, a->eps);
        if (a->running_mean && a->running_var)
            amp_bn_running_update(&a->running_mean[ch], &a->running_var[ch], m, var, count,
                                  a->momentum);
        a->save_mean[ch] = mean;
        a->save_invstd[ch] = invstd;
        for (int i = 0; i < n; i++)
            plane_apply(a->y, x, ((size_t)i * c + ch) * hw, hw, mean, invstd, a->gamma[ch],
                        a->beta[ch]);
    }
    free(v);
    return 0;
fail:
    free(v);
    return 1;
}

static int cpu_bn_backward_sync(amp_backend *be, const amp_batch_norm_bwd *a, const bn_x *x) {
    int n = a->n, c = a->c, hw = a->hw;
    /* [c] sums of dy, [c] of dy * xhat, the row count */
    double *v = malloc((2 * (size_t)c + 1) * sizeof *v);
    if (!v) {
        snprintf(be->err, sizeof be->err, "batch_norm: out of host memory");
        return 1;
    }
#pragma omp parallel for schedule(static) if ((double)n * c * hw > 32768)
    for (int ch = 0; ch < c; ch++) {
        double sdy[LANES] = {0}, sdyx[LANES] = {0};
        for (int i = 0; i < n; i++)
            plane_bn_bwd(sdy, sdyx, a->dy, x, ((size_t)i * c + ch) * hw, hw, a->save_mean[ch],
                         a->save_invstd[ch]);
        v[ch] = lanes_total(sdy);
        v[c + ch] = lanes_total(sdyx);
        a->dbeta[ch] = (float)v[ch];
        a->dgamma[ch] = (float)v[c + ch];
    }
    v[2 * c] = (double)n * hw;
    if (cpu_bn_sync_sum(be, a->sync, v, 2 * (size_t)c + 1) != 0) {
        free(v);
        return 1;
    }
    double count = v[2 * c];
#pragma omp parallel for schedule(static) if ((double)n * c * hw > 32768)
    for (int ch = 0; ch < c; ch++) {
        float mdy = (float)(v[ch] / count), mdyx = (float)(v[c + ch] / count);
        for (int i = 0; i < n; i++)
            plane_grad(a->dx, a->dy, x, ((size_t)i * c + ch) * hw, hw, a->save_mean[ch],
                       a->save_invstd[ch], a->gamma[ch], mdy, mdyx, 1);
    }
    free(v);
    return 0;
}

int amp_cpu_batch_norm_forward(amp_backend *be, const amp_batch_norm_fwd *a) {
    float *y = a->y, *save_mean = a->save_mean, *save_invstd = a->save_invstd;
    float *running_mean = a->running_mean, *running_var = a->running_var;
    const float *gamma = a->gamma, *beta = a->beta;
    int n = a->n, c = a->c, hw = a->hw, training = a->training;
    float momentum = a->momentum, eps = a->eps;
    if (bn_check(be, n, c, hw, training) != 0) return 1;
    double count = (double)n * hw;
    bn_x xs = bn_x_of(amp_cpu_kern_of(be), a->x, a->x16, a->x16_dt), *x = &xs;
    if (training && a->sync) return cpu_bn_forward_sync(be, a, x);
#pragma omp parallel for schedule(static) if ((double)n * c * hw > 32768)
    for (int ch = 0; ch < c; ch++) {
        float mean, invstd;
        if (training) {
            double sum[LANES] = {0}, sq[LANES] = {0};
            for (int i = 0; i < n; i++) plane_sum(sum, x, ((size_t)i * c + ch) * hw, hw);
            double m = lanes_total(sum) / count;
            for (int i = 0; i < n; i++) plane_sqdev(sq, x, ((size_t)i * c + ch) * hw, hw, m);
            double var = lanes_total(sq) / count;
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
        for (int i = 0; i < n; i++)
            plane_apply(y, x, ((size_t)i * c + ch) * hw, hw, mean, invstd, gamma[ch], beta[ch]);
    }
    return 0;
}

int amp_cpu_batch_norm_backward(amp_backend *be, const amp_batch_norm_bwd *a) {
    float *dx = a->dx, *dgamma = a->dgamma, *dbeta = a->dbeta;
    const float *dy = a->dy, *gamma = a->gamma;
    const float *save_mean = a->save_mean, *save_invstd = a->save_invstd;
    int n = a->n, c = a->c, hw = a->hw, training = a->training;
    if (bn_check(be, n, c, hw, training) != 0) return 1;
    double count = (double)n * hw;
    bn_x xs = bn_x_of(amp_cpu_kern_of(be), a->x, a->x16, a->x16_dt), *x = &xs;
    if (training && a->sync) return cpu_bn_backward_sync(be, a, x);
#pragma omp parallel for schedule(static) if ((double)n * c * hw > 32768)
    for (int ch = 0; ch < c; ch++) {
        float mean = save_mean[ch], invstd = save_invstd[ch];
        double sdy[LANES] = {0}, sdyx[LANES] = {0};
        for (int i = 0; i < n; i++)
            plane_bn_bwd(sdy, sdyx, dy, x, ((size_t)i * c + ch) * hw, hw, mean, invstd);
        double s1 = lanes_total(sdy), s2 = lanes_total(sdyx);
        dgamma[ch] = (float)s2;
        dbeta[ch] = (float)s1;
        float mdy = (float)(s1 / count), mdyx = (float)(s2 / count);
        for (int i = 0; i < n; i++)
            plane_grad(dx, dy, x, ((size_t)i * c + ch) * hw, hw, mean, invstd, gamma[ch], mdy, mdyx,
                       training);
    }
    return 0;
}
