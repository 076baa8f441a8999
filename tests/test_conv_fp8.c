/* The Conv2d under scaled operands, on the CNN `conv(4,3,pad=1)
 * conv(3,3,stride=2) fc` (every dtype FP32, so the only roundings are the
 * FP8 ones; the fc stays FP32): one forward + backward against a scalar
 * reference written here: an im2col of its own, each GEMM operand
 * quantize-dequantized with kernels/fp8.h and mx.h's element functions,
 * double-precision GEMMs. Checked: the loss, dW and db of both convs
 * (conv1's dY is conv2's dX, so dX is checked through them) within FP32
 * rounding, the working copies' codes (and MX32 scales) bit for bit, every
 * slot's counts exactly (and the per-tensor amax). Also: a scaled operand
 * on a layer that quantizes nothing (bn1) is refused at model creation.
 *
 *   (no argument)   per tensor: E4M3 input and weight, E5M2 dY, delayed
 *                   scales set by hand; conv2's weight current-scaled
 *   --mx            MX32 (hybrid) on every role: blocks along K for the
 *                   forward, along N*P for dW, along c_out for dX
 *   --break         per tensor, the reference swaps conv1's input and
 *                   weight scales: must fail
 *   --mx-break      MX32, the reference blocks dW's operands along the
 *                   wrong dimension: must fail */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "fp8_reference.h"
#include "layers/kit_state.h"
#include "model.h"
#include "session_helpers.h"

enum { N = 3, C0 = 5, H = 7, W = 6, CLS = 5 };
enum { C1 = 4, K1 = C0 * 9, P1 = H * W };      /* conv1: 3x3, pad 1 */
enum { C2 = 3, H2 = 3, W2 = 2, K2 = C1 * 9, P2 = H2 * W2 }; /* conv2: 3x3, stride 2 */
enum { F = C2 * P2 };

static const uint32_t FMT[AMP_ROLE_COUNT] = {AMP_FORMAT_F8_E4M3, AMP_FORMAT_F8_E4M3,
                                              AMP_FORMAT_F8_E5M2};
/* per tensor: the hand-set delayed scales (0: current) */
static const float SCALE[2][AMP_ROLE_COUNT] = {{32.0f, 2048.0f, 8192.0f}, {64.0f, 0.0f, 16384.0f}};

/* y = deq(quant(x)) of x [rows, cols]: per tensor with scale s (mx 0), or
 * MX32 in blocks along each row / down each column (along_cols); codes
 * (and scales, MX32) in the backend's layout when not NULL. */
static void ref_q(float *y, const float *x, int rows, int cols, int mx, int along_cols, float s,
                  uint32_t format, ref_stats *st, uint8_t *codes, uint8_t *scales) {
    if (mx) {
        mx_ref(y, x, rows, cols, along_cols, format, st, codes, scales);
        return;
    }
    for (int i = 0; i < rows * cols; i++) y[i] = qdq(x[i], s, format, st, codes ? codes + i : NULL);
}

/* For each entry of the column matrix [c*9, n*p*q] of x [n, c, h, w] (a
 * 3x3 kernel, images side by side): the index into x it reads, -1 in the
 * padding. */
static int *col_index(int n, int c, int h, int w, int stride, int pad, int p, int q) {
    int cols = n * p * q, *ix = malloc(sizeof(int) * (size_t)c * 9 * cols);
    for (int ci = 0; ci < c; ci++)
        for (int k = 0; k < 9; k++)
            for (int i = 0; i < n; i++)
                for (int oy = 0; oy < p; oy++)
                    for (int ox = 0; ox < q; ox++) {
                        int iy = oy * stride - pad + k / 3, xx = ox * stride - pad + k % 3;
                        ix[(ci * 9 + k) * cols + (i * p + oy) * q + ox] =
                            iy < 0 || iy >= h || xx < 0 || xx >= w ? -1
                                                                   : ((i * c + ci) * h + iy) * w + xx;
                    }
    return ix;
}

/* col = im2col(x), len entries of the index table ix */
static void im2col(float *col, const float *x, const int *ix, int len) {
    for (int j = 0; j < len; j++) col[j] = ix[j] < 0 ? 0.0f : x[ix[j]];
}

/* dx [xn] = col2im(dcol): each entry added where it was read (double sums) */
static void col2im(float *dx, int xn, const float *dcol, const int *ix, int len) {
    double *acc = calloc((size_t)xn, sizeof *acc);
    for (int j = 0; j < len; j++)
        if (ix[j] >= 0) acc[ix[j]] += dcol[j];
    for (int i = 0; i < xn; i++) dx[i] = (float)acc[i];
    free(acc);
}

/* NCHW [n, c, P] -> [c, n*P] and back */
static void to_cfirst(float *dst, const float *src, int n, int c, int P) {
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++)
            for (int j = 0; j < P; j++) dst[ch * n * P + i * P + j] = src[(i * c + ch) * P + j];
}
static void from_cfirst(float *dst, const float *src, int n, int c, int P) {
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++)
            for (int j = 0; j < P; j++) dst[(i * c + ch) * P + j] = src[ch * n * P + i * P + j];
}

/* one conv layer of the reference: the operands as the kit quantizes them */
typedef struct ref_conv {
    const float *w, *b;     /* master [c_out, K], bias [c_out] */
    float s[AMP_ROLE_COUNT]; /* per tensor: the scales */
    int c_out, K, NP;
    float *col, *wq;        /* forward: quantized col [K, NP], W [c_out, K] */
} ref_conv;

/* y [N, c_out, P] = conv(x) + b from the quantized col and W. */
static void ref_forward(ref_conv *r, float *y, const float *col, int mx, ref_stats *st_in,
                        int P) {
    r->col = malloc(sizeof(float) * (size_t)r->K * r->NP);
    ref_q(r->col, col, r->K, r->NP, mx, 1, r->s[0], FMT[0], st_in, NULL, NULL);
    float *yt = malloc(sizeof(float) * (size_t)r->c_out * r->NP);
    gemm(yt, NULL, r->wq, r->K, 1, r->col, r->NP, 1, r->c_out, r->NP, r->K);
    for (int c = 0; c < r->c_out; c++)
        for (int j = 0; j < r->NP; j++) yt[c * r->NP + j] += r->b[c];
    from_cfirst(y, yt, r->NP / P, r->c_out, P);
    free(yt);
}

/* dW, db and dcol (when not NULL) from dy [N, c_out, P]; col: the input's
 * column matrix again (unquantized). mb: each db's sum of |dy|, the scale of
 * its rounding (dy's values cancel in db, and the backend's dy comes from
 * GEMMs that sum in their library's order). */
static void ref_backward(ref_conv *r, float *gw, double *mw, float *gb, double *mb, float *dcol,
                         const float *dy, const float *col, int mx, int break_blocks,
                         ref_stats *st_dy, int P) {
    size_t cn = (size_t)r->c_out * r->NP, kn = (size_t)r->K * r->NP;
    float *dyt = malloc(sizeof(float) * cn), *dyq = malloc(sizeof(float) * cn);
    float *xq = malloc(sizeof(float) * kn);
    to_cfirst(dyt, dy, r->NP / P, r->c_out, P);
    ref_q(dyq, dyt, r->c_out, r->NP, mx, 0, r->s[2], FMT[2], st_dy, NULL, NULL);
    ref_q(xq, col, r->K, r->NP, mx, break_blocks, r->s[0], FMT[0], NULL, NULL, NULL);
    gemm(gw, mw, dyq, r->NP, 1, xq, 1, r->NP, r->c_out, r->K, r->NP);
    for (int c = 0; c < r->c_out; c++) {
        double s = 0.0, g = 0.0;
        for (int j = 0; j < r->NP; j++) s += dyt[c * r->NP + j], g += fabs(dyt[c * r->NP + j]);
        gb[c] = (float)s;
        mb[c] = g;
    }
    if (dcol) {
        float *wc = malloc(sizeof(float) * (size_t)r->c_out * r->K);
        if (mx) ref_q(dyq, dyt, r->c_out, r->NP, 1, 1, 0.0f, FMT[2], NULL, NULL, NULL);
        ref_q(wc, r->w, r->c_out, r->K, mx, 1, r->s[1], FMT[1], NULL, NULL, NULL);
        gemm(dcol, NULL, wc, 1, r->K, dyq, r->NP, 1, r->K, r->NP, r->c_out);
        free(wc);
    }
    free(dyt), free(dyq), free(xq);
}

/* A scaled operand on a layer whose object quantizes nothing (here a
 * batch norm; the host refuses such a policy earlier) is refused when the
 * model is created: it would be a slot nothing updates. */
static void unclaimed_refused(amp_backend *be) {
    char err[1024];
    amp_config *cfg = make_config((const char *const[]){"model.layers=conv(4,3) bn fc", NULL});
    amp_model_input in = {N, C0 * H * W, C0, H, W, CLS, 1, 0};
    const amp_model_ops *ops = amp_model_find("cnn");
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    if (!ops || ops->describe(&desc, cfg, &in, err, sizeof err) != 0) {
        fprintf(stderr, "test_conv_fp8: cnn: %s\n", err);
        exit(1);
    }
    amp_layer_precision prec[8];
    memset(prec, 0, sizeof prec);
    for (int l = 0; l < desc.nlayers; l++) {
        prec[l].struct_size = sizeof prec[l];
        for (int c = 0; c < AMP_OP_COUNT; c++) prec[l].compute[c] = AMP_DTYPE_F32;
        prec[l].activation = prec[l].param = AMP_DTYPE_F32;
        if (strcmp(desc.layers[l].name, "bn1") == 0)
            prec[l].operand[AMP_ROLE_WEIGHT] =
                (amp_operand_format){AMP_FORMAT_F8_E4M3, AMP_SCALING_CURRENT, 0, 0};
    }
    amp_model *m = NULL;
    int rc = amp_model_create(&m, ops, be, &desc, prec, &in, 0, cfg, err, sizeof err);
    EXPECT(rc != 0 && strstr(err, "layer 'bn1' has a scaled weight operand, but none of its GEMMs"),
           "a scaled operand on bn1: create gave %d, '%s'", rc, rc ? err : "");
    if (rc == 0) amp_model_free(m);
    amp_config_free(cfg);
}

int main(int argc, char **argv) {
    const char *arg = argc > 1 ? argv[1] : "";
    int mx = strncmp(arg, "--mx", 4) == 0;
    int broken = strcmp(arg, "--break") == 0 || strcmp(arg, "--mx-break") == 0;
    char err[1024];
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "test_conv_fp8: %s\n", err);
        return 1;
    }
    unclaimed_refused(be);
    amp_config *cfg = make_config(
        (const char *const[]){"model.layers=conv(4,3,pad=1) conv(3,3,stride=2) fc", NULL});
    amp_model_input in = {N, C0 * H * W, C0, H, W, CLS, 1, 0};
    const amp_model_ops *ops = amp_model_find("cnn");
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    if (!ops || ops->describe(&desc, cfg, &in, err, sizeof err) != 0) {
        fprintf(stderr, "test_conv_fp8: cnn: %s\n", err);
        return 1;
    }
    amp_layer_precision prec[8];
    memset(prec, 0, sizeof prec);
    int conv[2] = {-1, -1};
    for (int l = 0; l < desc.nlayers; l++) {
        prec[l].struct_size = sizeof prec[l];
        for (int c = 0; c < AMP_OP_COUNT; c++) prec[l].compute[c] = AMP_DTYPE_F32;
        prec[l].activation = prec[l].param = AMP_DTYPE_F32;
        int which = strcmp(desc.layers[l].name, "conv1") == 0   ? 0
                    : strcmp(desc.layers[l].name, "conv2") == 0 ? 1
                                                                : -1;
        if (which < 0) continue;
        conv[which] = l;
        for (int r = 0; r < AMP_ROLE_COUNT; r++) {
            int current = !mx && SCALE[which][r] == 0.0f;
            amp_scaling sc = mx ? AMP_SCALING_MX32 : current ? AMP_SCALING_CURRENT : AMP_SCALING_DELAYED;
            prec[l].operand[r] = (amp_operand_format){FMT[r], sc, sc == AMP_SCALING_DELAYED ? 4u : 0u, 0};
        }
    }
    EXPECT(conv[0] >= 0 && conv[1] >= 0, "the CNN has no conv1/conv2");
    amp_model *m = NULL;
    if (amp_model_create(&m, ops, be, &desc, prec, &in, 0, cfg, err, sizeof err) != 0 ||
        m->ops->init_params(m, 7) != 0) {
        fprintf(stderr, "test_conv_fp8: %s\n", err);
        return 1;
    }
    EXPECT(m->scaled->nslots == 6, "%d slots, expected 6 (the two convs)", m->scaled->nslots);
    if (!mx)
        for (int l = 0; l < 2; l++)
            for (int r = 0; r < AMP_ROLE_COUNT; r++)
                if (SCALE[l][r] > 0.0f) amp_scaled_find(m->scaled, conv[l], r)->scale = SCALE[l][r];

    /* a batch with values that saturate (|x| * 32 > 448), tiny ones that
     * flush, and an all-zero channel (image 1, channel 2) */
    static float x[N * C0 * H * W];
    int32_t y[N] = {3, 0, 4};
    for (int i = 0; i < N * C0 * H * W; i++) {
        x[i] = (float)sin(0.41 * i * i + 0.2) * 20.0f;
        if (i % 13 == 0) x[i] *= mx ? 1e-9f : 1e-6f;
        if (i / (H * W) == 1 * C0 + 2) x[i] = 0.0f;
    }
    memcpy(m->x, x, sizeof x);
    memcpy(m->y, y, sizeof y);
    int tw[3], tb[3];
    const char *names[3] = {"conv1", "conv2", "fc1"};
    for (int l = 0; l < 3; l++) {
        char name[64];
        snprintf(name, sizeof name, "%s.weight", names[l]);
        tw[l] = amp_model_desc_find(&m->desc, name);
        snprintf(name, sizeof name, "%s.bias", names[l]);
        tb[l] = amp_model_desc_find(&m->desc, name);
        EXPECT(tw[l] >= 0 && tb[l] >= 0, "no tensors for %s", names[l]);
    }
    static float w1[C1 * K1], b1[C1], w2[C2 * K2], b2[C2], wf[CLS * F], bf[CLS];
    memcpy(w1, m->master + m->desc.params[tw[0]].offset, sizeof w1);
    memcpy(b1, m->master + m->desc.params[tb[0]].offset, sizeof b1);
    memcpy(w2, m->master + m->desc.params[tw[1]].offset, sizeof w2);
    memcpy(b2, m->master + m->desc.params[tb[1]].offset, sizeof b2);
    memcpy(wf, m->master + m->desc.params[tw[2]].offset, sizeof wf);
    memcpy(bf, m->master + m->desc.params[tb[2]].offset, sizeof bf);

    amp_forward_args fa = {N, 1, 1.0f / N};
    amp_backward_args ba = {N, 0};
    if (be->ops->zero(be, m->stats, amp_model_stats_bytes(m->desc.nlayers)) ||
        m->ops->cast_weights(m) || m->ops->forward(m, &fa) || m->ops->backward(m, &ba) ||
        amp_model_scaled_collect(m)) {
        fprintf(stderr, "test_conv_fp8: %s\n", be->err);
        return 1;
    }

    /* ---- the reference ---- */
    ref_stats st[2][AMP_ROLE_COUNT];
    memset(st, 0, sizeof st);
    ref_conv r1 = {w1, b1, {SCALE[0][0], SCALE[0][1], SCALE[0][2]}, C1, K1, N * P1, NULL, NULL};
    ref_conv r2 = {w2, b2, {SCALE[1][0], SCALE[1][1], SCALE[1][2]}, C2, K2, N * P2, NULL, NULL};
    if (!mx) { /* conv2's weight: current scaling from the master's amax */
        float a = 0.0f;
        for (int i = 0; i < C2 * K2; i++) a = fmaxf(a, fabsf(w2[i]));
        r2.s[1] = (float)(448.0 / (double)a);
    }
    if (broken && !mx) {
        float t = r1.s[0];
        r1.s[0] = r1.s[1];
        r1.s[1] = t;
    }
    enum { NB1 = (K1 + 31) / 32, NB2 = (K2 + 31) / 32 };
    static uint8_t c1[C1 * K1 + C1 * NB1], c2[C2 * K2 + C2 * NB2];
    static float wq1[C1 * K1], wq2[C2 * K2];
    ref_q(wq1, w1, C1, K1, mx, 0, r1.s[1], FMT[1], &st[0][1], c1, mx ? c1 + C1 * K1 : NULL);
    ref_q(wq2, w2, C2, K2, mx, 0, r2.s[1], FMT[1], &st[1][1], c2, mx ? c2 + C2 * K2 : NULL);
    r1.wq = wq1, r2.wq = wq2;
    static float col1[K1 * N * P1], y1[N * C1 * P1], col2[K2 * N * P2], y2[N * F];
    int *ix1 = col_index(N, C0, H, W, 1, 1, H, W), *ix2 = col_index(N, C1, H, W, 2, 0, H2, W2);
    im2col(col1, x, ix1, K1 * N * P1);
    ref_forward(&r1, y1, col1, mx, &st[0][0], P1);
    im2col(col2, y1, ix2, K2 * N * P2);
    ref_forward(&r2, y2, col2, mx, &st[1][0], P2);
    /* fc (FP32, unscaled) and the loss */
    float z[N * CLS], dz[N * CLS];
    gemm(z, NULL, y2, F, 1, wf, 1, F, N, CLS, F);
    double loss = 0.0;
    for (int r = 0; r < N; r++) {
        float *zr = z + r * CLS;
        double mxv = -INFINITY, sum = 0.0;
        for (int j = 0; j < CLS; j++) zr[j] += bf[j], mxv = fmax(mxv, zr[j]);
        for (int j = 0; j < CLS; j++) sum += exp(zr[j] - mxv);
        loss += log(sum) + mxv - zr[y[r]];
        for (int j = 0; j < CLS; j++)
            dz[r * CLS + j] = (float)((exp(zr[j] - mxv) / sum - (j == y[r])) / N);
    }
    static float dy2[N * F], gw2[C2 * K2], gb2[C2], dcol2[K2 * N * P2], dy1[N * C1 * P1];
    static float gw1[C1 * K1], gb1[C1];
    static double mw1[C1 * K1], mw2[C2 * K2], mb1[C1], mb2[C2];
    gemm(dy2, NULL, dz, CLS, 1, wf, F, 1, N, F, CLS);
    ref_backward(&r2, gw2, mw2, gb2, mb2, dcol2, dy2, col2, mx, mx && broken, &st[1][2], P2);
    col2im(dy1, N * C1 * P1, dcol2, ix2, K2 * N * P2);
    free(ix1), free(ix2);
    ref_backward(&r1, gw1, mw1, gb1, mb1, NULL, dy1, col1, mx, mx && broken, &st[0][2], P1);

    /* ---- compare ---- */
    double got_loss = m->stats->loss_sum / N;
    EXPECT(fabs(got_loss - loss / N) <= 1e-5 * fabs(loss / N), "loss %.9g, reference %.9g",
           got_loss, loss / N);
    check_array("conv2 dW", m->grads + m->desc.params[tw[1]].offset, gw2, mw2, C2 * K2);
    check_array("conv2 db", m->grads + m->desc.params[tb[1]].offset, gb2, mb2, C2);
    check_array("conv1 dW", m->grads + m->desc.params[tw[0]].offset, gw1, mw1, C1 * K1);
    check_array("conv1 db", m->grads + m->desc.params[tb[0]].offset, gb1, mb1, C1);
    const amp_kit_copy *k1 = &m->kit->copy[tw[0]], *k2 = &m->kit->copy[tw[1]];
    size_t n1 = mx ? sizeof c1 : C1 * K1, n2 = mx ? sizeof c2 : C2 * K2;
    EXPECT(k1->fp8_slot >= 0 && memcmp(k1->ptr, c1, n1) == 0,
           "conv1's working copy: not the reference's codes");
    EXPECT(k2->fp8_slot >= 0 && memcmp(k2->ptr, c2, n2) == 0 && (mx || k2->fp8_scale == r2.s[1]),
           "conv2's working copy: not the reference's codes (scale %.9g, reference %.9g)",
           k2->fp8_scale, r2.s[1]);
    static const char *role[AMP_ROLE_COUNT] = {"input", "weight", "grad_output"};
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < AMP_ROLE_COUNT; r++) {
            /* exactly where the operand is known exactly here (the batch, the
             * masters); else the amax within FP32 rounding, and the counts
             * within 2: a value that cancels to about 0 in a GEMM or col2im
             * is 0 in FP32 (not flushed) and 1e-12 in double (flushed) */
            int exact = r == AMP_ROLE_WEIGHT || (l == 0 && r == AMP_ROLE_INPUT);
            char what[64];
            snprintf(what, sizeof what, "conv%d %s", l + 1, role[r]);
            check_stats(what, &amp_scaled_find(m->scaled, conv[l], r)->step, &st[l][r], exact || mx,
                        exact ? 0 : 2);
        }
    if (!amp_test_failures)
        printf("ok  conv %s: loss %.7g, conv1 input sat %llu flush %llu, conv1 weight sat %llu, "
               "conv2 grad sat %llu flush %llu\n",
               mx ? "mxfp8" : "fp8", got_loss, st[0][0].sat, st[0][0].flush, st[0][1].sat,
               st[1][2].sat, st[1][2].flush);
    free(r1.col), free(r2.col);
    amp_model_free(m);
    amp_config_free(cfg);
    be->ops->destroy(be);
    return amp_test_failures ? 1 : 0;
}
