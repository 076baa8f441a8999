/* Activations between the image layers: an FP32 view of a stored array
 * (its own values, never re-rounded) and the rounding of a gradient into
 * the dtype of the activation it belongs to. */
#include "image.h"
#include "kit_state.h"

const float *amp_array_f32(amp_model *m, const amp_array *a, float *tmp, size_t n) {
    if (a->f32) return a->f32;
    if (a->store == AMP_DTYPE_F32) return a->p;
    if (m->be->ops->widen(m->be, tmp, a->p, a->store, n) != 0) return NULL;
    return tmp;
}

int amp_kit_grad_round(amp_model *m, float *g, amp_dtype dt, int layer, size_t n) {
    amp_round_count *cnt = layer >= 0 ? amp_model_rounds(m, layer, AMP_ROUND_GRAD) : NULL;
    return m->be->ops->quantize(m->be, g, g, n, dt, cnt, 0);
}
