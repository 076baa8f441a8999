/* A tensor's rows of the model's flat arrays (the FP32 master weights and
 * the gradients): what the kit's state (kit.c) and the number formats
 * (format.c) both read, below both. */
#include "layers.h"

float *amp_kit_master(amp_model *m, int t) {
    if (t < 0 || !m->master) return NULL;
    if (m->sharded) /* the FP32 weights every rank holds (model.h) */
        return m->wts_off[t] == (size_t)-1 || !m->wts ? NULL : m->wts + m->wts_off[t];
    return m->master + m->desc.params[t].offset;
}

float *amp_kit_grad(amp_model *m, int t) {
    if (t < 0 || !m->grads) return NULL;
    if (m->grad_of) return m->grad_of(m->grad_ctx, t); /* its bucket's buffer (model.h) */
    return m->grads + m->desc.params[t].offset;
}
