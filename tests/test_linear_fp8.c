/* The Linear under per-tensor scaled FP8 operands (FP8_SPEC's "math of a
 * Linear"), on the MLP (fc1 -> fc2, no activation, every dtype FP32 so the
 * only roundings are the FP8 ones): one forward + backward against a scalar
 * reference written here from the spec with kernels/fp8.h's element
 * functions and naive GEMMs. Checked: the loss, dW and db of both layers
 * (fc1's dY is fc2's dX, so dX is checked through them) within FP32
 * rounding, the working copies' codes bit for bit, every slot's stats
 * exactly. fc1: delayed scales, E4M3/E4M3/E5M2; fc2: hand-set delayed X and
 * dY, current-scaled W (its scale from the master's amax).
 * `test_linear_fp8 --break-role` swaps fc1's X and W scales in the
 * reference only, so the run must fail (shows the test can); `--mx` runs
 * the MX32 case (mx_main), `--mx-break` its broken reference.
 * `--fp8-gemm` gives the CPU backend a fused fp8_gemm (the composition a
 * device backend falls back to: dequantize both operands, FP32 gemm_ex),
 * so the forwards take the Linear's FP8-GEMM path (codes, scales, stats as
 * a GPU's cuBLASLt call gets them) against the same reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "backend/kernels/mx.h"
#include "layers/kit_state.h"
#include "model.h"
#include "session_helpers.h"

enum { ROWS = 7, FEAT = 40, HID = 9, CLS = 5 };

static const float SCALE[2][AMP_ROLE_COUNT] = {{64.0f, 4096.0f, 16.0f}, {32.0f, 0.0f, 2048.0f}};
static const uint32_t FMT[AMP_ROLE_COUNT] = {AMP_FORMAT_F8_E4M3, AMP_FORMAT_F8_E4M3,
                                              AMP_FORMAT_F8_E5M2};

typedef struct ref_stats {
    float amax;
    unsigned long long sat, flush, nan;
} ref_stats;

/* q = quant(v, s), stats added; returns deq(q, s). */
static float qdq(float v, float s, uint32_t format, ref_stats *st, uint8_t *code) {
    int fmt = amp_format_fp8(format);
    unsigned fl = 0;
    uint8_t q = amp_fp8_quantize_element(v, s, fmt, &fl);
    if (st) {
        if (!isnan(v) && fabsf(v) > st->amax) st->amax = fabsf(v);
        st->sat += (fl & AMP_F8_SATURATED) != 0;
        st->flush += (fl & AMP_F8_FLUSHED) != 0;
        st->nan += (fl & AMP_F8_NAN) != 0;
    }
    if (code) *code = q;
    return amp_fp8_to_float(q, fmt) * amp_fp8_inv_scale(s);
}

/* MX32 of x [rows, cols] in blocks of 32 along each row (along_cols 0) or
 * down each column, written plainly: y = decoded values, codes/scales (may
 * be NULL) in the backend's layout, counts into st (may be NULL). */
static void mx_ref(float *y, const float *x, int rows, int cols, int along_cols, uint32_t format,
                   ref_stats *st, uint8_t *codes, uint8_t *scales) {
    int fmt = amp_format_fp8(format);
    int lines = along_cols ? cols : rows, len = along_cols ? rows : cols;
    int nb = (len + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK;
    for (int l = 0; l < lines; l++)
        for (int b = 0; b < nb; b++) {
            int n = len - b * AMP_MX_BLOCK < AMP_MX_BLOCK ? len - b * AMP_MX_BLOCK : AMP_MX_BLOCK;
            float v[AMP_MX_BLOCK];
            int idx[AMP_MX_BLOCK];
            for (int i = 0; i < n; i++) {
                int e = b * AMP_MX_BLOCK + i;
                idx[i] = along_cols ? e * cols + l : l * cols + e;
                v[i] = x[idx[i]];
            }
            uint8_t q[AMP_MX_BLOCK], sc;
            amp_mx_quantize_block(q, &sc, v, n, fmt);
            if (scales) scales[along_cols ? b * cols + l : l * nb + b] = sc;
            for (int i = 0; i < n; i++) {
                unsigned fl = 0;
                amp_fp8_quantize_element(v[i], amp_mx_element_factor(sc), fmt, &fl);
                if (st) {
                    st->sat += (fl & AMP_F8_SATURATED) != 0;
                    st->flush += (fl & AMP_F8_FLUSHED) != 0;
                    st->nan += (fl & AMP_F8_NAN) != 0;
                }
                if (codes) codes[idx[i]] = q[i];
                y[idx[i]] = amp_mx_dequantize_element(q[i], sc, fmt);
            }
        }
}

/* c[M, N] = a[M, K] . b[K, N] with strides (naive, double sums); mag gets
 * the sum of |terms| for the tolerance. */
static void gemm(float *c, double *mag, const float *a, int as_m, int as_k, const float *b,
                 int bs_k, int bs_n, int M, int N, int K) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0, g = 0.0;
            for (int k = 0; k < K; k++) {
                double t = (double)a[i * as_m + k * as_k] * b[k * bs_k + j * bs_n];
                s += t;
                g += fabs(t);
            }
            c[i * N + j] = (float)s;
            if (mag) mag[i * N + j] = g;
        }
}

static int close_to(float got, float want, double mag) {
    return fabs((double)got - want) <= 1e-5 * mag + 1e-6 * fabs(want) + 1e-30;
}

static int check_array(const char *what, const float *got, const float *want, const double *mag,
                       int n) {
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (!close_to(got[i], want[i], mag ? mag[i] : fabs(want[i])) && bad++ < 3)
            fprintf(stderr, "  %s[%d]: %.9g, reference %.9g\n", what, i, got[i], want[i]);
    EXPECT(bad == 0, "%s: %d of %d values off the reference", what, bad, n);
    return bad;
}

/* The counts exactly; the amax exactly where the operand is known exactly
 * here (the batch, the master weights), else within FP32 rounding (a GEMM's
 * or the loss's result, summed in another order here). */
static void check_stats(const char *what, const amp_fp8_stats *got, const ref_stats *want,
                        int exact) {
    int amax_ok = exact ? got->amax == want->amax
                        : fabs((double)got->amax - want->amax) <= 1e-6 * want->amax;
    EXPECT(amax_ok && got->saturated == want->sat &&
               got->flushed == want->flush && got->nan == want->nan,
           "%s stats: amax %.9g sat %llu flush %llu nan %llu, reference amax %.9g sat %llu flush "
           "%llu nan %llu",
           what, got->amax, got->saturated, got->flushed, got->nan, want->amax, want->sat,
           want->flush, want->nan);
}

static int mx_main(int break_blocks);

/* --fp8-gemm: the CPU backend's tables with a fused fp8_gemm added. */
static amp_backend_ops fp8_gemm_ops;
static amp_fused_ops fp8_gemm_fused;
static int fp8_gemm_calls;

static int composed_fp8_gemm(amp_backend *be, const amp_gemm_desc *d,
                             const amp_fp8_gemm_operands *q) {
    size_t na = (size_t)d->m * d->k, nb = (size_t)d->k * d->n;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    int rc = !a || !b ||
             AMP_SCALED(be, fp8_dequantize, a, d->a, na, q->a_scale, q->a_fmt) ||
             AMP_SCALED(be, fp8_dequantize, b, d->b, nb, q->b_scale, q->b_fmt);
    amp_gemm_desc g = *d;
    g.a = a, g.b = b, g.in_dtype = AMP_DTYPE_F32;
    if (!rc) rc = AMP_CALL(be, gemm_ex, &g);
    free(a), free(b);
    fp8_gemm_calls++;
    return rc;
}

static void add_fp8_gemm(amp_backend *be) {
    fp8_gemm_ops = *be->ops;
    if (be->ops->fused) fp8_gemm_fused = *be->ops->fused;
    fp8_gemm_fused.fp8_gemm = composed_fp8_gemm;
    fp8_gemm_ops.fused = &fp8_gemm_fused;
    be->ops = &fp8_gemm_ops;
}

int main(int argc, char **argv) {
    int break_role = argc > 1 && strcmp(argv[1], "--break-role") == 0;
    if (argc > 1 && strncmp(argv[1], "--mx", 4) == 0) return mx_main(strcmp(argv[1], "--mx-break") == 0);
    char err[1024];
    int with_fp8_gemm = argc > 1 && strcmp(argv[1], "--fp8-gemm") == 0;
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "test_linear_fp8: %s\n", err);
        return 1;
    }
    if (with_fp8_gemm) add_fp8_gemm(be);
    amp_config *cfg = make_config((const char *const[]){"model.hidden=9", "model.activation=none",
                                                        NULL});
    amp_model_input in = {.batch = ROWS, .features = FEAT, .classes = CLS, .targets = 1};
    const amp_model_ops *ops = amp_model_find("mlp");
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    if (!ops || ops->describe(&desc, cfg, &in, err, sizeof err) != 0 || desc.nlayers < 2) {
        fprintf(stderr, "test_linear_fp8: mlp: %s\n", err);
        return 1;
    }
    amp_layer_precision prec[8];
    memset(prec, 0, sizeof prec);
    for (int l = 0; l < desc.nlayers; l++) {
        prec[l].struct_size = sizeof prec[l];
        for (int c = 0; c < AMP_OP_COUNT; c++) prec[l].compute[c] = AMP_DTYPE_F32;
        prec[l].activation = prec[l].param = AMP_DTYPE_F32;
    }
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < AMP_ROLE_COUNT; r++) {
            int current = l == 1 && r == AMP_ROLE_WEIGHT;
            prec[l].operand[r] = (amp_operand_format){
                FMT[r], current ? AMP_SCALING_CURRENT : AMP_SCALING_DELAYED, current ? 0 : 4, 0};
        }
    amp_model *m = NULL;
    if (amp_model_create(&m, ops, be, &desc, prec, &in, 0, cfg, err, sizeof err) != 0 ||
        m->ops->init_params(m, 42) != 0) {
        fprintf(stderr, "test_linear_fp8: %s\n", err);
        return 1;
    }
    EXPECT(m->scaled->nslots == 6, "%d slots, expected 6", m->scaled->nslots);
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < AMP_ROLE_COUNT; r++)
            if (SCALE[l][r] > 0.0f) amp_scaled_find(m->scaled, l, r)->scale = SCALE[l][r];

    /* a batch with values that saturate (|x| * 64 > 448) and flush */
    float x[ROWS * FEAT];
    int32_t y[ROWS] = {0, 4, 1, 3, 2, 2, 0};
    for (int i = 0; i < ROWS * FEAT; i++) {
        x[i] = (float)sin(0.37 * i * i + 0.3) * 9.0f;
        if (i % 11 == 0) x[i] *= 1e-6f;
    }
    memcpy(m->x, x, sizeof x);
    memcpy(m->y, y, sizeof y);
    int t_w[2], t_b[2];
    for (int l = 0; l < 2; l++) {
        char name[64];
        snprintf(name, sizeof name, "%s.weight", m->desc.layers[l].name);
        t_w[l] = amp_model_desc_find(&m->desc, name);
        snprintf(name, sizeof name, "%s.bias", m->desc.layers[l].name);
        t_b[l] = amp_model_desc_find(&m->desc, name);
    }
    /* the master weights, before the step */
    float W1[HID * FEAT], b1[HID], W2[CLS * HID], b2[CLS];
    memcpy(W1, m->master + m->desc.params[t_w[0]].offset, sizeof W1);
    memcpy(b1, m->master + m->desc.params[t_b[0]].offset, sizeof b1);
    memcpy(W2, m->master + m->desc.params[t_w[1]].offset, sizeof W2);
    memcpy(b2, m->master + m->desc.params[t_b[1]].offset, sizeof b2);

    amp_forward_args fa = {ROWS, 1, 1.0f / ROWS};
    amp_backward_args ba = {ROWS, 0};
    if (be->ops->zero(be, m->stats, amp_model_stats_bytes(m->desc.nlayers)) ||
        m->ops->cast_weights(m) || m->ops->forward(m, &fa) || m->ops->backward(m, &ba) ||
        amp_model_scaled_collect(m)) {
        fprintf(stderr, "test_linear_fp8: %s\n", be->err);
        return 1;
    }

    /* both forwards (per-tensor X and W) went to fp8_gemm, the rest composed */
    EXPECT(fp8_gemm_calls == (with_fp8_gemm ? 2 : 0), "fp8_gemm ran %d times", fp8_gemm_calls);

    /* ---- the reference, from the spec ---- */
    ref_stats st[2][AMP_ROLE_COUNT];
    memset(st, 0, sizeof st);
    float sx1 = SCALE[0][AMP_ROLE_INPUT], sw1 = SCALE[0][AMP_ROLE_WEIGHT];
    if (break_role) { /* the wrong scale per role: must fail */
        float t = sx1;
        sx1 = sw1;
        sw1 = t;
    }
    /* weights: codes and stats at the cast; fc2's W is current-scaled */
    static uint8_t c1[HID * FEAT], c2[CLS * HID];
    float dW1q[HID * FEAT], dW2q[CLS * HID];
    for (int i = 0; i < HID * FEAT; i++)
        dW1q[i] = qdq(W1[i], sw1, FMT[1], &st[0][1], &c1[i]);
    float a2 = 0.0f;
    for (int i = 0; i < CLS * HID; i++) a2 = fmaxf(a2, fabsf(W2[i]));
    float sw2 = (float)(448.0 / (double)a2);
    for (int i = 0; i < CLS * HID; i++)
        dW2q[i] = qdq(W2[i], sw2, FMT[1], &st[1][1], &c2[i]);
    /* forward */
    float xq[ROWS * FEAT], h[ROWS * HID], hq[ROWS * HID], z[ROWS * CLS];
    for (int i = 0; i < ROWS * FEAT; i++) xq[i] = qdq(x[i], sx1, FMT[0], &st[0][0], NULL);
    gemm(h, NULL, xq, FEAT, 1, dW1q, 1, FEAT, ROWS, HID, FEAT);
    for (int i = 0; i < ROWS * HID; i++) h[i] += b1[i % HID];
    for (int i = 0; i < ROWS * HID; i++) hq[i] = qdq(h[i], SCALE[1][0], FMT[0], &st[1][0], NULL);
    gemm(z, NULL, hq, HID, 1, dW2q, 1, HID, ROWS, CLS, HID);
    double loss = 0.0;
    float dz[ROWS * CLS];
    for (int r = 0; r < ROWS; r++) {
        float *zr = z + r * CLS;
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j < CLS; j++) zr[j] += b2[j], mx = fmax(mx, zr[j]);
        for (int j = 0; j < CLS; j++) sum += exp(zr[j] - mx);
        loss += log(sum) + mx - zr[y[r]];
        for (int j = 0; j < CLS; j++)
            dz[r * CLS + j] = (float)((exp(zr[j] - mx) / sum - (j == y[r])) / ROWS);
    }
    /* backward of fc2: qdY, dW2 = deq(qdY)^T deq(qX), db2 from dY, dX */
    float dzq[ROWS * CLS], gW2[CLS * HID], gb2[CLS] = {0}, dh[ROWS * HID];
    double mW2[CLS * HID], mh[ROWS * HID];
    for (int i = 0; i < ROWS * CLS; i++) dzq[i] = qdq(dz[i], SCALE[1][2], FMT[2], &st[1][2], NULL);
    gemm(gW2, mW2, dzq, 1, CLS, hq, HID, 1, CLS, HID, ROWS);
    for (int i = 0; i < ROWS * CLS; i++) gb2[i % CLS] += dz[i];
    gemm(dh, mh, dzq, CLS, 1, dW2q, HID, 1, ROWS, HID, CLS);
    /* backward of fc1 (its dY is fc2's dX) */
    float dhq[ROWS * HID], gW1[HID * FEAT], gb1[HID] = {0};
    double mW1[HID * FEAT];
    for (int i = 0; i < ROWS * HID; i++) dhq[i] = qdq(dh[i], SCALE[0][2], FMT[2], &st[0][2], NULL);
    gemm(gW1, mW1, dhq, 1, HID, xq, FEAT, 1, HID, FEAT, ROWS);
    for (int i = 0; i < ROWS * HID; i++) gb1[i % HID] += dh[i];

    /* ---- compare ---- */
    double got_loss = m->stats->loss_sum / ROWS;
    EXPECT(fabs(got_loss - loss / ROWS) <= 1e-5 * fabs(loss / ROWS), "loss %.9g, reference %.9g",
           got_loss, loss / ROWS);
    int bad = 0;
    bad += check_array("fc2 dW", m->grads + m->desc.params[t_w[1]].offset, gW2, mW2, CLS * HID);
    bad += check_array("fc2 db", m->grads + m->desc.params[t_b[1]].offset, gb2, NULL, CLS);
    bad += check_array("fc1 dW", m->grads + m->desc.params[t_w[0]].offset, gW1, mW1, HID * FEAT);
    bad += check_array("fc1 db", m->grads + m->desc.params[t_b[0]].offset, gb1, NULL, HID);
    const amp_kit_copy *k1 = &m->kit->copy[t_w[0]], *k2 = &m->kit->copy[t_w[1]];
    EXPECT(k1->fp8_slot >= 0 && memcmp(k1->ptr, c1, sizeof c1) == 0,
           "fc1's working copy: not the reference's E4M3 codes");
    EXPECT(k2->fp8_slot >= 0 && memcmp(k2->ptr, c2, sizeof c2) == 0 && k2->fp8_scale == sw2,
           "fc2's working copy: not the reference's codes at the current scale %.9g (got %.9g)",
           sw2, k2->fp8_scale);
    static const char *role[AMP_ROLE_COUNT] = {"input", "weight", "grad_output"};
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < AMP_ROLE_COUNT; r++) {
            char what[64];
            snprintf(what, sizeof what, "fc%d %s", l + 1, role[r]);
            int exact = r == AMP_ROLE_WEIGHT || (l == 0 && r == AMP_ROLE_INPUT);
            check_stats(what, &amp_scaled_find(m->scaled, l, r)->step, &st[l][r], exact);
        }
    if (!amp_test_failures)
        printf("ok  linear fp8%s: loss %.7g, fc1 input sat %llu flush %llu, weight sat %llu, "
               "grad flush %llu; fc2 weight scale %.7g (current)\n",
               with_fp8_gemm ? " (forwards on fp8_gemm)" : "", got_loss, st[0][0].sat,
               st[0][0].flush, st[0][1].sat, st[0][2].flush, sw2);
    (void)bad;
    amp_model_free(m);
    amp_config_free(cfg);
    be->ops->destroy(be);
    return amp_test_failures ? 1 : 0;
}

/* ---- MX32 (mxfp8, hybrid): every operand of both layers in blocks of 32
 * along its GEMM's reduction dimension (FP8_SPEC's MX32 section); counts
 * only, no amax. --mx-break blocks the reference's dW operands along the
 * wrong dimension, so that run must fail. ---- */
static int mx_main(int break_blocks) {
    char err[1024];
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "test_linear_fp8: %s\n", err);
        return 1;
    }
    amp_config *cfg = make_config((const char *const[]){"model.hidden=9", "model.activation=none",
                                                        NULL});
    amp_model_input in = {.batch = ROWS, .features = FEAT, .classes = CLS, .targets = 1};
    const amp_model_ops *ops = amp_model_find("mlp");
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    if (!ops || ops->describe(&desc, cfg, &in, err, sizeof err) != 0 || desc.nlayers < 2) {
        fprintf(stderr, "test_linear_fp8: mlp: %s\n", err);
        return 1;
    }
    amp_layer_precision prec[8];
    memset(prec, 0, sizeof prec);
    for (int l = 0; l < desc.nlayers; l++) {
        prec[l].struct_size = sizeof prec[l];
        for (int c = 0; c < AMP_OP_COUNT; c++) prec[l].compute[c] = AMP_DTYPE_F32;
        prec[l].activation = prec[l].param = AMP_DTYPE_F32;
    }
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < AMP_ROLE_COUNT; r++)
            prec[l].operand[r] = (amp_operand_format){FMT[r], AMP_SCALING_MX32, 0, 0};
    amp_model *m = NULL;
    if (amp_model_create(&m, ops, be, &desc, prec, &in, 0, cfg, err, sizeof err) != 0 ||
        m->ops->init_params(m, 42) != 0) {
        fprintf(stderr, "test_linear_fp8: %s\n", err);
        return 1;
    }
    float x[ROWS * FEAT];
    int32_t y[ROWS] = {0, 4, 1, 3, 2, 2, 0};
    for (int i = 0; i < ROWS * FEAT; i++) {
        x[i] = (float)sin(0.37 * i * i + 0.3) * 9.0f;
        if (i % 11 == 0) x[i] *= 1e-9f; /* flushed against its block's scale */
    }
    memcpy(m->x, x, sizeof x);
    memcpy(m->y, y, sizeof y);
    int t_w[2], t_b[2];
    for (int l = 0; l < 2; l++) {
        char name[64];
        snprintf(name, sizeof name, "%s.weight", m->desc.layers[l].name);
        t_w[l] = amp_model_desc_find(&m->desc, name);
        snprintf(name, sizeof name, "%s.bias", m->desc.layers[l].name);
        t_b[l] = amp_model_desc_find(&m->desc, name);
    }
    float W1[HID * FEAT], b1[HID], W2[CLS * HID], b2[CLS];
    memcpy(W1, m->master + m->desc.params[t_w[0]].offset, sizeof W1);
    memcpy(b1, m->master + m->desc.params[t_b[0]].offset, sizeof b1);
    memcpy(W2, m->master + m->desc.params[t_w[1]].offset, sizeof W2);
    memcpy(b2, m->master + m->desc.params[t_b[1]].offset, sizeof b2);
    amp_forward_args fa = {ROWS, 1, 1.0f / ROWS};
    amp_backward_args ba = {ROWS, 0};
    if (be->ops->zero(be, m->stats, amp_model_stats_bytes(m->desc.nlayers)) ||
        m->ops->cast_weights(m) || m->ops->forward(m, &fa) || m->ops->backward(m, &ba) ||
        amp_model_scaled_collect(m)) {
        fprintf(stderr, "test_linear_fp8: %s\n", be->err);
        return 1;
    }

    /* the reference */
    ref_stats st[2][AMP_ROLE_COUNT];
    memset(st, 0, sizeof st);
    enum { NB1 = (FEAT + 31) / 32, NB2 = (HID + 31) / 32 };
    static uint8_t c1[HID * FEAT + HID * NB1], c2[CLS * HID + CLS * NB2];
    float w1q[HID * FEAT], w2q[CLS * HID], w2c[CLS * HID];
    mx_ref(w1q, W1, HID, FEAT, 0, FMT[1], &st[0][1], c1, c1 + HID * FEAT);
    mx_ref(w2q, W2, CLS, HID, 0, FMT[1], &st[1][1], c2, c2 + CLS * HID);
    mx_ref(w2c, W2, CLS, HID, 1, FMT[1], NULL, NULL, NULL);
    float xq[ROWS * FEAT], xc[ROWS * FEAT], h[ROWS * HID], hq[ROWS * HID], hc[ROWS * HID];
    float z[ROWS * CLS];
    mx_ref(xq, x, ROWS, FEAT, 0, FMT[0], &st[0][0], NULL, NULL);
    mx_ref(xc, x, ROWS, FEAT, !break_blocks, FMT[0], NULL, NULL, NULL);
    gemm(h, NULL, xq, FEAT, 1, w1q, 1, FEAT, ROWS, HID, FEAT);
    for (int i = 0; i < ROWS * HID; i++) h[i] += b1[i % HID];
    mx_ref(hq, h, ROWS, HID, 0, FMT[0], &st[1][0], NULL, NULL);
    mx_ref(hc, h, ROWS, HID, 1, FMT[0], NULL, NULL, NULL);
    gemm(z, NULL, hq, HID, 1, w2q, 1, HID, ROWS, CLS, HID);
    double loss = 0.0;
    float dz[ROWS * CLS];
    for (int r = 0; r < ROWS; r++) {
        float *zr = z + r * CLS;
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j < CLS; j++) zr[j] += b2[j], mx = fmax(mx, zr[j]);
        for (int j = 0; j < CLS; j++) sum += exp(zr[j] - mx);
        loss += log(sum) + mx - zr[y[r]];
        for (int j = 0; j < CLS; j++)
            dz[r * CLS + j] = (float)((exp(zr[j] - mx) / sum - (j == y[r])) / ROWS);
    }
    /* fc2: dW from dY and X blocked along rows (dY counted there), dX from
     * dY blocked along out and W blocked down its columns */
    float dzc[ROWS * CLS], dzr[ROWS * CLS], gW2[CLS * HID], gb2[CLS] = {0}, dh[ROWS * HID];
    double mW2[CLS * HID];
    mx_ref(dzc, dz, ROWS, CLS, 1, FMT[2], &st[1][2], NULL, NULL);
    mx_ref(dzr, dz, ROWS, CLS, 0, FMT[2], NULL, NULL, NULL);
    gemm(gW2, mW2, dzc, 1, CLS, hc, HID, 1, CLS, HID, ROWS);
    for (int i = 0; i < ROWS * CLS; i++) gb2[i % CLS] += dz[i];
    gemm(dh, NULL, dzr, CLS, 1, w2c, HID, 1, ROWS, HID, CLS);
    float dhc[ROWS * HID], gW1[HID * FEAT], gb1[HID] = {0};
    double mW1[HID * FEAT];
    mx_ref(dhc, dh, ROWS, HID, 1, FMT[2], &st[0][2], NULL, NULL);
    gemm(gW1, mW1, dhc, 1, HID, xc, FEAT, 1, HID, FEAT, ROWS);
    for (int i = 0; i < ROWS * HID; i++) gb1[i % HID] += dh[i];

    double got_loss = m->stats->loss_sum / ROWS;
    EXPECT(fabs(got_loss - loss / ROWS) <= 1e-5 * fabs(loss / ROWS), "mx loss %.9g, reference %.9g",
           got_loss, loss / ROWS);
    check_array("mx fc2 dW", m->grads + m->desc.params[t_w[1]].offset, gW2, mW2, CLS * HID);
    check_array("mx fc2 db", m->grads + m->desc.params[t_b[1]].offset, gb2, NULL, CLS);
    check_array("mx fc1 dW", m->grads + m->desc.params[t_w[0]].offset, gW1, mW1, HID * FEAT);
    check_array("mx fc1 db", m->grads + m->desc.params[t_b[0]].offset, gb1, NULL, HID);
    EXPECT(memcmp(m->kit->copy[t_w[0]].ptr, c1, sizeof c1) == 0,
           "mx fc1's working copy: not the reference's codes and E8M0 scales");
    EXPECT(memcmp(m->kit->copy[t_w[1]].ptr, c2, sizeof c2) == 0,
           "mx fc2's working copy: not the reference's codes and E8M0 scales");
    static const char *role[AMP_ROLE_COUNT] = {"input", "weight", "grad_output"};
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < AMP_ROLE_COUNT; r++) {
            char what[64];
            snprintf(what, sizeof what, "mx fc%d %s", l + 1, role[r]);
            check_stats(what, &amp_scaled_find(m->scaled, l, r)->step, &st[l][r], 1);
        }
    if (!amp_test_failures)
        printf("ok  linear mxfp8: loss %.7g, fc1 input flush %llu, fc1 grad flush %llu, "
               "fc2 grad flush %llu\n",
               got_loss, st[0][0].flush, st[0][2].flush, st[1][2].flush);
    amp_model_free(m);
    amp_config_free(cfg);
    be->ops->destroy(be);
    return amp_test_failures ? 1 : 0;
}
