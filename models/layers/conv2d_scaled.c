/* Conv2d with scaled operands (FP8 per tensor, MX): the three im2col
 * GEMMs run here, FP32 on the dequantized operands, as the Linear's do
 * (linear.c), because a blocked family's blocks lie along the GEMM's
 * reduction dimension, which exists only after the im2col:
 *
 *   forward  Y[c_out, N*P] = W[c_out, K] . col[K, N*P]      blocks along K
 *   dW       dW[c_out, K]  = dY[c_out, N*P] . col[K, N*P]^T  blocks along N*P
 *   dX       dcol[K, N*P]  = W^T . dY[c_out, N*P]            blocks along c_out
 *
 * (K = c_in*kh*kw, P = the output plane, N*P the images side by side). The
 * input role is the im2col'd activations, counted as such (an input value
 * a window reads twice is counted twice); the weight's working copy is the
 * format's codes (1 byte per value and its scale); the bias is added in
 * FP32 through a GEMM with a row of ones, and db sums dY's own values the
 * same way. A role the policy left unscaled is its values rounded to the
 * conv's dtype. The output is rounded once into the layer's activation
 * dtype (counted); dx stays FP32 for the caller to round. */
#include "kit_state.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

static size_t plane(const amp_conv2d *C) {
    return (size_t)amp_conv2d_out_h(&C->d) * (size_t)amp_conv2d_out_w(&C->d);
}

static size_t reduction(const amp_conv2d *C) { return (size_t)C->d.c_in * C->d.kh * C->d.kw; }

void amp_conv2d_scaled_plan(amp_model *m, amp_conv2d *C, int rows) {
    if (C->fp8[AMP_ROLE_WEIGHT] >= 0)
        amp_kit_add_fp8_copy(m, C->w, C->fp8[AMP_ROLE_WEIGHT], C->layer);
    else
        amp_kit_add_copy(m, C->w, C->cd, 1, C->layer);
    amp_kit_add_copy(m, C->b, C->cd, 1, C->layer);
    size_t np = (size_t)rows * plane(C), K = reduction(C), co = (size_t)C->d.c_out;
    size_t big = K * np > co * np ? K * np : co * np;
    amp_kit_need(m, AMP_SCRATCH_OPERAND, big > C->wn ? big : C->wn);
    amp_kit_need(m, AMP_SCRATCH_COL, K * np);
    amp_kit_need(m, AMP_SCRATCH_ACC, co * np);
    amp_kit_need(m, AMP_SCRATCH_DW, C->wn);
    amp_kit_need(m, AMP_SCRATCH_DB, co);
    amp_kit_need(m, AMP_SCRATCH_ONES, np);
}

static amp_conv2d_desc desc_of(const amp_conv2d *C, int rows) {
    amp_conv2d_desc d = C->d;
    d.n = rows;
    d.dt = AMP_DTYPE_F32;
    return d;
}

/* The 1x1 "convolution" whose im2col turns NCHW [rows, c_out, P] into
 * [c_out, rows*P] (and whose col2im turns it back). */
static amp_conv2d_desc channels_first(const amp_conv2d *C, int rows) {
    amp_conv2d_desc d = {rows, C->d.c_out, amp_conv2d_out_h(&C->d), amp_conv2d_out_w(&C->d),
                         1, 1, 1, 1, 1, 0, 0, AMP_DTYPE_F32};
    return d;
}

/* Role `role`'s operand v [rows, cols] (FP32) in operand scratch `slot`:
 * quantize-dequantized when scaled (blocks along rows, or down columns
 * with along_cols; count: add its stats), else rounded to the conv's
 * dtype (v itself for FP32). */
static const float *operand(amp_model *m, const amp_conv2d *C, int role, int slot, const float *v,
                            size_t rows, size_t cols, int along_cols, int count) {
    amp_array a = amp_array_of(v, AMP_DTYPE_F32);
    if (C->fp8[role] >= 0)
        return amp_format_scaled_operand(m, C->fp8[role], slot, &a, (int)rows, (int)cols,
                                         along_cols, count);
    if (C->cd == AMP_DTYPE_F32) return v;
    float *dst = m->kit->op_f32[slot];
    return m->be->ops->quantize(m->be, dst, v, rows * cols, C->cd, NULL, 0) != 0 ? NULL : dst;
}

/* The weight [c_out, K] in operand scratch `slot` (along_cols: blocks
 * along c_out, for dX). */
static const float *weight(amp_model *m, const amp_conv2d *C, int slot, int along_cols) {
    if (C->fp8[AMP_ROLE_WEIGHT] >= 0) return amp_format_scaled_weight(m, C->w, slot, along_cols);
    return amp_kit_weight(m, C->w).p; /* FP32 values of cd, or the master */
}

/* x_op from x: x's own values when INPUT is scaled (widened exactly), else
 * rounded to cd and counted as autocast's cast of the input. */
static int input(amp_model *m, const amp_conv2d *C, amp_array x, size_t n) {
    amp_backend *be = m->be;
    float *xo = C->x_op;
    if (xo == x.p) return 0;
    const float *wide = x.p;
    if (x.store != AMP_DTYPE_F32) {
        CHECK(be->ops->widen(be, xo, x.p, x.store, n));
        wide = xo;
    }
    if (C->fp8[AMP_ROLE_INPUT] >= 0 || C->cd == AMP_DTYPE_F32) return 0;
    return be->ops->quantize(be, xo, wide, n, C->cd, amp_model_rounds(m, C->layer, AMP_ROUND_FWD), 0);
}

int amp_conv2d_scaled_forward(amp_model *m, const amp_conv2d *C, void *out, amp_array x, int rows) {
    amp_backend *be = m->be;
    amp_kit *k = m->kit;
    amp_round_count *fwd = amp_model_rounds(m, C->layer, AMP_ROUND_FWD);
    amp_conv2d_desc d = desc_of(C, rows), d1 = channels_first(C, rows);
    int np = (int)((size_t)rows * plane(C)), K = (int)reduction(C), co = C->d.c_out;
    CHECK(input(m, C, x, (size_t)rows * C->in_n));
    float *col = k->op_f32[0], *acc = k->scratch[AMP_SCRATCH_ACC];
    CHECK(AMP_SCALED(be, conv2d_im2col, col, C->x_op, &d));
    const float *xg = operand(m, C, AMP_ROLE_INPUT, 0, col, (size_t)K, (size_t)np, 1, 1);
    const float *wg = xg ? weight(m, C, 1, 0) : NULL;
    if (!wg) return -1;
    float beta = 0.0f;
    if (C->b >= 0) { /* acc = b . ones^T, the GEMM adds onto it */
        const float *ones = amp_kit_ones(m);
        if (!ones) return -1;
        amp_gemm_desc gb = amp_gemm_plain(acc, amp_kit_weight(m, C->b).p, ones, AMP_DTYPE_F32,
                                          AMP_GEMM_NN, co, np, 1);
        CHECK(AMP_CALL(be, gemm_ex, &gb));
        beta = 1.0f;
    }
    amp_gemm_desc g = amp_gemm_plain(acc, wg, xg, AMP_DTYPE_F32, AMP_GEMM_NN, co, np, K);
    g.beta = beta;
    CHECK(AMP_CALL(be, gemm_ex, &g));
    int wide = C->out_dt == AMP_DTYPE_F32;
    float *y = wide ? out : k->op_f32[0];
    CHECK(AMP_SCALED(be, conv2d_col2im, y, acc, &d1));
    return wide ? 0 : be->ops->round(be, out, C->out_dt, y, (size_t)rows * C->out_n, fwd);
}

int amp_conv2d_scaled_backward(amp_model *m, const amp_conv2d *C, float *dx, const float *dy,
                               int rows, int accumulate) {
    amp_backend *be = m->be;
    amp_kit *k = m->kit;
    amp_round_count *gc = amp_model_rounds(m, C->layer, AMP_ROUND_GRAD);
    amp_conv2d_desc d = desc_of(C, rows), d1 = channels_first(C, rows);
    size_t np = (size_t)rows * plane(C), K = reduction(C), co = (size_t)C->d.c_out;
    float *dyt = k->scratch[AMP_SCRATCH_ACC], *col = k->scratch[AMP_SCRATCH_COL];
    CHECK(AMP_SCALED(be, conv2d_im2col, dyt, dy, &d1));
    /* dW: dY and the input again (same scale, counted in the forward) in
     * blocks along N*P; dY's counts are taken here, not again for dX */
    const float *dyg = operand(m, C, AMP_ROLE_GRAD_OUTPUT, 0, dyt, co, np, 0, 1);
    if (!dyg) return -1;
    CHECK(AMP_SCALED(be, conv2d_im2col, col, C->x_op, &d));
    const float *xg = operand(m, C, AMP_ROLE_INPUT, 1, col, K, np, 0, 0);
    if (!xg) return -1;
    float *grad = amp_kit_grad(m, C->w), *gdst = accumulate ? k->scratch[AMP_SCRATCH_DW] : grad;
    amp_gemm_desc gw = amp_gemm_plain(gdst, dyg, xg, AMP_DTYPE_F32, AMP_GEMM_NT, (int)co, (int)K,
                                      (int)np);
    CHECK(AMP_CALL(be, gemm_ex, &gw));
    if (C->cd != AMP_DTYPE_F32 || accumulate)
        CHECK(be->ops->quantize(be, grad, gdst, C->wn, C->cd, gc, accumulate));
    if (C->b >= 0) { /* db = dY's own values summed over N*P */
        const float *ones = amp_kit_ones(m);
        if (!ones) return -1;
        float *db = k->scratch[AMP_SCRATCH_DB];
        amp_gemm_desc gb = amp_gemm_plain(db, dyt, ones, AMP_DTYPE_F32, AMP_GEMM_NN, (int)co, 1,
                                          (int)np);
        CHECK(AMP_CALL(be, gemm_ex, &gb));
        CHECK(be->ops->quantize(be, amp_kit_grad(m, C->b), db, co, C->cd, gc, accumulate));
    }
    if (!dx) return 0;
    /* dX: dY in blocks along c_out (blocked; per tensor the dW operand serves) */
    if (amp_format_scaled_blocked(m, C->fp8[AMP_ROLE_GRAD_OUTPUT])) dyg = operand(m, C, AMP_ROLE_GRAD_OUTPUT, 0, dyt, co, np, 1, 0);
    const float *wg = dyg ? weight(m, C, 1, 1) : NULL;
    if (!wg) return -1;
    amp_gemm_desc g = amp_gemm_plain(col, wg, dyg, AMP_DTYPE_F32, AMP_GEMM_TN, (int)K, (int)np,
                                     (int)co);
    CHECK(AMP_CALL(be, gemm_ex, &g));
    return AMP_SCALED(be, conv2d_col2im, dx, col, &d);
}
