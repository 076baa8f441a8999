/* The residual stream (FP32) and the gradients' reset. */
#include "kit_state.h"

int amp_kit_residual(amp_model *m, float *out, const float *x, amp_array d, size_t n) {
    return AMP_TRANSFORMER(m->be, residual_add, out, x, d.p, d.store, n);
}

int amp_kit_zero_grads(amp_model *m) {
    if (m->grad_of) return 0; /* each bucket's buffer is zeroed when it is taken */
    return m->be->ops->zero(m->be, m->grads, m->desc.nparams * sizeof(float));
}
