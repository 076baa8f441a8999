/* Token and position embeddings on the backend's ops, in FP32 on the
 * master weights; the backward sums in order on every backend. */
#include <stdio.h>

#include "kit_state.h"

int amp_embedding_init(amp_model *m, amp_embedding *e, const char *wte, const char *wpe,
                       double std) {
    e->wte = amp_kit_tensor(m, wte);
    e->wpe = amp_kit_tensor(m, wpe);
    if (e->wte < 0 || e->wpe < 0) {
        snprintf(m->be->err, sizeof m->be->err, "model '%s': no tensors %s / %s", m->ops->name, wte,
                 wpe);
        return -1;
    }
    /* the lookup reads the FP32 weights (a tied wte has a 16-bit copy too) */
    amp_kit_reads_master(m, e->wte);
    amp_kit_reads_master(m, e->wpe);
    e->T = (int)m->desc.params[e->wpe].shape[0];
    e->C = (int)m->desc.params[e->wpe].shape[1];
    amp_kit_init_rule(m, e->wte, AMP_INIT_NORMAL, std);
    amp_kit_init_rule(m, e->wpe, AMP_INIT_NORMAL, std);
    return 0;
}

int amp_embedding_init_tokens(amp_model *m, amp_embedding *e, const char *wte, int T, double std) {
    e->wte = amp_kit_tensor(m, wte);
    e->wpe = -1;
    if (e->wte < 0) {
        snprintf(m->be->err, sizeof m->be->err, "model '%s': no tensor %s", m->ops->name, wte);
        return -1;
    }
    amp_kit_reads_master(m, e->wte);
    e->T = T;
    e->C = (int)m->desc.params[e->wte].shape[1];
    amp_kit_init_rule(m, e->wte, AMP_INIT_NORMAL, std);
    return 0;
}

/* Without a position table the op adds a zero table (x + 0 is x) and its
 * position sums go to scratch nobody reads: the token path keeps the op. */
void amp_embedding_layout(amp_model *m, amp_embedding *e) {
    size_t n = e->wpe < 0 ? (size_t)e->T * e->C : 0;
    e->zero_pe = amp_kit_take(m, AMP_MEM_WORKSPACE, n, AMP_DTYPE_F32);
    e->dpe_sink = amp_kit_take(m, AMP_MEM_WORKSPACE, n, AMP_DTYPE_F32);
}

static float *position_table(amp_model *m, const amp_embedding *e, float *none) {
    if (e->wpe >= 0) return amp_kit_master(m, e->wpe);
    return m->be->ops->zero(m->be, none, (size_t)e->T * e->C * sizeof(float)) == 0 ? none : NULL;
}

int amp_embedding_forward(amp_model *m, const amp_embedding *e, float *out, int rows) {
    const float *pe = position_table(m, e, e->zero_pe);
    if (!pe) return -1;
    return AMP_TRANSFORMER(m->be, embed_forward, out, amp_kit_master(m, e->wte), pe,
                    (const int32_t *)m->x, rows, e->T, e->C);
}

int amp_embedding_backward(amp_model *m, const amp_embedding *e, const float *dout, int rows) {
    float *dpe = e->wpe >= 0 ? amp_kit_grad(m, e->wpe) : e->dpe_sink;
    return AMP_TRANSFORMER(m->be, embed_backward, amp_kit_grad(m, e->wte), dpe, dout,
                    (const int32_t *)m->x, rows, e->T, e->C);
}
