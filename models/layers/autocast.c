/* nn.Linear under autocast's rule, as the CNN's fc layers run: the working
 * weights are cast from the FP32 masters straight into the GEMM's dtype
 * (so `op.gemm = f32` keeps the layer wide whatever the param dtype), and
 * the input's rounding into that dtype is counted in the layer's forward
 * slot, as autocast's cast of the input. */
#include "image.h"
#include "kit_state.h"

int amp_linear_init_autocast(amp_model *m, amp_linear *L, const char *name, int rows, amp_array x) {
    if (amp_linear_init(m, L, name, NULL, rows, AMP_ACT_NONE, x) != 0) return -1;
    if (L->scaled) return 0; /* its weight is the format's codes, its bias the param dtype's */
    int layer = m->desc.params[L->w].layer, f32_store = L->feed == AMP_DTYPE_F32;
    L->param = L->gemm;
    for (int t = L->w; t >= 0; t = t == L->w ? L->b : -1) {
        m->kit->copy[t].on = 0; /* the param-dtype copy amp_linear_init planned */
        amp_kit_add_copy(m, t, L->gemm, f32_store, layer);
    }
    return 0;
}

int amp_linear_forward_autocast(amp_model *m, const amp_linear *L, void *out, amp_array x, int rows) {
    amp_round_count *fwd = amp_model_rounds(m, L->layer, AMP_ROUND_FWD);
    const void *xg = amp_format_operand_counted(m, L->feed, L->gemm, 0, &x, (size_t)rows * L->in, fwd);
    if (!xg) return -1;
    amp_array xr = {xg, L->feed, L->gemm, NULL};
    return amp_linear_forward(m, L, out, NULL, xr, rows);
}
