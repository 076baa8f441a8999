/* Softmax cross-entropy runs in FP32 whatever the policy (autocast's fp32
 * list): the logits widened once, the loss and hits into the stats record. */
#include "kit_state.h"

int amp_kit_xent(amp_model *m, float *dlogits, float *f32, const void *logits, amp_dtype dt,
                 int rows, int classes, float scale) {
    amp_backend *be = m->be;
    if (be->ops->widen(be, f32, logits, dt, (size_t)rows * classes) != 0) return -1;
    return be->ops->softmax_xent(be, dlogits, m->stats, f32, m->y, rows, classes, scale);
}
