/* LayerNorm and RMSNorm on the backend's op: FP32 statistics and math, the output
 * rounded into the layer's activation dtype (counted), its gradient
 * rounded the same way before the backward reads it. */
#include <stdio.h>

#include "kit_state.h"

int amp_layernorm_init(amp_model *m, amp_layernorm *n, const char *name, float eps) {
    char p[AMP_MODEL_NAME_MAX + 16];
    n->layer = amp_kit_layer(m, name);
    snprintf(p, sizeof p, "%s.weight", name);
    n->w = amp_kit_tensor(m, p);
    snprintf(p, sizeof p, "%s.bias", name);
    n->b = amp_kit_tensor(m, p);
    if (n->layer < 0 || n->w < 0) {
        snprintf(m->be->err, sizeof m->be->err, "model '%s': no layer or weight for LayerNorm '%s'",
                 m->ops->name, name);
        return -1;
    }
    n->C = (int)m->desc.params[n->w].shape[0];
    n->eps = eps;
    n->rms = 0;
    n->out_dt = m->prec[n->layer].activation;
    amp_kit_init_rule(m, n->w, AMP_INIT_CONST, 1.0);
    amp_kit_init_rule(m, n->b, AMP_INIT_CONST, 0.0);
    return 0;
}

int amp_rmsnorm_init(amp_model *m, amp_layernorm *n, const char *name, float eps) {
    if (amp_layernorm_init(m, n, name, eps) != 0) return -1;
    if (n->b >= 0) {
        snprintf(m->be->err, sizeof m->be->err, "model '%s': RMSNorm '%s' has a bias tensor",
                 m->ops->name, name);
        return -1;
    }
    n->rms = 1;
    return 0;
}

void amp_layernorm_layout(amp_model *m, amp_layernorm *n, int rows) {
    amp_layernorm_layout_out(m, n, rows, 0, NULL);
}

void amp_layernorm_layout_out(amp_model *m, amp_layernorm *n, int rows, int given, void *out) {
    size_t R = (size_t)rows;
    n->out = given ? out : amp_kit_take(m, AMP_MEM_ACTIVATIONS, R * n->C, n->out_dt);
    n->mean = amp_kit_take(m, AMP_MEM_ACTIVATIONS, R, AMP_DTYPE_F32);
    n->rstd = amp_kit_take(m, AMP_MEM_ACTIVATIONS, R, AMP_DTYPE_F32);
}

int amp_layernorm_forward(amp_model *m, const amp_layernorm *n, const float *x, int rows) {
    return AMP_TRANSFORMER(m->be, layernorm_forward,
                           &(amp_layernorm_fwd){n->out, n->out_dt, n->mean, n->rstd, x,
                                                amp_kit_master(m, n->w), amp_kit_master(m, n->b),
                                                rows, n->C, n->eps,
                                                amp_model_rounds(m, n->layer, AMP_ROUND_FWD),
                                                n->rms});
}

int amp_layernorm_backward(amp_model *m, const amp_layernorm *n, float *dx, float *dout,
                           const float *x, int rows) {
    amp_backend *be = m->be;
    if (be->ops->quantize(be, dout, dout, (size_t)rows * n->C, n->out_dt,
                          amp_model_rounds(m, n->layer, AMP_ROUND_GRAD), 0) != 0)
        return -1;
    return AMP_TRANSFORMER(be, layernorm_backward,
                           &(amp_layernorm_bwd){dx, amp_kit_grad(m, n->w), amp_kit_grad(m, n->b),
                                                dout, x, amp_kit_master(m, n->w), n->mean, n->rstd,
                                                rows, n->C, n->rms});
}
