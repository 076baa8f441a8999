/* A step's convolutions and GEMMs alone, on a layer's own operands and in
 * its operand dtypes (whatever they hold): the floor bench_cnn compares a
 * whole FP32 step with. Each adds its flops. */
#include "image.h"
#include "kit_state.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

int amp_conv2d_convs_only(amp_model *m, const amp_conv2d *C, float *y, float *dx, int rows,
                          double *flops) {
    amp_backend *be = m->be;
    amp_kit *k = m->kit;
    size_t ws = k->need[AMP_SCRATCH_CONV_WS];
    amp_conv2d_desc d = C->d;
    d.n = rows;
    /* a scaled conv's copy holds codes: its floor is the FP32 convs */
    const void *w = C->scaled ? amp_kit_master(m, C->w) : amp_kit_weight(m, C->w).p;
    if (C->scaled) d.dt = AMP_DTYPE_F32;
    double one = 2.0 * rows * (double)C->out_n * d.c_in * d.kh * d.kw;
    CHECK(AMP_CONV(be, conv2d_forward, y, C->x_op, w, NULL, &d, k->conv_ws, ws));
    CHECK(AMP_CONV(be, conv2d_backward_filter, k->scratch[AMP_SCRATCH_DW], NULL, C->x_op, y, &d, k->conv_ws, ws));
    *flops += 2 * one;
    if (!dx) return 0;
    *flops += one;
    return AMP_CONV(be, conv2d_backward_data, dx, y, w, &d, k->conv_ws, ws);
}

int amp_linear_gemms_only(amp_model *m, const amp_linear *L, amp_array x, float *dy, float *dx,
                          int rows, double *flops) {
    amp_backend *be = m->be;
    const void *xg = amp_format_operand(m, L->feed, L->gemm, 0, &x, (size_t)rows * L->in);
    amp_array w = amp_kit_weight(m, L->w);
    const void *wg = amp_format_operand(m, L->feed, L->gemm, 1, &w, (size_t)L->in * L->out);
    if (!xg || !wg) return -1;
    double one = 2.0 * rows * L->out * (double)L->in;
    amp_gemm_desc g = amp_gemm_plain(dy, xg, wg, L->feed, AMP_GEMM_NT, rows, L->out, L->in);
    CHECK(AMP_CALL(be, gemm_ex, &g)); /* forward */
    g = amp_gemm_plain(m->kit->scratch[AMP_SCRATCH_DW], dy, xg, L->feed, AMP_GEMM_TN, L->out, L->in, rows);
    CHECK(AMP_CALL(be, gemm_ex, &g)); /* dW */
    *flops += 2 * one;
    if (!dx) return 0;
    *flops += one;
    g = amp_gemm_plain(dx, dy, wg, L->feed, AMP_GEMM_NN, rows, L->in, L->out);
    return AMP_CALL(be, gemm_ex, &g); /* dX */
}
