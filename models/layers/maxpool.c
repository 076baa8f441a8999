/* MaxPool2d (nn.MaxPool2d): in FP32 on the view of its input, exact in any
 * dtype, stored as its input is; the argmax kept as a 2-byte offset in its
 * window for the backward. */
#include "image.h"
#include "kit_state.h"

void amp_maxpool_init(amp_maxpool *P, int rows, int c, int h, int w, int k, int stride, int pad) {
    P->d = (amp_pool2d_desc){rows, c, h, w, k, k, stride, stride, pad, pad};
    P->in_n = (size_t)c * h * w;
    P->out_n = (size_t)c * amp_pool2d_out_h(&P->d) * amp_pool2d_out_w(&P->d);
}

void amp_maxpool_layout(amp_model *m, amp_maxpool *P) {
    P->idx = amp_arena_take(&m->mem[AMP_MEM_ACTIVATIONS], (size_t)P->d.n * P->out_n * sizeof *P->idx);
}

int amp_maxpool_forward(amp_model *m, const amp_maxpool *P, amp_array *y, void *out, amp_array x,
                        const amp_image_scratch *s, int rows) {
    amp_backend *be = m->be;
    const float *xf = amp_array_f32(m, &x, s->f[0], (size_t)rows * P->in_n);
    if (!xf) return -1;
    int wide = x.store == AMP_DTYPE_F32;
    float *yf = wide ? out : xf == s->f[1] ? s->f[0] : s->f[1];
    amp_pool2d_desc d = P->d;
    d.n = rows;
    if (AMP_CONV(be, max_pool2d_forward, yf, P->idx, xf, &d) != 0) return -1;
    *y = amp_array_of(out, x.store);
    if (wide) return 0;
    y->f32 = yf;
    return be->ops->round(be, out, x.store, yf, (size_t)rows * P->out_n, NULL); /* exact */
}

int amp_maxpool_backward(amp_model *m, const amp_maxpool *P, float *dx, const float *dy, int rows) {
    amp_pool2d_desc d = P->d;
    d.n = rows;
    return AMP_CONV(m->be, max_pool2d_backward, dx, dy, P->idx, &d);
}

int amp_maxpool_backward_round(amp_model *m, const amp_maxpool *P, float *dx, float *dy, int rows,
                               amp_dtype dt, int layer) {
    /* Windows that do not overlap give each dx element 0 + one dy or
     * nothing: rounding (and counting) dy first gives the same dx and the
     * same counts as rounding dx after, over out_n elements instead of in_n. */
    int disjoint = P->d.stride_h >= P->d.kh && P->d.stride_w >= P->d.kw;
    if (disjoint && amp_kit_grad_round(m, dy, dt, layer, (size_t)rows * P->out_n) != 0) return -1;
    if (amp_maxpool_backward(m, P, dx, dy, rows) != 0) return -1;
    return disjoint ? 0 : amp_kit_grad_round(m, dx, dt, layer, (size_t)rows * P->in_n);
}
