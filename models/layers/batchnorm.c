/* BatchNorm2d (nn.BatchNorm2d): statistics, affine and gradients in FP32
 * with FP32 weights whatever the policy (autocast's fp32 list); the output
 * rounded once into the layer's activation dtype, counted. The running
 * statistics and num_batches_tracked live in the master array, so
 * checkpoints carry them. Under data parallel with [dist] sync_batchnorm the
 * model's allsum hook makes the batch statistics those of the global batch
 * (the backend sums them over the ranks through it; no MPI here). */
#include <stdio.h>

#include "image.h"
#include "kit_state.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

int amp_batchnorm_init(amp_model *m, amp_batchnorm *N, const char *name, int c, int hw,
                       double momentum, double eps) {
    static const char *const suffix[] = {"weight", "bias", "running_mean", "running_var",
                                         "num_batches_tracked"};
    static const double start[] = {1.0, 0.0, 0.0, 1.0, 0.0};
    int *t[] = {&N->g, &N->b, &N->mean, &N->var, &N->count};
    N->layer = amp_kit_layer(m, name);
    for (int i = 0; i < 5; i++) {
        *t[i] = amp_kit_member(m, name, suffix[i]);
        if (*t[i] < 0 || N->layer < 0) {
            snprintf(m->be->err, sizeof m->be->err, "model '%s': no layer or tensor %s.%s for "
                     "BatchNorm2d", m->ops->name, name, suffix[i]);
            return -1;
        }
        amp_kit_init_rule(m, *t[i], AMP_INIT_CONST, start[i]);
    }
    N->c = c;
    N->hw = hw;
    N->momentum = (float)momentum;
    N->eps = (float)eps;
    N->out_dt = m->prec[N->layer].activation;
    amp_kit_need(m, AMP_SCRATCH_DW, (size_t)c);
    amp_kit_need(m, AMP_SCRATCH_DB, (size_t)c);
    return 0;
}

void amp_batchnorm_layout(amp_model *m, amp_batchnorm *N) {
    N->save_mean = amp_kit_take(m, AMP_MEM_ACTIVATIONS, (size_t)N->c, AMP_DTYPE_F32);
    N->save_invstd = amp_kit_take(m, AMP_MEM_ACTIVATIONS, (size_t)N->c, AMP_DTYPE_F32);
    N->one = amp_kit_take(m, AMP_MEM_WORKSPACE, 1, AMP_DTYPE_F32);
    N->one_ready = 0;
}

/* x for the backend's op: its FP32 values (a view, or widened into tmp),
 * or, where the backend reads 16-bit x itself, the stored array (*x16;
 * *xf NULL). 0, or -1 when widening failed. */
static int bn_input(amp_model *m, const amp_array *x, float *tmp, size_t n, const float **xf,
                    const uint16_t **x16) {
    *xf = NULL;
    *x16 = NULL;
    if (!x->f32 && x->store != AMP_DTYPE_F32 && amp_backend_supports(m->be, "batch_norm_x16")) {
        *x16 = x->p;
        return 0;
    }
    *xf = amp_array_f32(m, x, tmp, n);
    return *xf ? 0 : -1;
}

int amp_batchnorm_forward(amp_model *m, amp_batchnorm *N, amp_array *y, void *out, amp_array x,
                          const amp_image_scratch *s, int rows, int training, int store) {
    amp_backend *be = m->be;
    size_t n = (size_t)rows * N->c * N->hw;
    const float *xf;
    const uint16_t *x16;
    CHECK(bn_input(m, &x, s->f[0], n, &xf, &x16));
    int wide = N->out_dt == AMP_DTYPE_F32;
    float *yf = wide ? out : xf == s->f[1] ? s->f[0] : s->f[1];
    amp_batch_norm_fwd a = {yf, N->save_mean, N->save_invstd, amp_kit_master(m, N->mean),
                            amp_kit_master(m, N->var), xf, amp_kit_master(m, N->g),
                            amp_kit_master(m, N->b), rows, N->c, N->hw, training, N->momentum,
                            N->eps, training ? m->allsum : NULL, x16, x.store};
    CHECK(AMP_CONV(be, batch_norm_forward, &a));
    if (training && !N->one_ready) {
        const float one = 1.0f;
        CHECK(be->ops->upload(be, N->one, &one, sizeof one));
        N->one_ready = 1;
    }
    if (training) /* num_batches_tracked += 1 */
        CHECK(be->ops->quantize(be, amp_kit_master(m, N->count), N->one, 1, AMP_DTYPE_F32, NULL, 1));
    *y = amp_array_of(out, N->out_dt);
    if (wide) return 0;
    amp_round_count *fwd = amp_model_rounds(m, N->layer, AMP_ROUND_FWD);
    if (store == AMP_BN_STORE_RELU) { /* the output rounded (counted), its ReLU stored, one pass */
        CHECK(AMP_FUSED(be, round_act,
                        &(amp_round_act_args){out, yf, yf, N->out_dt, n, AMP_ACT_RELU, fwd}));
        y->f32 = yf;
        return 0;
    }
    if (store) return be->ops->round(be, out, N->out_dt, yf, n, fwd);
    /* the next layer stores it: round (counted) in FP32 and hand over the view */
    CHECK(be->ops->quantize(be, yf, yf, n, N->out_dt, fwd, 0));
    y->f32 = yf;
    return 0;
}

int amp_batchnorm_backward(amp_model *m, const amp_batchnorm *N, float *dy, amp_array x,
                           float *tmp, int rows, int accumulate) {
    amp_backend *be = m->be;
    amp_kit *k = m->kit;
    const float *xf;
    const uint16_t *x16;
    CHECK(bn_input(m, &x, tmp, (size_t)rows * N->c * N->hw, &xf, &x16));
    /* dx replaces dy in place (the op reads a channel before writing it) */
    float *dg = k->scratch[AMP_SCRATCH_DW], *db = k->scratch[AMP_SCRATCH_DB];
    amp_batch_norm_bwd a = {dy, dg, db, dy, xf, amp_kit_master(m, N->g), N->save_mean,
                            N->save_invstd, rows, N->c, N->hw, 1, m->allsum, x16, x.store};
    CHECK(AMP_CONV(be, batch_norm_backward, &a));
    CHECK(be->ops->quantize(be, amp_kit_grad(m, N->g), dg, (size_t)N->c, AMP_DTYPE_F32, NULL,
                            accumulate));
    return be->ops->quantize(be, amp_kit_grad(m, N->b), db, (size_t)N->c, AMP_DTYPE_F32, NULL,
                             accumulate);
}

int amp_batchnorm_fuses_relu(amp_model *m, const amp_batchnorm *N) {
    return N->out_dt != AMP_DTYPE_F32 && amp_backend_supports(m->be, "round_act");
}
