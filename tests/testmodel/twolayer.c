/* A test-only model with a parameter table unlike the MLP's, so tests of
 * the model interface cannot pass by assuming the MLP: a GELU encoder with
 * a bias and a bias-free classifier.
 *   encoder.proj.weight [width, features], encoder.proj.bias [width]
 *   classifier.weight   [classes, width]
 * Layers "encoder" and "classifier". [model] width = 16 (its only key).
 * Each layer computes in one dtype (GEMM, weights and activations); the
 * classifier's input is converted when the two layers differ. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "util/rng.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

typedef struct twolayer {
    int F, H, C;
    amp_dtype d1, d2;    /* the encoder's and the classifier's dtype */
    size_t w1, b1, w2;   /* offsets of the tensors */
    void *w1_work, *b1_work, *w2_work; /* working weights (alias master in F32) */
    void *x16;           /* [B, F] input in d1 (aliases m->x in F32) */
    void *z1, *a1;       /* [B, H] pre/post GELU in d1; z1 is reused for dZ1 */
    void *a1_2;          /* [B, H] a1 in d2 (aliases a1 when d1 == d2) */
    void *z2;            /* [B, C] logits in d2, reused for dlogits */
    float *f_h, *f_z, *f_c, *f_w, *f_b; /* FP32 scratch: [B, H] x2, [B, C], [largest weight], [H] */
} twolayer;

static size_t dsize(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

static int read_width(amp_config *cfg, int *width, char *err, size_t errlen) {
    int64_t w = 0;
    if (amp_config_get_int(cfg, "model", "width", 16, 1, 1 << 16, &w, err, errlen) < 0) return -1;
    *width = (int)w;
    return 0;
}

static int tl_describe(amp_model_desc *d, amp_config *cfg, const amp_model_input *in, char *err,
                       size_t errlen) {
    int H;
    if (read_width(cfg, &H, err, errlen) != 0) return -1;
    int64_t w1[2] = {H, in->features}, b1[1] = {H}, w2[2] = {in->classes, H};
    unsigned ops = (1u << AMP_OP_GEMM) | (1u << AMP_OP_POINTWISE);
    if (amp_model_desc_add_layer(d, "encoder", ops) || amp_model_desc_add_layer(d, "classifier", ops) ||
        amp_model_desc_add_param(d, "encoder.proj.weight", 0, 1, 2, w1) ||
        amp_model_desc_add_param(d, "encoder.proj.bias", 0, 0, 1, b1) ||
        amp_model_desc_add_param(d, "classifier.weight", 1, 1, 2, w2)) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    return 0;
}

static int tl_create(amp_model *m, amp_config *cfg, char *err, size_t errlen) {
    for (int l = 0; l < 2; l++) {
        const amp_layer_precision *p = &m->prec[l];
        if (p->compute[AMP_OP_GEMM] != p->param || p->param != p->activation) {
            snprintf(err, errlen, "model twolayer: layer '%s' needs its GEMM, weights and "
                     "activations in one dtype", m->desc.layers[l].name);
            return -1;
        }
    }
    twolayer *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->impl = t;
    t->F = m->input.features;
    t->C = m->input.classes;
    t->H = (int)m->desc.params[0].shape[0];
    t->d1 = m->prec[0].param;
    t->d2 = m->prec[1].param;
    t->w1 = m->desc.params[0].offset;
    t->b1 = m->desc.params[1].offset;
    t->w2 = m->desc.params[2].offset;
    return 0;
}

static void tl_destroy(amp_model *m) {
    free(m->impl);
    m->impl = NULL;
}

static void tl_layout(amp_model *m) {
    twolayer *t = m->impl;
    amp_arena *mem = m->mem;
    size_t B = (size_t)m->input.batch, H = (size_t)t->H, F = (size_t)t->F, C = (size_t)t->C;
    int f32_1 = t->d1 == AMP_DTYPE_F32, f32_2 = t->d2 == AMP_DTYPE_F32;
    t->w1_work = f32_1 ? (void *)(m->master ? m->master + t->w1 : NULL)
                       : amp_arena_take(&mem[AMP_MEM_WORKING], H * F * 2);
    t->b1_work = f32_1 ? (void *)(m->master ? m->master + t->b1 : NULL)
                       : amp_arena_take(&mem[AMP_MEM_WORKING], H * 2);
    t->w2_work = f32_2 ? (void *)(m->master ? m->master + t->w2 : NULL)
                       : amp_arena_take(&mem[AMP_MEM_WORKING], C * H * 2);
    t->x16 = f32_1 ? m->x : amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * F * 2);
    t->z1 = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * H * dsize(t->d1));
    t->a1 = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * H * dsize(t->d1));
    t->a1_2 = t->d1 == t->d2 ? t->a1 : amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * H * dsize(t->d2));
    t->z2 = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * C * dsize(t->d2));
    size_t largest = H * F > C * H ? H * F : C * H;
    t->f_h = amp_arena_take(&mem[AMP_MEM_WORKSPACE], B * H * 4);
    t->f_z = amp_arena_take(&mem[AMP_MEM_WORKSPACE], B * H * 4);
    t->f_c = amp_arena_take(&mem[AMP_MEM_WORKSPACE], B * C * 4);
    t->f_w = amp_arena_take(&mem[AMP_MEM_WORKSPACE], largest * 4);
    t->f_b = amp_arena_take(&mem[AMP_MEM_WORKSPACE], H * 4);
}

static int tl_init_params(amp_model *m, uint64_t seed) {
    twolayer *t = m->impl;
    float *h = malloc(m->desc.nparams * sizeof *h);
    if (!h) {
        snprintf(m->be->err, sizeof m->be->err, "out of host memory");
        return -1;
    }
    amp_rng rng;
    amp_rng_seed(&rng, seed ^ 0x2a2a);
    for (size_t i = 0; i < m->desc.nparams; i++) {
        double bound = 1.0 / sqrt((double)(i < t->w2 ? t->F : t->H));
        h[i] = (float)((2.0 * amp_rng_uniform(&rng) - 1.0) * bound);
    }
    int rc = m->be->ops->upload(m->be, m->master, h, m->desc.nparams * sizeof *h);
    free(h);
    return rc;
}

static int tl_cast_weights(amp_model *m) {
    twolayer *t = m->impl;
    amp_backend *be = m->be;
    if (t->d1 != AMP_DTYPE_F32) {
        amp_round_count *c = amp_model_rounds(m, 0, AMP_ROUND_FWD);
        CHECK(be->ops->round(be, t->w1_work, t->d1, m->master + t->w1, (size_t)t->H * t->F, c));
        CHECK(be->ops->round(be, t->b1_work, t->d1, m->master + t->b1, (size_t)t->H, c));
    }
    if (t->d2 != AMP_DTYPE_F32)
        CHECK(be->ops->round(be, t->w2_work, t->d2, m->master + t->w2, (size_t)t->C * t->H,
                             amp_model_rounds(m, 1, AMP_ROUND_FWD)));
    return 0;
}

static int tl_forward(amp_model *m, const amp_forward_args *a) {
    twolayer *t = m->impl;
    amp_backend *be = m->be;
    int B = a->rows;
    size_t BH = (size_t)B * t->H, BC = (size_t)B * t->C;
    CHECK(be->ops->round(be, t->x16, t->d1, m->x, (size_t)B * t->F, amp_model_rounds(m, 0, AMP_ROUND_FWD)));
    /* encoder: a1 = gelu(x W1^T + b1), one call with the epilogue */
    amp_gemm_desc g1 =
        amp_gemm_plain(t->f_h, t->x16, t->w1_work, t->d1, AMP_GEMM_NT, B, t->H, t->F);
    g1.bias = t->b1_work;
    g1.bias_dtype = t->d1;
    g1.act = AMP_ACT_GELU;
    g1.out = t->z1;
    g1.act_out = t->a1;
    g1.out_dtype = t->d1;
    g1.cnt = amp_model_rounds(m, 0, AMP_ROUND_FWD);
    CHECK(AMP_CALL(be, gemm_ex, &g1));
    if (t->a1_2 != t->a1) { /* the classifier reads a1 in its own dtype */
        CHECK(be->ops->widen(be, t->f_h, t->a1, t->d1, BH));
        CHECK(be->ops->round(be, t->a1_2, t->d2, t->f_h, BH, amp_model_rounds(m, 1, AMP_ROUND_FWD)));
    }
    /* classifier: logits = a1 W2^T, stored in d2, loss in FP32 */
    amp_gemm_desc g2 =
        amp_gemm_plain(t->f_c, t->a1_2, t->w2_work, t->d2, AMP_GEMM_NT, B, t->C, t->H);
    g2.out = t->z2;
    g2.out_dtype = t->d2;
    g2.cnt = amp_model_rounds(m, 1, AMP_ROUND_FWD);
    CHECK(AMP_CALL(be, gemm_ex, &g2));
    CHECK(be->ops->widen(be, t->f_c, t->z2, t->d2, BC));
    return be->ops->softmax_xent(be, a->for_backward ? t->f_c : NULL, m->stats, t->f_c, m->y, B,
                                 t->C, a->loss_grad_scale);
}

static int tl_backward(amp_model *m, const amp_backward_args *a) {
    twolayer *t = m->impl;
    amp_backend *be = m->be;
    const amp_backend_ops *op = be->ops;
    int B = a->rows;
    size_t BH = (size_t)B * t->H, BC = (size_t)B * t->C;
    amp_round_count *g1c = amp_model_rounds(m, 0, AMP_ROUND_GRAD), *g2c = amp_model_rounds(m, 1, AMP_ROUND_GRAD);
    /* dlogits are stored like the logits (d2) */
    CHECK(op->round(be, t->z2, t->d2, t->f_c, BC, g2c));
    amp_gemm_desc dw2 = amp_gemm_plain(t->f_w, t->z2, t->a1_2, t->d2, AMP_GEMM_TN, t->C, t->H, B);
    CHECK(AMP_CALL(be, gemm_ex, &dw2));
    CHECK(op->quantize(be, m->grads + t->w2, t->f_w, (size_t)t->C * t->H, t->d2, g2c, a->accumulate));
    /* dA1 = dlogits W2, stored in d1, through GELU' at z1 */
    amp_gemm_desc da1 =
        amp_gemm_plain(t->f_h, t->z2, t->w2_work, t->d2, AMP_GEMM_NN, B, t->H, t->C);
    CHECK(AMP_CALL(be, gemm_ex, &da1));
    CHECK(op->quantize(be, t->f_h, t->f_h, BH, t->d1, g1c, 0));
    CHECK(op->widen(be, t->f_z, t->z1, t->d1, BH));
    CHECK(op->act_backward(be, t->f_h, t->f_h, t->f_z, BH, AMP_ACT_GELU));
    CHECK(op->round(be, t->z1, t->d1, t->f_h, BH, g1c)); /* dZ1 replaces Z1 */
    amp_gemm_desc dw1 = amp_gemm_plain(t->f_w, t->z1, t->x16, t->d1, AMP_GEMM_TN, t->H, t->F, B);
    CHECK(AMP_CALL(be, gemm_ex, &dw1));
    CHECK(op->quantize(be, m->grads + t->w1, t->f_w, (size_t)t->H * t->F, t->d1, g1c, a->accumulate));
    CHECK(op->widen(be, t->f_h, t->z1, t->d1, BH));
    CHECK(op->col_sum(be, t->f_b, t->f_h, B, t->H));
    CHECK(op->quantize(be, m->grads + t->b1, t->f_b, (size_t)t->H, t->d1, g1c, a->accumulate));
    return 0;
}

const amp_model_ops amp_test_model_twolayer = {
    .name = "twolayer",
    .describe = tl_describe,
    .create = tl_create,
    .layout = tl_layout,
    .destroy = tl_destroy,
    .init_params = tl_init_params,
    .cast_weights = tl_cast_weights,
    .forward = tl_forward,
    .backward = tl_backward,
};
