/* Linear (nn.Linear): one descriptor GEMM in the layer's GEMM dtype with
 * FP32 accumulation and the bias/activation/rounding epilogue, on the
 * working copy of its weights. Gradients: dW and db rounded to the
 * weight's dtype before they reach FP32 (the gradient of a 16-bit weight
 * is 16-bit), dX in FP32 for the caller to round where its input is
 * stored. */
#include <math.h>
#include <stdio.h>

#include "kit_state.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

int amp_linear_init(amp_model *m, amp_linear *L, const char *name, const char *weight, int rows,
                    amp_act act, amp_array x) {
    char p[AMP_MODEL_NAME_MAX + 16];
    L->layer = amp_kit_layer(m, name);
    snprintf(p, sizeof p, "%s.weight", name);
    L->w = amp_kit_tensor(m, weight ? weight : p);
    snprintf(p, sizeof p, "%s.bias", name);
    L->b = weight ? -1 : amp_kit_tensor(m, p);
    if (L->layer < 0 || L->w < 0) {
        snprintf(m->be->err, sizeof m->be->err, "model '%s': no layer or weight for Linear '%s'",
                 m->ops->name, name);
        return -1;
    }
    const amp_param_desc *W = &m->desc.params[L->w];
    const amp_layer_precision *pr = &m->prec[L->layer];
    L->out = (int)W->shape[0];
    L->in = (int)W->shape[1];
    L->rows = rows;
    L->act = act;
    L->gemm = pr->compute[AMP_OP_GEMM];
    L->out_dt = pr->activation;
    L->param = m->prec[W->layer].param; /* a tied weight: its own layer's */
    L->scaled = 0;
    for (int r = 0; r < AMP_ROLE_COUNT; r++) {
        L->fp8[r] = amp_format_scaled_slot(m, L->layer, r, "Linear");
        if (L->fp8[r] == -2) return -1;
        L->scaled |= L->fp8[r] >= 0;
    }
    L->keeps = L->scaled && amp_format_scaled_keeps(m, L->fp8[AMP_ROLE_INPUT]);
    L->keep = (amp_format_keep){NULL, &L->keep_scale};
    /* scaled: FP32 GEMMs on the dequantized operands (FP8_SPEC) */
    L->feed = L->scaled ? AMP_DTYPE_F32 : amp_format_feed(m, L->gemm);
    /* a scaled dY is widened into its operand slot on the way to its codes
     * (exactly): no FP32 copy to keep beside it */
    L->want_f32 = L->out_dt != AMP_DTYPE_F32 &&
                  ((L->feed == AMP_DTYPE_F32 && !L->scaled) || L->b >= 0);
    int f32_store = L->feed == AMP_DTYPE_F32;
    if (L->fp8[AMP_ROLE_WEIGHT] >= 0)
        amp_kit_add_fp8_copy(m, L->w, L->fp8[AMP_ROLE_WEIGHT], W->layer);
    else
        amp_kit_add_copy(m, L->w, L->param, f32_store, W->layer);
    /* the bias keeps its param-dtype copy (the epilogue widens it) */
    amp_kit_add_copy(m, L->b, L->param, f32_store && !L->scaled, W->layer);
    double bound = 1.0 / sqrt((double)L->in);
    if (!weight) amp_kit_init_rule(m, L->w, AMP_INIT_UNIFORM, bound); /* a tied one's owner inits it */
    amp_kit_init_rule(m, L->b, AMP_INIT_UNIFORM, bound);
    /* the scratch its calls may need */
    size_t R = (size_t)rows, xn = R * L->in, yn = R * L->out, wn = (size_t)L->in * L->out;
    amp_array w = amp_kit_weight(m, L->w); /* its dtypes (the pointer comes at layout) */
    if (L->scaled) { /* every operand passes through the slots (FP32) */
        /* slot 0: x then the FP32 results (forward), dY then x (dW), dY
         * (dX), or a family GEMM's codes and widened x (amp_format_fp8_gemm);
         * slot 1: W */
        amp_kit_need_slot(m, 0, AMP_DTYPE_F32, amp_format_after(xn) + yn);
        amp_kit_need_slot(m, 0, AMP_DTYPE_F32, amp_format_after(yn) + xn);
        amp_kit_need_slot(m, 0, AMP_DTYPE_F32, amp_format_codes_room(xn) + xn);
        amp_kit_need_slot(m, 1, AMP_DTYPE_F32, wn);
    }
    /* slot 0: x (forward), dY; slot 1: W, and x where dY took slot 0 */
    int x_conv = amp_format_converts(L->feed, L->gemm, x.store, x.vals);
    int dy_conv = amp_format_dy_converts(L->feed, L->gemm, L->out_dt);
    if (x_conv) amp_kit_need_slot(m, 0, L->feed, xn);
    if (dy_conv) amp_kit_need_slot(m, 0, L->feed, yn);
    if (x_conv && dy_conv) amp_kit_need_slot(m, 1, L->feed, xn);
    if (amp_format_converts(L->feed, L->gemm, w.store, w.vals))
        amp_kit_need_slot(m, 1, L->feed, wn);
    amp_kit_need(m, AMP_SCRATCH_DW, wn);
    if (L->b >= 0) amp_kit_need(m, AMP_SCRATCH_DB, (size_t)L->out);
    /* FP32 dY (dy32_of): act_backward composes its ops through it where the
     * backend has no act_backward_round (a model may call it with
     * AMP_ACT_NONE too); db widens a dY that came without it */
    int dy32 = L->want_f32 || !amp_backend_supports(m->be, "act_backward_round");
    if (!L->scaled) { /* the FP32 results, and the FP32 dY, past x in slot 0 */
        amp_kit_need_slot(m, 0, AMP_DTYPE_F32, x_conv ? amp_format_after(xn) + yn : yn);
        if (dy32) amp_kit_need_slot(m, 0, AMP_DTYPE_F32, amp_format_after(xn) + yn);
    }
    if ((L->scaled && dy32) || (L->b >= 0 && L->out_dt != AMP_DTYPE_F32))
        amp_kit_need(m, AMP_SCRATCH_DY32, yn);
    return 0;
}

int amp_linear_keep(amp_model *m, amp_linear *L) {
    size_t n = L->keeps ? (size_t)L->rows * (size_t)L->in : 0; /* 1 byte per value */
    L->keep = (amp_format_keep){n ? amp_arena_take(&m->mem[AMP_MEM_ACTIVATIONS], n) : NULL,
                                &L->keep_scale};
    return n != 0;
}

/* Where L's FP32 dY goes between act_backward and its GEMMs: past x in
 * slot 0 (backward_weights converts x at its start), or a scaled Linear's
 * own array (its dW packs dY and x into slot 0). */
static float *dy32_of(amp_model *m, const amp_linear *L, int rows) {
    amp_kit *k = m->kit;
    if (L->scaled) return k->scratch[AMP_SCRATCH_DY32];
    return k->op_f32[0] + amp_format_after((size_t)rows * L->in);
}

void amp_linear_bare_dy(amp_model *m, const amp_linear *L, amp_array x) {
    if (L->scaled || !amp_format_converts(L->feed, L->gemm, L->out_dt, L->out_dt)) return;
    /* backward_weights converts x past dY in slot 0 */
    size_t R = (size_t)L->rows, yn = R * L->out;
    int x_conv = amp_format_converts(L->feed, L->gemm, x.store, x.vals);
    amp_kit_need_slot(m, 0, L->feed, x_conv ? amp_format_after(yn) + R * L->in : yn);
}

static const void *operand(amp_model *m, const amp_linear *L, int slot, const amp_array *v,
                           size_t n) {
    return amp_format_operand(m, L->feed, L->gemm, slot, v, n);
}

/* Role `role`'s operand v [rows, cols] of a scaled Linear, FP32 in scratch
 * `slot`: quantize-dequantized when the role is scaled (blocked: along
 * rows, or down columns with along_cols; count: add its stats), else v's
 * values in the GEMM dtype. */
static const float *scaled_operand_at(amp_model *m, const amp_linear *L, int role, int slot,
                                      size_t at, const amp_array *v, int rows, int cols,
                                      int along_cols, int count) {
    if (L->fp8[role] < 0)
        return amp_format_operand_at(m, L->feed, L->gemm, slot, at, v, (size_t)rows * cols, NULL);
    return amp_format_scaled_operand_at(m, L->fp8[role], slot, at, v, rows, cols, along_cols,
                                        count);
}

static const float *scaled_operand(amp_model *m, const amp_linear *L, int role, int slot,
                                   const amp_array *v, int rows, int cols, int along_cols,
                                   int count) {
    return scaled_operand_at(m, L, role, slot, 0, v, rows, cols, along_cols, count);
}

/* Blocked along a GEMM's reduction dimension (the slot's family says):
 * the operand is quantized again for each GEMM that reduces along another
 * one. */
static int role_is_blocked(const amp_model *m, const amp_linear *L, int role) {
    return amp_format_scaled_blocked(m, L->fp8[role]);
}

/* The weight of a scaled Linear, FP32 in scratch `slot` (blocked along_cols:
 * in blocks down its columns, for dX). */
static const float *scaled_weight(amp_model *m, const amp_linear *L, int slot, int along_cols) {
    if (L->fp8[AMP_ROLE_WEIGHT] >= 0) return amp_format_scaled_weight(m, L->w, slot, along_cols);
    amp_array w = amp_kit_weight(m, L->w);
    return operand(m, L, slot, &w, (size_t)L->in * L->out);
}

/* The descriptor of the forward GEMM y[rows, out] = x[rows, in] . W[out, in]^T
 * with its epilogue, on operands xg and wg. */
static amp_gemm_desc forward_gemm(amp_model *m, const amp_linear *L, void *out, void *act_out,
                                  const void *xg, const void *wg, int rows) {
    amp_array w = amp_kit_weight(m, L->w);
    /* in slot 0, past x where x is there (amp_linear_init planned it) */
    amp_kit *k = m->kit;
    int x_there = L->scaled || (xg && (xg == k->op_f32[0] || xg == k->op_16[0]));
    float *acc = k->op_f32[0] + (x_there ? amp_format_after((size_t)rows * L->in) : 0);
    amp_gemm_desc g = amp_gemm_plain(acc, xg, wg, L->feed, AMP_GEMM_NT, rows, L->out, L->in);
    g.bias = L->b >= 0 ? amp_kit_weight(m, L->b).p : NULL;
    g.bias_dtype = L->b >= 0 ? amp_kit_weight(m, L->b).store : w.store;
    g.act = L->act;
    g.out = out;
    g.act_out = act_out;
    g.out_dtype = L->out_dt;
    g.cnt = amp_model_rounds(m, L->layer, AMP_ROUND_FWD);
    return g;
}

/* Where L's forward keeps its input's codes, NULL: nowhere. */
static const amp_format_keep *kept(const amp_linear *L) {
    return L->keep.codes ? &L->keep : NULL;
}

int amp_linear_forward(amp_model *m, const amp_linear *L, void *out, void *act_out, amp_array x,
                       int rows) {
    amp_array w = amp_kit_weight(m, L->w);
    const void *xg, *wg;
    if (L->scaled) { /* the backend's FP8 GEMM on the codes, where it has one */
        amp_gemm_desc g = forward_gemm(m, L, out, act_out, NULL, NULL, rows);
        int rc = amp_format_fp8_gemm(m, L->fp8[AMP_ROLE_INPUT], L->w, &x, &g, kept(L));
        if (rc != 0) return rc < 0 ? -1 : 0;
    }
    if (L->scaled) {
        /* blocked: x and W in blocks along in, the reduction dimension */
        xg = L->keep.codes ? amp_format_scaled_input(m, L->fp8[AMP_ROLE_INPUT], 0, &x, rows, L->in,
                                                     kept(L))
                           : scaled_operand(m, L, AMP_ROLE_INPUT, 0, &x, rows, L->in, 0, 1);
        wg = xg ? scaled_weight(m, L, 1, 0) : NULL;
    } else {
        xg = operand(m, L, 0, &x, (size_t)rows * L->in);
        wg = operand(m, L, 1, &w, (size_t)L->in * L->out);
    }
    if (!xg || !wg) return -1;
    amp_gemm_desc g = forward_gemm(m, L, out, act_out, xg, wg, rows);
    return AMP_CALL(m->be, gemm_ex, &g);
}

int amp_linear_grad_in(amp_model *m, const amp_linear *L, amp_array *dy, void *dst, float *dst32,
                       const float *src, size_t n) {
    amp_backend *be = m->be;
    amp_round_count *cnt = amp_model_rounds(m, L->layer, AMP_ROUND_GRAD);
    if (L->feed == AMP_DTYPE_F32 && L->out_dt != AMP_DTYPE_F32) {
        CHECK(be->ops->quantize(be, dst32, src, n, L->out_dt, cnt, 0));
        *dy = (amp_array){dst32, AMP_DTYPE_F32, L->out_dt, NULL};
        return 0;
    }
    CHECK(be->ops->round(be, dst, L->out_dt, src, n, cnt));
    *dy = amp_array_of(dst, L->out_dt);
    return 0;
}

int amp_linear_act_backward(amp_model *m, const amp_linear *L, amp_array *dy, void *z, float *da,
                            int rows) {
    amp_backend *be = m->be;
    const amp_backend_ops *op = be->ops;
    amp_round_count *cnt = amp_model_rounds(m, L->layer, AMP_ROUND_GRAD);
    amp_dtype ad = L->out_dt;
    size_t n = (size_t)rows * L->out;
    float *f32 = L->want_f32 ? dy32_of(m, L, rows) : NULL;
    *dy = (amp_array){z, ad, ad, f32};
    if (amp_backend_supports(be, "act_backward_round"))
        return AMP_FUSED(be, act_backward_round,
                         &(amp_act_round_args){z, f32, da, z, ad, n, L->act, cnt, 0});
    /* the same math as separate ops */
    float *zw = dy32_of(m, L, rows);
    CHECK(op->quantize(be, da, da, n, ad, cnt, 0));
    CHECK(op->widen(be, zw, z, ad, n));
    CHECK(op->act_backward(be, da, da, zw, n, L->act));
    CHECK(op->round(be, z, ad, da, n, cnt));
    return f32 ? op->widen(be, f32, z, ad, n) : 0;
}

int amp_linear_backward_weights(amp_model *m, const amp_linear *L, amp_array *dy, amp_array x,
                                int rows, int accumulate) {
    amp_backend *be = m->be;
    amp_kit *k = m->kit;
    amp_round_count *cnt = amp_model_rounds(m, L->layer, AMP_ROUND_GRAD);
    size_t yn = (size_t)rows * L->out, wn = (size_t)L->in * L->out;
    const void *dyg, *xg;
    amp_array dy_in = *dy;
    if (L->scaled) {
        /* qX: the forward's codes and scale where it kept them (the same
         * values), else again from the saved x: same scale, counted in the forward.
         * blocked: dY and x in blocks along rows, dW's reduction dimension
         * (dY's counts are taken here, not again for dX) */
        dyg = scaled_operand(m, L, AMP_ROLE_GRAD_OUTPUT, 0, dy, rows, L->out, 1, 1);
        size_t at = amp_format_after(yn);
        if (!dyg)
            xg = NULL;
        else if (L->keep.codes)
            xg = amp_format_scaled_kept(m, L->fp8[AMP_ROLE_INPUT], 0, at, &L->keep,
                                        (size_t)rows * L->in);
        else
            xg = scaled_operand_at(m, L, AMP_ROLE_INPUT, 0, at, &x, rows, L->in, 1, 0);
    } else {
        dyg = operand(m, L, 0, dy, yn);
        /* x takes slot 0, past dY where dY took it (amp_linear_bare_dy
         * planned that), else slot 1 (amp_linear_init) */
        int conv = dyg && (dyg == k->op_f32[0] || dyg == k->op_16[0]);
        size_t at = conv ? amp_format_after(yn) : 0, xn = (size_t)rows * L->in;
        int xs = conv && at + xn > (L->feed == AMP_DTYPE_F32 ? k->cap32[0] : k->cap16[0]);
        xg = dyg ? amp_format_operand_at(m, L->feed, L->gemm, xs, xs ? 0 : at, &x, xn, NULL)
                 : NULL;
    }
    if (!dyg || !xg) return -1;
    /* dW[out, in] = dY[rows, out]^T . X[rows, in]; the first micro-batch's
     * lands in the gradients directly (rounded there in place) */
    float *grad = amp_kit_grad(m, L->w), *dy32 = k->scratch[AMP_SCRATCH_DY32];
    float *db = k->scratch[AMP_SCRATCH_DB], *gdst = accumulate ? k->scratch[AMP_SCRATCH_DW] : grad;
    amp_gemm_desc gw = amp_gemm_plain(gdst, dyg, xg, L->feed, AMP_GEMM_TN, L->out, L->in, rows);
    CHECK(AMP_CALL(be, gemm_ex, &gw));
    if (L->param != AMP_DTYPE_F32 || accumulate)
        CHECK(be->ops->quantize(be, grad, gdst, wn, L->param, cnt, accumulate));
    if (L->b >= 0) { /* db from dY's own values, summed in FP32 */
        const float *dyf = dy->f32 ? dy->f32 : dy->store == AMP_DTYPE_F32 ? dy->p : NULL;
        if (!dyf) {
            CHECK(be->ops->widen(be, dy32, dy->p, dy->store, yn));
            dyf = dy32;
        }
        CHECK(be->ops->col_sum(be, db, dyf, rows, L->out));
        CHECK(be->ops->quantize(be, amp_kit_grad(m, L->b), db, (size_t)L->out, L->param, cnt,
                                accumulate));
    }
    if (role_is_blocked(m, L, AMP_ROLE_GRAD_OUTPUT)) { /* dX blocks dY the other way */
        *dy = dy_in;
        return 0;
    }
    *dy = amp_array_of(dyg, L->feed); /* what backward_data's GEMM reads */
    dy->vals = L->scaled ? AMP_DTYPE_F32 : L->gemm; /* scaled: deq(qdY), already in scratch 0 */
    return 0;
}

int amp_linear_backward_data(amp_model *m, const amp_linear *L, float *dx, const amp_array *dy,
                             int rows) {
    amp_array w = amp_kit_weight(m, L->w);
    const void *dyg, *wg;
    if (L->scaled) {
        /* per tensor: backward_weights left deq(qdY) in scratch 0. blocked: dY
         * and W in blocks along out, dX's reduction dimension (dY counted
         * by backward_weights) */
        int blocked = role_is_blocked(m, L, AMP_ROLE_GRAD_OUTPUT);
        dyg = dy->p == m->kit->op_f32[0] && !blocked
                  ? dy->p
                  : scaled_operand(m, L, AMP_ROLE_GRAD_OUTPUT, 0, dy, rows, L->out, 0, !blocked);
        wg = dyg ? scaled_weight(m, L, 1, 1) : NULL;
    } else {
        dyg = operand(m, L, 0, dy, (size_t)rows * L->out);
        wg = operand(m, L, 1, &w, (size_t)L->in * L->out);
    }
    if (!dyg || !wg) return -1;
    /* dX[rows, in] = dY[rows, out] . W[out, in] */
    amp_gemm_desc g = amp_gemm_plain(dx, dyg, wg, L->feed, AMP_GEMM_NN, rows, L->in, L->out);
    return AMP_CALL(m->be, gemm_ex, &g);
}

int amp_linear_backward_all(amp_model *m, const amp_linear *L, amp_array *dy, amp_array x, float *dx,
                            int rows) {
    CHECK(amp_linear_backward_weights(m, L, dy, x, rows, 1));
    CHECK(amp_linear_backward_data(m, L, dx, dy, rows));
    CHECK(amp_model_grads_ready(m, L->w, 1));
    return L->b >= 0 ? amp_model_grads_ready(m, L->b, 1) : 0;
}
