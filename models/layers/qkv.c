/* Llama's attention input: q/k/v Linears (every policy, telemetry slot and
 * precision.layer glob applies to each) packed by the backend's qkv_pack
 * into the fused qkv the attention op reads, with RoPE and grouped-query
 * heads; the backward undoes both (qkv_unpack) and sums the three input
 * gradients. */
#include <stdio.h>

#include "kit_state.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

int amp_qkv_init(amp_model *m, amp_qkv *a, const char *q, const char *k, const char *v,
                 const char *attn, int rows, int T, int nh, int nkv, int rope, float theta,
                 amp_array x) {
    CHECK(amp_linear_init(m, &a->q, q, NULL, rows, AMP_ACT_NONE, x));
    CHECK(amp_linear_init(m, &a->k, k, NULL, rows, AMP_ACT_NONE, x));
    CHECK(amp_linear_init(m, &a->v, v, NULL, rows, AMP_ACT_NONE, x));
    a->layer = amp_kit_layer(m, attn);
    if (a->layer < 0 || nkv <= 0 || nh % nkv != 0 || a->q.out % nh != 0 ||
        a->k.out * nh != a->q.out * nkv || a->v.out != a->k.out || (rope && (a->q.out / nh) % 2)) {
        snprintf(m->be->err, sizeof m->be->err, "model '%s': attention '%s' with %d heads, %d "
                 "key/value heads, q/k/v widths %d/%d/%d", m->ops->name, attn, nh, nkv, a->q.out,
                 a->k.out, a->v.out);
        return -1;
    }
    a->dt = m->prec[a->layer].compute[AMP_OP_ATTENTION];
    a->rows = rows;
    a->T = T;
    a->nh = nh;
    a->nkv = nkv;
    a->hs = a->q.out / nh;
    a->rope = rope;
    a->theta = theta;
    return 0;
}

void amp_qkv_layout(amp_model *m, amp_qkv *a) {
    size_t R = (size_t)a->rows, C = (size_t)a->q.out, Ckv = (size_t)a->k.out;
    amp_mem_category W = AMP_MEM_WORKSPACE;
    a->qkv = amp_kit_take(m, AMP_MEM_ACTIVATIONS, R * 3 * C, a->dt);
    a->qo = amp_kit_take(m, W, R * C, a->q.out_dt);
    a->ko = amp_kit_take(m, W, R * Ckv, a->k.out_dt);
    a->vo = amp_kit_take(m, W, R * Ckv, a->v.out_dt);
    a->dq = amp_kit_take(m, W, R * C, AMP_DTYPE_F32);
    a->dk = amp_kit_take(m, W, R * Ckv, AMP_DTYPE_F32);
    a->dv = amp_kit_take(m, W, R * Ckv, AMP_DTYPE_F32);
    a->dy = amp_kit_take(m, W, R * C, AMP_DTYPE_F32);
    a->dx2 = amp_kit_take(m, W, R * (size_t)a->q.in, AMP_DTYPE_F32);
}

static amp_qkv_args args(const amp_qkv *a, int rows) {
    amp_qkv_args r = {a->qkv, a->dt, a->qo, a->ko, a->vo, a->q.out_dt, a->k.out_dt, a->v.out_dt,
                      a->dq, a->dk, a->dv, rows, a->T, a->nh, a->nkv, a->hs, a->rope, a->theta,
                      NULL};
    return r;
}

int amp_qkv_forward(amp_model *m, const amp_qkv *a, amp_array x, int rows) {
    int n = rows * a->T;
    CHECK(amp_linear_forward(m, &a->q, a->qo, NULL, x, n));
    CHECK(amp_linear_forward(m, &a->k, a->ko, NULL, x, n));
    CHECK(amp_linear_forward(m, &a->v, a->vo, NULL, x, n));
    amp_qkv_args p = args(a, rows);
    p.cnt = amp_model_rounds(m, a->layer, AMP_ROUND_FWD);
    return AMP_TRANSFORMER(m->be, qkv_pack, &p);
}

/* One projection's backward from its FP32 output gradient g (rounded as
 * the Linear stores it). */
static int proj_back(amp_model *m, const amp_qkv *a, const amp_linear *L, float *g, amp_array x,
                     float *dx, int n) {
    amp_array dy;
    CHECK(amp_linear_grad_in(m, L, &dy, a->dy, g, g, (size_t)n * L->out));
    return amp_linear_backward_all(m, L, &dy, x, dx, n);
}

int amp_qkv_backward(amp_model *m, const amp_qkv *a, const amp_array *dqkv, float *dx, amp_array x,
                     int rows) {
    int n = rows * a->T;
    if (dqkv->store != a->dt) {
        snprintf(m->be->err, sizeof m->be->err, "qkv backward: dqkv in dtype %d, not %d",
                 (int)dqkv->store, (int)a->dt);
        return -1;
    }
    amp_qkv_args p = args(a, rows);
    p.qkv = (void *)dqkv->p;
    CHECK(AMP_TRANSFORMER(m->be, qkv_unpack, &p));
    CHECK(proj_back(m, a, &a->v, a->dv, x, dx, n));
    CHECK(proj_back(m, a, &a->k, a->dk, x, a->dx2, n));
    CHECK(amp_kit_residual(m, dx, dx, amp_array_of(a->dx2, AMP_DTYPE_F32), (size_t)n * a->q.in));
    CHECK(proj_back(m, a, &a->q, a->dq, x, a->dx2, n));
    return amp_kit_residual(m, dx, dx, amp_array_of(a->dx2, AMP_DTYPE_F32), (size_t)n * a->q.in);
}
