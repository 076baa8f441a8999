/* The CUDA backend's convolutional-network ops (cuDNN convolutions, our own
 * pooling and batch-norm kernels) against the CPU backend on the same
 * inputs, per op and dtype:
 *   conv2d forward (with bias), backward-data, backward-filter (with dbias)
 *   in FP32, FP16 and BF16 on odd shapes and one realistic layer; a smaller
 *   batch run in the workspace sized for the full one; with
 *   [run] deterministic the same backward twice must agree bit for bit;
 *   max_pool2d forward/backward (exact, indices included);
 *   batch_norm forward/backward in training and evaluation mode, running
 *   statistics included.
 * Outputs are poisoned with NaN first, so an element the GPU never writes is
 * caught. Tolerances are written next to each comparison. Each op and
 * shape is a row (op_rows.h): a failure is listed and the next row runs.
 * Skips (77) without a visible device; with one, a CUDA backend without
 * conv2d ops (built without cuDNN) fails every conv row, saying so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "gpu_rows.h"

/* |g - c| <= atol + rtol |c| everywhere; NaN anywhere fails. */
static void cmp(const char *what, const float *g, const float *c, size_t n, double atol,
                double rtol) {
    rows_cmp(what, g, c, n, AMP_DTYPE_F32, (rows_tol){ROWS_FINITE, atol, rtol});
}

/* ---- conv2d ---------------------------------------------------------------- */

static void test_conv(const amp_gpu_row *r) {
    const int *v = r->shape;
    amp_conv2d_desc d = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], r->dt};
    if (!amp_backend_supports(rows_dev, "conv"))
        amp_op_abort("the CUDA backend has no conv2d ops: built without cuDNN (see the build's "
                     "'amptrain: cuDNN' line)");
    int p = amp_conv2d_out_h(&d), q = amp_conv2d_out_w(&d);
    size_t xn = (size_t)d.n * d.c_in * d.h * d.w, wn = (size_t)d.c_out * d.c_in * d.kh * d.kw;
    size_t yn = (size_t)d.n * d.c_out * p * q, K = (size_t)d.c_in * d.kh * d.kw;
    size_t db = rows_esize(d.dt);
    float *xf = rows_randn(xn, 1.0f), *wf = rows_randn(wn, 1.0f / sqrtf((float)K)),
          *bf = rows_randn((size_t)d.c_out, 0.5f);
    float *gf = rows_randn(yn, 1.0f);
    void *x = rows_as_dt(xf, xn, d.dt), *w = rows_as_dt(wf, wn, d.dt),
         *g = rows_as_dt(gf, yn, d.dt);
    /* CPU reference */
    size_t cws_b, gws_b;
    rows_ok(AMP_CONV(rows_cpu, conv2d_workspace, &d, &cws_b), rows_cpu, "conv2d_workspace");
    rows_ok(AMP_CONV(rows_dev, conv2d_workspace, &d, &gws_b), rows_dev, "conv2d_workspace");
    void *cws = rows_alloc(cws_b);
    float *cy = rows_alloc(yn * 4), *cdx = rows_alloc(xn * 4), *cdw = rows_alloc(wn * 4),
          *cdb = rows_alloc((size_t)d.c_out * 4);
    rows_ok(AMP_CONV(rows_cpu, conv2d_forward, cy, x, w, bf, &d, cws, cws_b), rows_cpu,
            "conv2d_forward");
    rows_ok(AMP_CONV(rows_cpu, conv2d_backward_data, cdx, g, w, &d, cws, cws_b), rows_cpu,
            "conv2d_backward_data");
    rows_ok(AMP_CONV(rows_cpu, conv2d_backward_filter, cdw, cdb, x, g, &d, cws, cws_b), rows_cpu,
            "conv2d_backward_filter");
    /* GPU */
    void *gx = rows_to_dev(x, xn * db), *gw = rows_to_dev(w, wn * db),
         *gg = rows_to_dev(g, yn * db);
    float *gb = rows_to_dev(bf, (size_t)d.c_out * 4);
    void *gws = rows_dev->ops->alloc(rows_dev, gws_b);
    float *gy = rows_nan_dev(yn * 4), *gdx = rows_nan_dev(xn * 4), *gdw = rows_nan_dev(wn * 4);
    float *gdb = rows_nan_dev((size_t)d.c_out * 4);
    rows_ok(AMP_CONV(rows_dev, conv2d_forward, gy, gx, gw, gb, &d, gws, gws_b), rows_dev,
            "conv2d_forward");
    rows_ok(AMP_CONV(rows_dev, conv2d_backward_data, gdx, gg, gw, &d, gws, gws_b), rows_dev,
            "conv2d_backward_data");
    rows_ok(AMP_CONV(rows_dev, conv2d_backward_filter, gdw, gdb, gx, gg, &d, gws, gws_b), rows_dev,
            "conv2d_backward_filter");
    float *hy = rows_from_dev(gy, yn * 4), *hdx = rows_from_dev(gdx, xn * 4),
          *hdw = rows_from_dev(gdw, wn * 4);
    float *hdb = rows_from_dev(gdb, (size_t)d.c_out * 4);
    /* FP32: both accumulate in FP32 in different orders (cuDNN with FMA
     * math, no TF32), and cuDNN's heuristics may pick a Winograd or FFT
     * algorithm, whose transforms add error of order 1e-5 of the output's
     * scale; outputs are O(1) here (weights ~ 1/sqrt(fan-in)). 16-bit: both
     * round the FP32 result to dt, so an order difference can move a value
     * by one unit in dt's last place (2^-10 / 2^-7 relative), and near zero
     * by the atol. */
    double rtol = r->tol.rtol, atol = r->tol.atol;
    double red = sqrt((double)d.n * p * q); /* dw sums over n*p*q products */
    char what[160];
    snprintf(what, sizeof what, "%s forward", r->name);
    cmp(what, hy, cy, yn, atol, rtol);
    snprintf(what, sizeof what, "%s backward_data", r->name);
    cmp(what, hdx, cdx, xn, atol, rtol);
    snprintf(what, sizeof what, "%s backward_filter", r->name);
    cmp(what, hdw, cdw, wn, atol * red, rtol);
    /* FP64 sums of the same dt values on both: equal up to the final rounding */
    snprintf(what, sizeof what, "%s dbias", r->name);
    cmp(what, hdb, cdb, (size_t)d.c_out, 1e-6, 1e-6);

    /* A smaller batch in the workspace sized for the full one. */
    if (d.n > 1) {
        amp_conv2d_desc s = d;
        s.n = d.n - 1;
        size_t syn = yn / d.n * s.n;
        rows_ok(AMP_CONV(rows_dev, conv2d_forward, gy, gx, gw, gb, &s, gws, gws_b), rows_dev,
           "conv2d_forward (smaller batch)");
        float *hs = rows_from_dev(gy, syn * 4);
        snprintf(what, sizeof what, "%s forward, batch %d in batch %d's workspace", r->name,
                 s.n, d.n);
        cmp(what, hs, cy, syn, atol, rtol);
        free(hs);
    }

    /* Deterministic algorithms: the same backward twice, bit for bit. */
    rows_dev->deterministic = 1;
    size_t dws_b;
    rows_ok(AMP_CONV(rows_dev, conv2d_workspace, &d, &dws_b), rows_dev,
            "conv2d_workspace (deterministic)");
    void *dws = rows_dev->ops->alloc(rows_dev, dws_b);
    float *runs[2][2];
    for (int k = 0; k < 2; k++) {
        rows_ok(AMP_CONV(rows_dev, conv2d_backward_filter, gdw, gdb, gx, gg, &d, dws, dws_b),
                rows_dev, "conv2d_backward_filter (deterministic)");
        rows_ok(AMP_CONV(rows_dev, conv2d_backward_data, gdx, gg, gw, &d, dws, dws_b), rows_dev,
           "conv2d_backward_data (deterministic)");
        runs[k][0] = rows_from_dev(gdw, wn * 4);
        runs[k][1] = rows_from_dev(gdx, xn * 4);
    }
    EXPECT(memcmp(runs[0][0], runs[1][0], wn * 4) == 0 &&
               memcmp(runs[0][1], runs[1][1], xn * 4) == 0,
           "%s: deterministic backward differs between two runs", r->name);
    snprintf(what, sizeof what, "%s deterministic backward_filter", r->name);
    cmp(what, runs[0][0], cdw, wn, atol * red, rtol);
    rows_dev->deterministic = 0;
    for (int k = 0; k < 2; k++) free(runs[k][0]), free(runs[k][1]);
    rows_release(dws);

    /* A workspace smaller than asked is refused, not overrun. */
    if (gws_b > 0)
        EXPECT(AMP_CONV(rows_dev, conv2d_forward, gy, gx, gw, gb, &d, gws, gws_b - 1) != 0,
               "%s: a workspace one byte short was accepted", r->name);

    void *gbufs[] = {gx, gw, gg, gb, gws, gy, gdx, gdw, gdb};
    for (size_t i = 0; i < sizeof gbufs / sizeof gbufs[0]; i++) rows_release(gbufs[i]);
    free(xf), free(wf), free(bf), free(gf), free(x), free(w), free(g), free(cws);
    free(cy), free(cdx), free(cdw), free(cdb), free(hy), free(hdx), free(hdw), free(hdb);
}

/* ---- max pooling -------------------------------------------------------------- */

static void test_pool(const amp_gpu_row *r) {
    const int *v = r->shape;
    amp_pool2d_desc d = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]};
    int p = amp_pool2d_out_h(&d), q = amp_pool2d_out_w(&d);
    size_t xn = (size_t)d.n * d.c * d.h * d.w, yn = (size_t)d.n * d.c * p * q;
    float *x = rows_randn(xn, 1.0f), *g = rows_randn(yn, 1.0f);
    for (size_t i = 0; i < xn; i += 7) x[i] = x[i > 0 ? i - 1 : 0]; /* ties */
    float *cy = rows_alloc(yn * 4), *cdx = rows_alloc(xn * 4);
    uint16_t *cidx = rows_alloc(yn * 2);
    rows_ok(AMP_CONV(rows_cpu, max_pool2d_forward, cy, cidx, x, &d), rows_cpu,
            "max_pool2d_forward");
    rows_ok(AMP_CONV(rows_cpu, max_pool2d_backward, cdx, g, cidx, &d), rows_cpu,
            "max_pool2d_backward");
    float *gx = rows_to_dev(x, xn * 4), *gg = rows_to_dev(g, yn * 4);
    float *gy = rows_nan_dev(yn * 4), *gdx = rows_nan_dev(xn * 4);
    uint16_t *gidx = rows_nan_dev(yn * 2);
    rows_ok(AMP_CONV(rows_dev, max_pool2d_forward, gy, gidx, gx, &d), rows_dev,
            "max_pool2d_forward");
    rows_ok(AMP_CONV(rows_dev, max_pool2d_backward, gdx, gg, gidx, &d), rows_dev,
            "max_pool2d_backward");
    float *hy = rows_from_dev(gy, yn * 4), *hdx = rows_from_dev(gdx, xn * 4);
    uint16_t *hidx = rows_from_dev(gidx, yn * 2);
    /* the same function per element, sums in the same order: exact */
    EXPECT(memcmp(hy, cy, yn * 4) == 0 && memcmp(hidx, cidx, yn * 2) == 0,
           "%s forward: values or indices differ", r->name);
    EXPECT(memcmp(hdx, cdx, xn * 4) == 0, "%s backward differs", r->name);
    printf("ok  %-52s n=%-7zu exact\n", r->name, xn);
    void *gbufs[] = {gx, gg, gy, gdx, gidx};
    for (size_t i = 0; i < 5; i++) rows_release(gbufs[i]);
    free(x), free(g), free(cy), free(cdx), free(cidx), free(hy), free(hdx), free(hidx);
}

/* ---- batch norm ------------------------------------------------------------------ */

/* A one-rank amp_allsum (the sum over one rank is the value itself): the
 * sync path's kernels (totals, the apply and dx from them, dgamma/dbeta
 * from this rank's sums) must give what the unsynced op gives. Counts its
 * calls: forward sums twice, backward once. */
static int bn_sync_calls;
static int bn_one_rank_sum(void *ctx, double *v, size_t n) {
    (void)ctx, (void)v, (void)n;
    bn_sync_calls++;
    return 0;
}

static void test_bn(const amp_gpu_row *r) {
    int n = r->shape[0], c = r->shape[1], hw = r->shape[2], training = r->shape[3];
    /* shape[4]: the GPU side through the sync path (the CPU reference without) */
    amp_allsum one_rank = {bn_one_rank_sum, NULL};
    const amp_allsum *sync = r->shape[4] ? &one_rank : NULL;
    bn_sync_calls = 0;
    size_t xn = (size_t)n * c * hw, cb = (size_t)c * 4;
    float *x = rows_randn(xn, 2.0f), *g = rows_randn(xn, 1.0f),
          *gamma = rows_randn((size_t)c, 1.0f);
    float *beta = rows_randn((size_t)c, 1.0f), *rm = rows_randn((size_t)c, 0.5f),
          *rv = rows_alloc(cb);
    for (int i = 0; i < c; i++) rv[i] = 0.5f + (float)i / (float)c;
    float *crm = rows_alloc(cb), *crv = rows_alloc(cb), *csm = rows_alloc(cb),
          *csi = rows_alloc(cb);
    float *cy = rows_alloc(xn * 4), *cdx = rows_alloc(xn * 4), *cdg = rows_alloc(cb),
          *cdb = rows_alloc(cb);
    memcpy(crm, rm, cb), memcpy(crv, rv, cb);
    rows_ok(AMP_CONV(rows_cpu, batch_norm_forward,
                &(amp_batch_norm_fwd){cy, csm, csi, crm, crv, x, gamma, beta, n, c, hw, training,
                                      0.1f, 1e-5f, NULL, NULL, AMP_DTYPE_F32}),
       rows_cpu, "batch_norm_forward");
    rows_ok(AMP_CONV(rows_cpu, batch_norm_backward,
                &(amp_batch_norm_bwd){cdx, cdg, cdb, g, x, gamma, csm, csi, n, c, hw, training, NULL, NULL, AMP_DTYPE_F32}),
       rows_cpu, "batch_norm_backward");
    float *gx = rows_to_dev(x, xn * 4), *gg = rows_to_dev(g, xn * 4),
          *ggam = rows_to_dev(gamma, cb);
    float *gbet = rows_to_dev(beta, cb), *grm = rows_to_dev(rm, cb), *grv = rows_to_dev(rv, cb);
    float *gsm = rows_nan_dev(cb), *gsi = rows_nan_dev(cb), *gy = rows_nan_dev(xn * 4);
    float *gdx = rows_nan_dev(xn * 4), *gdg = rows_nan_dev(cb), *gdb = rows_nan_dev(cb);
    rows_ok(AMP_CONV(rows_dev, batch_norm_forward,
                &(amp_batch_norm_fwd){gy, gsm, gsi, grm, grv, gx, ggam, gbet, n, c, hw, training,
                                      0.1f, 1e-5f, sync, NULL, AMP_DTYPE_F32}),
       rows_dev, "batch_norm_forward");
    rows_ok(AMP_CONV(rows_dev, batch_norm_backward,
                &(amp_batch_norm_bwd){gdx, gdg, gdb, gg, gx, ggam, gsm, gsi, n, c, hw, training, sync, NULL, AMP_DTYPE_F32}),
       rows_dev, "batch_norm_backward");
    if (sync) EXPECT(bn_sync_calls == 3, "batch_norm sync: the hook ran %d times, not 3", bn_sync_calls);
    const char *mode = training ? "train" : "eval";
    char what[128];
    /* FP64 channel sums in a different order, then the same FP32 math: a few
     * FP32 ulps at most */
    struct {
        const char *name;
        float *dev, *ref;
        size_t n;
    } t[] = {{"y", gy, cy, xn},           {"save_mean", gsm, csm, (size_t)c},
             {"save_invstd", gsi, csi, (size_t)c}, {"running_mean", grm, crm, (size_t)c},
             {"running_var", grv, crv, (size_t)c}, {"dx", gdx, cdx, xn},
             {"dgamma", gdg, cdg, (size_t)c},      {"dbeta", gdb, cdb, (size_t)c}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        float *h = rows_from_dev(t[i].dev, t[i].n * 4);
        snprintf(what, sizeof what, "batch_norm %s [%d,%d,%d] %s", mode, n, c, hw, t[i].name);
        cmp(what, h, t[i].ref, t[i].n, r->tol.atol, r->tol.rtol);
        free(h);
        rows_release(t[i].dev);
    }
    rows_release(gx), rows_release(gg), rows_release(ggam);
    rows_release(gbet);
    free(x), free(g), free(gamma), free(beta), free(rm), free(rv), free(crm), free(crv);
    free(csm), free(csi), free(cy), free(cdx), free(cdg), free(cdb);
}

/* conv2d tolerances. FP32: both accumulate in FP32 in different orders
 * (cuDNN with FMA math, no TF32), and cuDNN's heuristics may pick a Winograd
 * or FFT algorithm, whose transforms add error of order 1e-5 of the output's
 * scale; outputs are O(1) here (weights ~ 1/sqrt(fan-in)). 16-bit: both
 * round the FP32 result to dt, so an order difference can move a value by
 * one unit in dt's last place (2^-10 / 2^-7 relative), and near zero by the
 * atol. backward_filter gets atol * sqrt(n*p*q) (its sums), dbias 1e-6. */
#define CONV_TOL(dt)                                                                    \
    ((rows_tol){ROWS_FINITE, dt == AMP_DTYPE_F32 ? 5e-4 : dt == AMP_DTYPE_F16 ? 2e-3 : 1.6e-2, \
                dt == AMP_DTYPE_F32 ? 1e-4 : dt == AMP_DTYPE_F16 ? 1.0 / 1024 : 1.0 / 128})
#define CONV(T, name, ...) {"conv2d " name, test_conv, {__VA_ARGS__}, .dt = T, .tol = CONV_TOL(T)}
/* n, c_in, h, w, c_out, kh, kw, stride_h, stride_w, pad_h, pad_w */
#define CONVS(T, dt_name)                                                           \
    CONV(T, "s2p1 3x3 c3->5 " dt_name, 2, 3, 9, 7, 5, 3, 3, 2, 2, 1, 1),            \
    CONV(T, "s(2,1)p(0,2) 2x3 c10->6 " dt_name, 3, 10, 8, 11, 6, 2, 3, 2, 1, 0, 2), \
    CONV(T, "p1 3x3 c1->32 28x28 " dt_name, 16, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1),   \
    CONV(T, "p1 3x3 c32->64 14x14 " dt_name, 16, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1)
/* batch norm: FP64 channel sums in a different order, then the same FP32
 * math: a few FP32 ulps at most */
#define BN_TOL ((rows_tol){ROWS_FINITE, 1e-6, 1e-6})

static const amp_gpu_row rows[] = {
    CONVS(AMP_DTYPE_F32, "f32"),
    CONVS(AMP_DTYPE_F16, "f16"),
    CONVS(AMP_DTYPE_BF16, "bf16"),
    /* n, c, h, w, kh, kw, stride_h, stride_w, pad_h, pad_w; the same
     * function per element, sums in the same order: exact, indices too */
    {"max_pool2d 3x3 s2 p1", test_pool, {2, 3, 9, 7, 3, 3, 2, 2, 1, 1}, .tol = ROWS_EXACT},
    {"max_pool2d 2x2 s2 28x28", test_pool, {16, 32, 28, 28, 2, 2, 2, 2, 0, 0}, .tol = ROWS_EXACT},
    /* n, c, h*w, training */
    {"batch_norm [3,5,35] training", test_bn, {3, 5, 35, 1}, .tol = BN_TOL},
    {"batch_norm [3,5,35] evaluation", test_bn, {3, 5, 35, 0}, .tol = BN_TOL},
    {"batch_norm [64,32,196] training", test_bn, {64, 32, 196, 1}, .tol = BN_TOL},
    {"batch_norm [3,5,35] training sync", test_bn, {3, 5, 35, 1, 1}, .tol = BN_TOL},
    {"batch_norm [64,32,196] training sync", test_bn, {64, 32, 196, 1, 1}, .tol = BN_TOL},
};

int main(int argc, char **argv) {
    return amp_gpu_rows_main("test_gpu_cnn", argc, argv, rows, sizeof rows / sizeof rows[0], 2024);
}
