/* Conv2d (nn.Conv2d): the input rounded to the conv's compute dtype once
 * (counted, as autocast's cast) and kept for the weight gradient; the
 * weights' working copy in that dtype straight from the FP32 masters (so
 * `op.conv = f32` keeps a conv wide), its bias as FP32 values of it (the
 * backend adds an FP32 bias); FP32 accumulation, the output rounded once
 * into the layer's activation dtype. The gradients of 16-bit weights are
 * 16-bit before they reach FP32. */
#include <math.h>
#include <stdio.h>

#include "image.h"
#include "kit_state.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

int amp_conv2d_init(amp_model *m, amp_conv2d *C, const char *name, amp_dtype x_dt, int rows,
                    int c, int h, int w, int k, int stride, int pad) {
    C->layer = amp_kit_layer(m, name);
    C->w = amp_kit_member(m, name, "weight");
    C->b = amp_kit_member(m, name, "bias");
    if (C->layer < 0 || C->w < 0) {
        snprintf(m->be->err, sizeof m->be->err, "model '%s': no layer or weight for Conv2d '%s'",
                 m->ops->name, name);
        return -1;
    }
    C->scaled = 0;
    for (int r = 0; r < AMP_ROLE_COUNT; r++) {
        C->fp8[r] = amp_format_scaled_slot(m, C->layer, r, "Conv2d");
        if (C->fp8[r] == -2) return -1;
        C->scaled |= C->fp8[r] >= 0;
    }
    const amp_layer_precision *pr = &m->prec[C->layer];
    int out = (int)m->desc.params[C->w].shape[0];
    C->cd = pr->compute[AMP_OP_CONV];
    C->out_dt = pr->activation;
    C->x_dt = x_dt;
    C->d = (amp_conv2d_desc){rows, c, h, w, out, k, k, stride, stride, pad, pad, C->cd};
    C->in_n = (size_t)c * h * w;
    C->out_n = (size_t)out * amp_conv2d_out_h(&C->d) * amp_conv2d_out_w(&C->d);
    C->wn = (size_t)out * c * k * k;
    double bound = 1.0 / sqrt((double)c * k * k);
    amp_kit_init_rule(m, C->w, AMP_INIT_UNIFORM, bound);
    amp_kit_init_rule(m, C->b, AMP_INIT_UNIFORM, bound);
    if (C->scaled) {
        amp_conv2d_scaled_plan(m, C, rows);
        return amp_conv2d_desc_check(&C->d, m->be->err, sizeof m->be->err);
    }
    amp_kit_add_copy(m, C->w, C->cd, 0, C->layer);
    amp_kit_add_copy(m, C->b, C->cd, 1, C->layer);
    size_t ws = 0, R = (size_t)rows;
    CHECK(AMP_CONV(m->be, conv2d_workspace, &C->d, &ws));
    amp_kit_need(m, AMP_SCRATCH_CONV_WS, ws);
    amp_kit_need(m, AMP_SCRATCH_OPERAND, R * (C->in_n > C->out_n ? C->in_n : C->out_n));
    amp_kit_need(m, AMP_SCRATCH_ACC, R * C->out_n);
    amp_kit_need(m, AMP_SCRATCH_DW, C->wn);
    amp_kit_need(m, AMP_SCRATCH_DB, (size_t)out);
    return 0;
}

void amp_conv2d_layout(amp_model *m, amp_conv2d *C, void *x) {
    /* scaled: FP32 values, x's own (INPUT scaled) or rounded to cd */
    amp_dtype op = C->scaled ? AMP_DTYPE_F32 : C->cd;
    int own = C->x_dt != op || (C->scaled && C->fp8[AMP_ROLE_INPUT] < 0 && C->cd != AMP_DTYPE_F32);
    C->x_op = own ? amp_kit_take(m, AMP_MEM_ACTIVATIONS, (size_t)C->d.n * C->in_n, op) : x;
}

/* dst(dst_dt)[n] = src(src_dt)[n], through FP32 scratch when both are 16-bit
 * and differ; counts what rounding to dst_dt lost into cnt. */
static int convert(amp_model *m, void *dst, amp_dtype dst_dt, const void *src, amp_dtype src_dt,
                   size_t n, amp_round_count *cnt) {
    amp_backend *be = m->be;
    if (dst == src && dst_dt == src_dt) return 0;
    if (src_dt == AMP_DTYPE_F32) return be->ops->round(be, dst, dst_dt, src, n, cnt);
    if (dst_dt == AMP_DTYPE_F32) return be->ops->widen(be, dst, src, src_dt, n);
    float *tmp = m->kit->op_f32[0];
    CHECK(be->ops->widen(be, tmp, src, src_dt, n));
    return be->ops->round(be, dst, dst_dt, tmp, n, cnt);
}

int amp_conv2d_forward(amp_model *m, const amp_conv2d *C, void *out, amp_array x, int rows) {
    if (C->scaled) return amp_conv2d_scaled_forward(m, C, out, x, rows);
    amp_backend *be = m->be;
    amp_round_count *fwd = amp_model_rounds(m, C->layer, AMP_ROUND_FWD);
    size_t on = (size_t)rows * C->out_n;
    CHECK(convert(m, C->x_op, C->cd, x.p, x.store, (size_t)rows * C->in_n, fwd));
    const float *bias = C->b >= 0 ? amp_kit_weight(m, C->b).p : NULL;
    amp_conv2d_desc d = C->d;
    d.n = rows;
    int wide = C->out_dt == AMP_DTYPE_F32;
    if (!wide && amp_backend_supports(be, "conv2d_forward_round")) /* rounded as it is made */
        return AMP_CONV(be, conv2d_forward_round, &(amp_round_out){out, C->out_dt, fwd}, C->x_op,
                        amp_kit_weight(m, C->w).p, bias, &d, m->kit->conv_ws,
                        m->kit->need[AMP_SCRATCH_CONV_WS]);
    float *y = wide ? out : m->kit->scratch[AMP_SCRATCH_ACC];
    CHECK(AMP_CONV(be, conv2d_forward, y, C->x_op, amp_kit_weight(m, C->w).p, bias, &d,
                   m->kit->conv_ws, m->kit->need[AMP_SCRATCH_CONV_WS]));
    return wide ? 0 : be->ops->round(be, out, C->out_dt, y, on, fwd);
}

/* The backward on dy in the conv's dtype: dy is rounded into it here,
 * counted into dy_cnt (NULL: dy already holds out_dt values and the
 * rounding, exact when cd is out_dt, is not counted); dx (when wanted) is
 * then rounded to dx_dt (F32: left as it is), counted into dx_cnt. */
static int backward(amp_model *m, const amp_conv2d *C, float *dx, const float *dy, int rows,
                    int accumulate, amp_round_count *dy_cnt, amp_dtype dx_dt,
                    amp_round_count *dx_cnt) {
    amp_backend *be = m->be;
    size_t xn = (size_t)rows * C->in_n;
    if (C->scaled) {
        CHECK(amp_conv2d_scaled_backward(m, C, dx, dy, rows, accumulate));
        return dx ? be->ops->quantize(be, dx, dx, xn, dx_dt, dx_cnt, 0) : 0;
    }
    amp_kit *k = m->kit;
    amp_round_count *gc = amp_model_rounds(m, C->layer, AMP_ROUND_GRAD);
    size_t ws = k->need[AMP_SCRATCH_CONV_WS];
    amp_conv2d_desc d = C->d;
    d.n = rows;
    float *db = C->b >= 0 ? k->scratch[AMP_SCRATCH_DB] : NULL;
    if (C->cd != AMP_DTYPE_F32 && amp_backend_supports(be, "conv2d_backward_round")) {
        /* dy rounded to cd as the ops read it (no 16-bit copy of it), dx
         * rounded to dx_dt as it is made */
        amp_conv2d_grads gr = {k->scratch[AMP_SCRATCH_DW], db, dx, dy_cnt, dx_dt, dx_cnt};
        CHECK(AMP_CONV(be, conv2d_backward_round, &gr, C->x_op, dy, amp_kit_weight(m, C->w).p, &d,
                       k->conv_ws, ws));
    } else {
        const void *dyc = dy;
        if (C->cd != AMP_DTYPE_F32) {
            CHECK(be->ops->round(be, k->op_16[0], C->cd, dy, (size_t)rows * C->out_n, dy_cnt));
            dyc = k->op_16[0];
        }
        CHECK(AMP_CONV(be, conv2d_backward_filter, k->scratch[AMP_SCRATCH_DW], db, C->x_op, dyc,
                       &d, k->conv_ws, ws));
        if (dx)
            CHECK(AMP_CONV(be, conv2d_backward_data, dx, dyc, amp_kit_weight(m, C->w).p, &d,
                           k->conv_ws, ws));
        if (dx) CHECK(be->ops->quantize(be, dx, dx, xn, dx_dt, dx_cnt, 0));
    }
    CHECK(be->ops->quantize(be, amp_kit_grad(m, C->w), k->scratch[AMP_SCRATCH_DW], C->wn, C->cd, gc, accumulate));
    if (db)
        CHECK(be->ops->quantize(be, amp_kit_grad(m, C->b), db, (size_t)d.c_out, C->cd, gc,
                                accumulate));
    return 0;
}

int amp_conv2d_backward(amp_model *m, const amp_conv2d *C, float *dx, const float *dy, int rows,
                        int accumulate) {
    return backward(m, C, dx, dy, rows, accumulate, NULL, AMP_DTYPE_F32, NULL);
}

int amp_conv2d_backward_round(amp_model *m, const amp_conv2d *C, float *dx, float *dy, int rows,
                              int accumulate, amp_dtype dx_dt, int dx_layer) {
    amp_round_count *dx_cnt = dx_layer >= 0 ? amp_model_rounds(m, dx_layer, AMP_ROUND_GRAD) : NULL;
    /* Where the conv's dtype is its output's, rounding dy to out_dt (counted)
     * and then into the 16-bit operand is one rounding: do it once, straight
     * into the operand, with the same bits and counts and a pass over dy
     * fewer. */
    if (!C->scaled && C->cd != AMP_DTYPE_F32 && C->cd == C->out_dt)
        return backward(m, C, dx, dy, rows, accumulate,
                        amp_model_rounds(m, C->layer, AMP_ROUND_GRAD), dx_dt, dx_cnt);
    CHECK(amp_kit_grad_round(m, dy, C->out_dt, C->layer, (size_t)rows * C->out_n));
    return backward(m, C, dx, dy, rows, accumulate, NULL, dx_dt, dx_cnt);
}
