/* SwiGLU's pointwise middle, h = silu(gate) * up, as PyTorch computes
 * Llama's act_fn(gate_proj(x)) * up_proj(x) under autocast: F.silu runs in
 * FP32 on the stored gate and returns gate's dtype (a rounding point), the
 * product is rounded again into h's dtype. The backward recomputes
 * silu(gate) with the same bits; PyTorch's silu_backward is
 * dy * sig * (1 + x * (1 - sig)). Shared by the CPU loops and the CUDA
 * kernels. */
#ifndef AMP_KERNELS_SWIGLU_H
#define AMP_KERNELS_SWIGLU_H

#include <math.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/store.h"

static inline AMP_HD float amp_silu(float g) { return g / (1.0f + expf(-g)); }

/* silu(g) rounded into dt (counted into t). */
static inline AMP_HD float amp_silu_round(float g, int dt, amp_round_tally *t) {
    unsigned f = 0;
    float s = amp_quantize(amp_silu(g), dt, &f);
    amp_round_tally_add(t, f);
    return s;
}

/* Element i of h = round_hdt(round_gdt(silu(gate)) * up). */
static inline AMP_HD void amp_swiglu_forward_elem(void *h, int hdt, const void *gate, int gdt,
                                                  const void *up, int udt, size_t i,
                                                  amp_round_tally *t) {
    float s = amp_silu_round(amp_load(gate, i, gdt), gdt, t);
    amp_store(h, i, hdt, 0, s * amp_load(up, i, udt), t);
}

/* Element i of the gradients (FP32, for the Linears' grad_in to round):
 * dup = dh * silu(gate) (rounded as forward did), dgate = round_gdt(dh *
 * up) * silu'(gate); the one rounding in here is counted into t. */
static inline AMP_HD void amp_swiglu_backward_elem(float *dgate, float *dup, const float *dh,
                                                   const void *gate, int gdt, const void *up,
                                                   int udt, size_t i, amp_round_tally *t) {
    float g = amp_load(gate, i, gdt), d = dh[i];
    amp_round_tally scratch = {0, 0, 0}; /* silu(g)'s rounding was the forward's */
    float s = amp_silu_round(g, gdt, &scratch);
    unsigned f = 0;
    float ds = amp_quantize(d * amp_load(up, i, udt), gdt, &f);
    amp_round_tally_add(t, f);
    float sig = 1.0f / (1.0f + expf(-g));
    dup[i] = d * s;
    dgate[i] = ds * sig * (1.0f + g * (1.0f - sig));
}

#endif
