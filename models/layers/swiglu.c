/* Llama's MLP: down(silu(gate(x)) * up(x)), three Linears (every precision
 * policy and every telemetry slot applies to each) around the backend's
 * swiglu op. The middle's roundings count into the gate's layer. */
#include <stdio.h>

#include "kit_state.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

int amp_swiglu_init(amp_model *m, amp_swiglu *s, const char *gate, const char *up,
                    const char *down, int rows, amp_array x) {
    CHECK(amp_linear_init(m, &s->gate, gate, NULL, rows, AMP_ACT_NONE, x));
    CHECK(amp_linear_init(m, &s->up, up, NULL, rows, AMP_ACT_NONE, x));
    s->h_dt = s->gate.out_dt;
    CHECK(amp_linear_init(m, &s->down, down, NULL, rows, AMP_ACT_NONE, amp_array_of(NULL, s->h_dt)));
    if (s->up.out != s->gate.out || s->down.in != s->gate.out) {
        snprintf(m->be->err, sizeof m->be->err, "model '%s': SwiGLU '%s' has widths %d/%d/%d",
                 m->ops->name, gate, s->gate.out, s->up.out, s->down.in);
        return -1;
    }
    s->rows = rows;
    return 0;
}

void amp_swiglu_layout(amp_model *m, amp_swiglu *s) {
    size_t n = (size_t)s->rows * s->gate.out;
    s->g = amp_kit_take(m, AMP_MEM_ACTIVATIONS, n, s->gate.out_dt);
    s->u = amp_kit_take(m, AMP_MEM_ACTIVATIONS, n, s->up.out_dt);
    s->h = amp_kit_take(m, AMP_MEM_ACTIVATIONS, n, s->h_dt);
    s->dh = amp_kit_take(m, AMP_MEM_WORKSPACE, n, AMP_DTYPE_F32);
    s->dgate = amp_kit_take(m, AMP_MEM_WORKSPACE, n, AMP_DTYPE_F32);
    s->dy = amp_kit_take(m, AMP_MEM_WORKSPACE, n, AMP_DTYPE_F32);
    s->dx_up = amp_kit_take(m, AMP_MEM_WORKSPACE, (size_t)s->rows * s->gate.in, AMP_DTYPE_F32);
}

int amp_swiglu_forward(amp_model *m, const amp_swiglu *s, void *out, amp_array x, int rows) {
    CHECK(amp_linear_forward(m, &s->gate, s->g, NULL, x, rows));
    CHECK(amp_linear_forward(m, &s->up, s->u, NULL, x, rows));
    amp_swiglu_args a = {s->h, s->h_dt, NULL, NULL, NULL, s->g, s->u, s->gate.out_dt,
                         s->up.out_dt, (size_t)rows * s->gate.out,
                         amp_model_rounds(m, s->gate.layer, AMP_ROUND_FWD)};
    CHECK(AMP_TRANSFORMER(m->be, swiglu_forward, &a));
    return amp_linear_forward(m, &s->down, out, NULL, amp_array_of(s->h, s->h_dt), rows);
}

int amp_swiglu_backward(amp_model *m, const amp_swiglu *s, float *dx, float *dout, void *dout_16,
                        amp_array x, int rows) {
    amp_backend *be = m->be;
    size_t n = (size_t)rows * s->gate.out, nc = (size_t)rows * s->gate.in;
    amp_array dy;
    CHECK(amp_linear_grad_in(m, &s->down, &dy, dout_16, dout_16, dout, (size_t)rows * s->down.out));
    CHECK(amp_linear_backward_all(m, &s->down, &dy, amp_array_of(s->h, s->h_dt), s->dh, rows));
    /* dh as h is stored, then the op: dup over dh, dgate beside it */
    amp_round_count *cnt = amp_model_rounds(m, s->gate.layer, AMP_ROUND_GRAD);
    CHECK(be->ops->quantize(be, s->dh, s->dh, n, s->h_dt, cnt, 0));
    amp_swiglu_args a = {NULL, s->h_dt, s->dgate, s->dh, s->dh, s->g, s->u, s->gate.out_dt,
                         s->up.out_dt, n, cnt};
    CHECK(AMP_TRANSFORMER(be, swiglu_backward, &a));
    CHECK(amp_linear_grad_in(m, &s->up, &dy, s->dy, s->dh, s->dh, n));
    CHECK(amp_linear_backward_all(m, &s->up, &dy, x, s->dx_up, rows));
    CHECK(amp_linear_grad_in(m, &s->gate, &dy, s->dy, s->dgate, s->dgate, n));
    CHECK(amp_linear_backward_all(m, &s->gate, &dy, x, dx, rows));
    return amp_kit_residual(m, dx, dx, amp_array_of(s->dx_up, AMP_DTYPE_F32), nc);
}
