/* ReLU in place (nn.ReLU(inplace=True)): exact in any dtype, so it works
 * on the FP32 view of its input, stores in the input's dtype and counts
 * nothing; its backward needs only where its output is > 0. */
#include "image.h"
#include "kit_state.h"

int amp_relu_forward(amp_model *m, amp_array *y, void *out, amp_array x,
                     const amp_image_scratch *s, size_t n) {
    amp_backend *be = m->be;
    const float *xf = amp_array_f32(m, &x, s->f[0], n);
    if (!xf) return -1;
    *y = amp_array_of(out, x.store);
    if (x.store == AMP_DTYPE_F32) return be->ops->act_forward(be, out, xf, n, AMP_ACT_RELU);
    float *v = (float *)xf; /* scratch here: relu it in place */
    if (be->ops->act_forward(be, v, xf, n, AMP_ACT_RELU) != 0) return -1;
    y->f32 = v;
    return be->ops->round(be, out, x.store, v, n, NULL);
}

int amp_relu_backward(amp_model *m, float *dy, amp_array y, float *tmp, size_t n) {
    amp_backend *be = m->be;
    if (y.store != AMP_DTYPE_F32 && amp_backend_supports(be, "act_backward_round"))
        /* one pass over the 16-bit output; dy holds values of the dtype, so
         * the op's roundings are exact (uncounted, as the composed ops, which
         * make none): only the FP32 result is wanted, no 16-bit copy of it */
        return AMP_FUSED(be, act_backward_round,
                         &(amp_act_round_args){NULL, dy, dy, y.p, y.store, n, AMP_ACT_RELU, NULL, 1});
    const float *z = amp_array_f32(m, &y, tmp, n);
    if (!z) return -1;
    return be->ops->act_backward(be, dy, dy, z, n, AMP_ACT_RELU);
}
