/* Causal self-attention as the backend's op over a fused qkv, in the
 * layer's attention dtype; the qkv is converted only under a policy that
 * stores it in another dtype. */
#include <stdio.h>

#include "backend/kernels/attention.h"
#include "kit_state.h"

int amp_attention_init(amp_model *m, amp_attention *a, const char *name, int T, int C, int nh,
                       amp_array qkv) {
    a->layer = amp_kit_layer(m, name);
    if (a->layer < 0) {
        snprintf(m->be->err, sizeof m->be->err, "model '%s': no layer '%s'", m->ops->name, name);
        return -1;
    }
    a->B = m->input.batch;
    a->T = T;
    a->C = C;
    a->nh = nh;
    a->dt = m->prec[a->layer].compute[AMP_OP_ATTENTION];
    size_t N = (size_t)a->B * T;
    if (amp_format_converts(a->dt, a->dt, qkv.store, qkv.vals)) {
        amp_kit_need(m, AMP_SCRATCH_OPERAND, 3 * N * C);
        m->kit->att_operand = 1; /* slot 0 beside the attention's workspace */
    }
    amp_kit_need(m, AMP_SCRATCH_ATT_WS, amp_attention_workspace_floats(a->B, T, C, nh));
    amp_kit_need(m, AMP_SCRATCH_ATT_DY, N * C);
    amp_kit_need(m, AMP_SCRATCH_ATT_DQKV, 3 * N * C);
    return 0;
}

void amp_attention_layout(amp_model *m, amp_attention *a) {
    amp_attention_layout_out(m, a, 0, NULL);
}

void amp_attention_layout_out(amp_model *m, amp_attention *a, int given, void *out) {
    size_t N = (size_t)a->B * a->T;
    a->att = amp_kit_take(m, AMP_MEM_ACTIVATIONS, (size_t)a->B * a->nh * a->T * a->T, a->dt);
    a->out = given ? out : amp_kit_take(m, AMP_MEM_ACTIVATIONS, N * a->C, a->dt);
}

int amp_attention_forward(amp_model *m, const amp_attention *a, amp_array qkv, int rows) {
    size_t n = 3 * (size_t)rows * a->T * a->C;
    const void *q = amp_format_operand(m, a->dt, a->dt, 0, &qkv, n);
    if (!q) return -1;
    return AMP_TRANSFORMER(m->be, attention_forward, a->out, a->att,
                           m->kit->scratch[AMP_SCRATCH_ATT_WS], q,
                           &(amp_attention_desc){rows, a->T, a->C, a->nh, a->dt},
                           amp_model_rounds(m, a->layer, AMP_ROUND_FWD));
}

int amp_attention_backward(amp_model *m, const amp_attention *a, amp_array *dy, const float *dout,
                           amp_array qkv, int rows) {
    amp_backend *be = m->be;
    amp_kit *k = m->kit;
    amp_round_count *cnt = amp_model_rounds(m, a->layer, AMP_ROUND_GRAD);
    size_t n = (size_t)rows * a->T * a->C;
    void *d = k->scratch[AMP_SCRATCH_ATT_DY], *dqkv = k->scratch[AMP_SCRATCH_ATT_DQKV];
    if (be->ops->round(be, d, a->dt, dout, n, cnt) != 0) return -1;
    const void *q = amp_format_operand(m, a->dt, a->dt, 0, &qkv, 3 * n);
    if (!q) return -1;
    *dy = amp_array_of(dqkv, a->dt);
    return AMP_TRANSFORMER(be, attention_backward, dqkv, k->scratch[AMP_SCRATCH_ATT_WS], d, q,
                           a->att, &(amp_attention_desc){rows, a->T, a->C, a->nh, a->dt}, cnt);
}
