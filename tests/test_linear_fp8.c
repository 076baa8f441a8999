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
 * a GPU's cuBLASLt call gets them) against the same reference;
 * `--mx-fp8-gemm` does the same in the MX32 case (the codes and the block
 * scales a GPU's block-scaled call gets; the composition mx_dequantizes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "fp8_reference.h"
#include "layers/kit_state.h"
#include "model.h"
#include "session_helpers.h"

enum { ROWS = 7, FEAT = 40, HID = 9, CLS = 5 };

static const float SCALE[2][AMP_ROLE_COUNT] = {{64.0f, 4096.0f, 16.0f}, {32.0f, 0.0f, 2048.0f}};
static const uint32_t FMT[AMP_ROLE_COUNT] = {AMP_FORMAT_F8_E4M3, AMP_FORMAT_F8_E4M3,
                                              AMP_FORMAT_F8_E5M2};


/* ---- the run both cases share: the MLP under per-layer operand formats,
 * one forward + backward, and the comparison with a reference ---- */

typedef struct mlp_run {
    amp_backend *be;
    amp_config *cfg;
    amp_model *m;
    int t_w[2], t_b[2];
    float x[ROWS * FEAT];
    int32_t y[ROWS];
    float W1[HID * FEAT], b1[HID], W2[CLS * HID], b2[CLS]; /* the masters before the step */
} mlp_run;

/* What the reference computed: the loss (summed over the rows), both
 * layers' gradients with their GEMMs' sums of |terms| (for dW), the stats
 * per (layer, role). */
typedef struct ref_out {
    double loss;
    float gW1[HID * FEAT], gb1[HID], gW2[CLS * HID], gb2[CLS];
    double mW1[HID * FEAT], mW2[CLS * HID];
    ref_stats st[2][AMP_ROLE_COUNT];
} ref_out;

/* --fp8-gemm: the CPU backend's tables with a fused fp8_gemm added. */
static int with_fp8_gemm;
static amp_backend_ops fp8_gemm_ops;
static amp_fused_ops fp8_gemm_fused;
static int fp8_gemm_calls;

static int composed_fp8_gemm(amp_backend *be, const amp_gemm_desc *d,
                             const amp_fp8_gemm_operands *q) {
    size_t na = (size_t)d->m * d->k, nb = (size_t)d->k * d->n;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    amp_mx_desc ma = {d->m, d->k, q->a_fmt, 0}, mb = {d->n, d->k, q->b_fmt, 0};
    int rc = !a || !b;
    if (!rc && q->a_mx) /* MX32: A [m, k], B [n, k] (the TN form), blocks along k */
        rc = !d->trans_b || d->trans_a ||
             AMP_SCALED(be, mx_dequantize, a, d->a, q->a_mx, &ma) ||
             AMP_SCALED(be, mx_dequantize, b, d->b, q->b_mx, &mb);
    else if (!rc)
        rc = AMP_SCALED(be, fp8_dequantize, a, d->a, na, q->a_scale, q->a_fmt) ||
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

/* The MLP with fc1 and fc2's operands as fmt(layer, role) gives them,
 * a batch whose every 11th value is multiplied by tiny, one step run. */
static int mlp_step(mlp_run *R, amp_operand_format (*fmt)(int layer, int role), float tiny) {
    char err[1024];
    R->be = amp_backend_cpu_create(err, sizeof err);
    if (!R->be) {
        fprintf(stderr, "test_linear_fp8: %s\n", err);
        return -1;
    }
    if (with_fp8_gemm) add_fp8_gemm(R->be);
    R->cfg = make_config((const char *const[]){"model.hidden=9", "model.activation=none", NULL});
    amp_model_input in = {.batch = ROWS, .features = FEAT, .classes = CLS, .targets = 1};
    const amp_model_ops *ops = amp_model_find("mlp");
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    if (!ops || ops->describe(&desc, R->cfg, &in, err, sizeof err) != 0 || desc.nlayers < 2) {
        fprintf(stderr, "test_linear_fp8: mlp: %s\n", err);
        return -1;
    }
    amp_layer_precision prec[8];
    memset(prec, 0, sizeof prec);
    for (int l = 0; l < desc.nlayers; l++) {
        prec[l].struct_size = sizeof prec[l];
        for (int c = 0; c < AMP_OP_COUNT; c++) prec[l].compute[c] = AMP_DTYPE_F32;
        prec[l].activation = prec[l].param = AMP_DTYPE_F32;
    }
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < AMP_ROLE_COUNT; r++) prec[l].operand[r] = fmt(l, r);
    R->m = NULL;
    if (amp_model_create(&R->m, ops, R->be, &desc, prec, &in, 0, R->cfg, err, sizeof err) != 0 ||
        R->m->ops->init_params(R->m, 42) != 0) {
        fprintf(stderr, "test_linear_fp8: %s\n", err);
        return -1;
    }
    amp_model *m = R->m;
    static const int32_t y[ROWS] = {0, 4, 1, 3, 2, 2, 0};
    for (int i = 0; i < ROWS * FEAT; i++) {
        R->x[i] = (float)sin(0.37 * i * i + 0.3) * 9.0f;
        if (i % 11 == 0) R->x[i] *= tiny;
    }
    memcpy(R->y, y, sizeof y);
    memcpy(m->x, R->x, sizeof R->x);
    memcpy(m->y, R->y, sizeof R->y);
    for (int l = 0; l < 2; l++) {
        char name[64];
        snprintf(name, sizeof name, "%s.weight", m->desc.layers[l].name);
        R->t_w[l] = amp_model_desc_find(&m->desc, name);
        snprintf(name, sizeof name, "%s.bias", m->desc.layers[l].name);
        R->t_b[l] = amp_model_desc_find(&m->desc, name);
    }
    memcpy(R->W1, m->master + m->desc.params[R->t_w[0]].offset, sizeof R->W1);
    memcpy(R->b1, m->master + m->desc.params[R->t_b[0]].offset, sizeof R->b1);
    memcpy(R->W2, m->master + m->desc.params[R->t_w[1]].offset, sizeof R->W2);
    memcpy(R->b2, m->master + m->desc.params[R->t_b[1]].offset, sizeof R->b2);
    return 0;
}

/* Runs the step whose scales the caller may have set after mlp_step. */
static int mlp_run_step(mlp_run *R) {
    amp_backend *be = R->be;
    amp_model *m = R->m;
    amp_forward_args fa = {ROWS, 1, 1.0f / ROWS};
    amp_backward_args ba = {ROWS, 0};
    if (be->ops->zero(be, m->stats, amp_model_stats_bytes(m->desc.nlayers)) ||
        m->ops->cast_weights(m) || m->ops->forward(m, &fa) || m->ops->backward(m, &ba) ||
        amp_model_scaled_collect(m)) {
        fprintf(stderr, "test_linear_fp8: %s\n", be->err);
        return -1;
    }
    return 0;
}

/* The forward of the reference from its quantized operands (x, W1, W2 in
 * the forward's orientation; hq(h) quantizes fc1's output as fc2's input)
 * up to dz, the loss into r. */
typedef void (*quant_fn)(float *hq, const float *h, ref_stats *st);

static void ref_forward(const mlp_run *R, ref_out *r, const float *xq, const float *w1q,
                        const float *w2q, float *hq, float *h, quant_fn quant_h, float *dz) {
    float z[ROWS * CLS];
    gemm(h, NULL, xq, FEAT, 1, w1q, 1, FEAT, ROWS, HID, FEAT);
    for (int i = 0; i < ROWS * HID; i++) h[i] += R->b1[i % HID];
    quant_h(hq, h, &r->st[1][0]);
    gemm(z, NULL, hq, HID, 1, w2q, 1, HID, ROWS, CLS, HID);
    r->loss = 0.0;
    for (int row = 0; row < ROWS; row++) {
        float *zr = z + row * CLS;
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j < CLS; j++) zr[j] += R->b2[j], mx = fmax(mx, zr[j]);
        for (int j = 0; j < CLS; j++) sum += exp(zr[j] - mx);
        r->loss += log(sum) + mx - zr[R->y[row]];
        for (int j = 0; j < CLS; j++)
            dz[row * CLS + j] = (float)((exp(zr[j] - mx) / sum - (j == R->y[row])) / ROWS);
    }
}

/* The step's loss, gradients and stats against the reference's, and the
 * working copies' bytes against the reference codes c1, c2 (n1, n2 bytes);
 * tag names the case; exact(layer, role): the amax is compared exactly. */
static void check_run(const mlp_run *R, const ref_out *r, const char *tag, const uint8_t *c1,
                      size_t n1, const uint8_t *c2, size_t n2, int (*exact)(int layer, int role)) {
    amp_model *m = R->m;
    double got_loss = m->stats->loss_sum / ROWS;
    EXPECT(fabs(got_loss - r->loss / ROWS) <= 1e-5 * fabs(r->loss / ROWS),
           "%s loss %.9g, reference %.9g", tag, got_loss, r->loss / ROWS);
    char what[64];
    const float *g = m->grads;
    const amp_param_desc *p = m->desc.params;
    snprintf(what, sizeof what, "%s fc2 dW", tag);
    check_array(what, g + p[R->t_w[1]].offset, r->gW2, r->mW2, CLS * HID);
    snprintf(what, sizeof what, "%s fc2 db", tag);
    check_array(what, g + p[R->t_b[1]].offset, r->gb2, NULL, CLS);
    snprintf(what, sizeof what, "%s fc1 dW", tag);
    check_array(what, g + p[R->t_w[0]].offset, r->gW1, r->mW1, HID * FEAT);
    snprintf(what, sizeof what, "%s fc1 db", tag);
    check_array(what, g + p[R->t_b[0]].offset, r->gb1, NULL, HID);
    const amp_kit_copy *k1 = &m->kit->copy[R->t_w[0]], *k2 = &m->kit->copy[R->t_w[1]];
    EXPECT(k1->fp8_slot >= 0 && memcmp(k1->ptr, c1, n1) == 0,
           "%s fc1's working copy: not the reference's codes", tag);
    EXPECT(k2->fp8_slot >= 0 && memcmp(k2->ptr, c2, n2) == 0,
           "%s fc2's working copy: not the reference's codes", tag);
    static const char *role[AMP_ROLE_COUNT] = {"input", "weight", "grad_output"};
    for (int l = 0; l < 2; l++)
        for (int ro = 0; ro < AMP_ROLE_COUNT; ro++) {
            snprintf(what, sizeof what, "%s fc%d %s", tag, l + 1, role[ro]);
            check_stats(what, &amp_scaled_find(m->scaled, l, ro)->step, &r->st[l][ro], exact(l, ro), 0);
        }
}

static void mlp_free(mlp_run *R) {
    amp_model_free(R->m);
    amp_config_free(R->cfg);
    R->be->ops->destroy(R->be);
}

/* ---- per tensor: fc1 delayed, fc2 delayed X and dY, current W ---- */

static amp_operand_format per_tensor_fmt(int l, int r) {
    int current = l == 1 && r == AMP_ROLE_WEIGHT;
    return (amp_operand_format){FMT[r], current ? AMP_SCALING_CURRENT : AMP_SCALING_DELAYED,
                                current ? 0u : 4u, 0};
}

/* the batch and the masters are known exactly; the rest within rounding */
static int per_tensor_exact(int l, int r) { return r == AMP_ROLE_WEIGHT || (l == 0 && r == AMP_ROLE_INPUT); }

static void quant_h_per_tensor(float *hq, const float *h, ref_stats *st) {
    for (int i = 0; i < ROWS * HID; i++) hq[i] = qdq(h[i], SCALE[1][0], FMT[0], st, NULL);
}

static int mx_main(int break_blocks);

int main(int argc, char **argv) {
    int break_role = argc > 1 && strcmp(argv[1], "--break-role") == 0;
    if (argc > 1 && strncmp(argv[1], "--mx", 4) == 0) {
        with_fp8_gemm = strcmp(argv[1], "--mx-fp8-gemm") == 0;
        return mx_main(strcmp(argv[1], "--mx-break") == 0);
    }
    with_fp8_gemm = argc > 1 && strcmp(argv[1], "--fp8-gemm") == 0;
    static mlp_run R;
    if (mlp_step(&R, per_tensor_fmt, 1e-6f) != 0) return 1;
    amp_model *m = R.m;
    EXPECT(m->scaled->nslots == 6, "%d slots, expected 6", m->scaled->nslots);
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < AMP_ROLE_COUNT; r++)
            if (SCALE[l][r] > 0.0f) amp_scaled_find(m->scaled, l, r)->scale = SCALE[l][r];
    if (mlp_run_step(&R) != 0) return 1;
    /* both forwards (per-tensor X and W) went to fp8_gemm, the rest composed */
    EXPECT(fp8_gemm_calls == (with_fp8_gemm ? 2 : 0), "fp8_gemm ran %d times", fp8_gemm_calls);

    /* ---- the reference, from the spec ---- */
    static ref_out ref;
    memset(&ref, 0, sizeof ref);
    ref_stats (*st)[AMP_ROLE_COUNT] = ref.st;
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
        dW1q[i] = qdq(R.W1[i], sw1, FMT[1], &st[0][1], &c1[i]);
    float a2 = 0.0f;
    for (int i = 0; i < CLS * HID; i++) a2 = fmaxf(a2, fabsf(R.W2[i]));
    float sw2 = (float)(448.0 / (double)a2);
    for (int i = 0; i < CLS * HID; i++)
        dW2q[i] = qdq(R.W2[i], sw2, FMT[1], &st[1][1], &c2[i]);
    float xq[ROWS * FEAT], h[ROWS * HID], hq[ROWS * HID], dz[ROWS * CLS];
    for (int i = 0; i < ROWS * FEAT; i++) xq[i] = qdq(R.x[i], sx1, FMT[0], &st[0][0], NULL);
    ref_forward(&R, &ref, xq, dW1q, dW2q, hq, h, quant_h_per_tensor, dz);
    /* backward of fc2: qdY, dW2 = deq(qdY)^T deq(qX), db2 from dY, dX */
    float dzq[ROWS * CLS], dh[ROWS * HID];
    for (int i = 0; i < ROWS * CLS; i++) dzq[i] = qdq(dz[i], SCALE[1][2], FMT[2], &st[1][2], NULL);
    gemm(ref.gW2, ref.mW2, dzq, 1, CLS, hq, HID, 1, CLS, HID, ROWS);
    for (int i = 0; i < ROWS * CLS; i++) ref.gb2[i % CLS] += dz[i];
    gemm(dh, NULL, dzq, CLS, 1, dW2q, HID, 1, ROWS, HID, CLS);
    /* backward of fc1 (its dY is fc2's dX) */
    float dhq[ROWS * HID];
    for (int i = 0; i < ROWS * HID; i++) dhq[i] = qdq(dh[i], SCALE[0][2], FMT[2], &st[0][2], NULL);
    gemm(ref.gW1, ref.mW1, dhq, 1, HID, xq, FEAT, 1, HID, FEAT, ROWS);
    for (int i = 0; i < ROWS * HID; i++) ref.gb1[i % HID] += dh[i];

    check_run(&R, &ref, "fp8", c1, sizeof c1, c2, sizeof c2, per_tensor_exact);
    const amp_kit_copy *k2 = &m->kit->copy[R.t_w[1]];
    EXPECT(k2->fp8_scale == sw2, "fc2's working copy: quantized at %.9g, the current scale is %.9g",
           k2->fp8_scale, sw2);
    if (!amp_test_failures)
        printf("ok  linear fp8%s: loss %.7g, fc1 input sat %llu flush %llu, weight sat %llu, "
               "grad flush %llu; fc2 weight scale %.7g (current)\n",
               with_fp8_gemm ? " (forwards on fp8_gemm)" : "", m->stats->loss_sum / ROWS, st[0][0].sat, st[0][0].flush, st[0][1].sat,
               st[0][2].flush, sw2);
    mlp_free(&R);
    return amp_test_failures ? 1 : 0;
}

/* ---- MX32 (mxfp8, hybrid): every operand of both layers in blocks of 32
 * along its GEMM's reduction dimension (FP8_SPEC's MX32 section); counts
 * only, no amax. --mx-break blocks the reference's dW operands along the
 * wrong dimension, so that run must fail. ---- */

static amp_operand_format mx_fmt(int l, int r) {
    (void)l;
    return (amp_operand_format){FMT[r], AMP_SCALING_MX32, 0, 0};
}

static int mx_exact(int l, int r) { return (void)l, (void)r, 1; }

static void quant_h_mx(float *hq, const float *h, ref_stats *st) {
    mx_ref(hq, h, ROWS, HID, 0, FMT[0], st, NULL, NULL);
}

static int mx_main(int break_blocks) {
    static mlp_run R;
    /* tiny values of 1e-9 are flushed against their block's scale */
    if (mlp_step(&R, mx_fmt, 1e-9f) != 0 || mlp_run_step(&R) != 0) return 1;
    /* both forwards (MX32 X and W) went to fp8_gemm with their block scales */
    EXPECT(fp8_gemm_calls == (with_fp8_gemm ? 2 : 0), "fp8_gemm ran %d times", fp8_gemm_calls);
    static ref_out ref;
    memset(&ref, 0, sizeof ref);
    ref_stats (*st)[AMP_ROLE_COUNT] = ref.st;
    enum { NB1 = (FEAT + 31) / 32, NB2 = (HID + 31) / 32 };
    static uint8_t c1[HID * FEAT + HID * NB1], c2[CLS * HID + CLS * NB2];
    float w1q[HID * FEAT], w2q[CLS * HID], w2c[CLS * HID];
    mx_ref(w1q, R.W1, HID, FEAT, 0, FMT[1], &st[0][1], c1, c1 + HID * FEAT);
    mx_ref(w2q, R.W2, CLS, HID, 0, FMT[1], &st[1][1], c2, c2 + CLS * HID);
    mx_ref(w2c, R.W2, CLS, HID, 1, FMT[1], NULL, NULL, NULL);
    float xq[ROWS * FEAT], xc[ROWS * FEAT], h[ROWS * HID], hq[ROWS * HID], hc[ROWS * HID];
    float dz[ROWS * CLS];
    mx_ref(xq, R.x, ROWS, FEAT, 0, FMT[0], &st[0][0], NULL, NULL);
    mx_ref(xc, R.x, ROWS, FEAT, !break_blocks, FMT[0], NULL, NULL, NULL);
    ref_forward(&R, &ref, xq, w1q, w2q, hq, h, quant_h_mx, dz);
    mx_ref(hc, h, ROWS, HID, 1, FMT[0], NULL, NULL, NULL);
    /* fc2: dW from dY and X blocked along rows (dY counted there), dX from
     * dY blocked along out and W blocked down its columns */
    float dzc[ROWS * CLS], dzr[ROWS * CLS], dh[ROWS * HID];
    mx_ref(dzc, dz, ROWS, CLS, 1, FMT[2], &st[1][2], NULL, NULL);
    mx_ref(dzr, dz, ROWS, CLS, 0, FMT[2], NULL, NULL, NULL);
    gemm(ref.gW2, ref.mW2, dzc, 1, CLS, hc, HID, 1, CLS, HID, ROWS);
    for (int i = 0; i < ROWS * CLS; i++) ref.gb2[i % CLS] += dz[i];
    gemm(dh, NULL, dzr, CLS, 1, w2c, HID, 1, ROWS, HID, CLS);
    float dhc[ROWS * HID];
    mx_ref(dhc, dh, ROWS, HID, 1, FMT[2], &st[0][2], NULL, NULL);
    gemm(ref.gW1, ref.mW1, dhc, 1, HID, xc, FEAT, 1, HID, FEAT, ROWS);
    for (int i = 0; i < ROWS * HID; i++) ref.gb1[i % HID] += dh[i];

    check_run(&R, &ref, "mx", c1, sizeof c1, c2, sizeof c2, mx_exact);
    if (!amp_test_failures)
        printf("ok  linear mxfp8%s: loss %.7g, fc1 input flush %llu, fc1 grad flush %llu, "
               "fc2 grad flush %llu\n",
               with_fp8_gemm ? " (forwards on fp8_gemm)" : "", R.m->stats->loss_sum / ROWS,
               st[0][0].flush, st[0][2].flush, st[1][2].flush);
    mlp_free(&R);
    return amp_test_failures ? 1 : 0;
}
