/* Token + position embedding and the residual add, per element, shared by
 * the CPU loops and the CUDA kernels. */
#ifndef AMP_KERNELS_EMBED_H
#define AMP_KERNELS_EMBED_H

#include <stdint.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/store.h"

/* Element (row r = b*T + t, channel c): wte[tok, c] + wpe[t, c] (FP32:
 * autocast leaves the embedding lookup in the weights' dtype). */
static inline AMP_HD float amp_embed_element(const float *wte, const float *wpe,
                                             const int32_t *tokens, int T, int C, size_t i) {
    size_t r = i / (size_t)C;
    int c = (int)(i % (size_t)C);
    int t = (int)(r % (size_t)T);
    return wte[(size_t)tokens[r] * C + c] + wpe[(size_t)t * C + c];
}

/* out = x + widen(d): a residual add of a (16-bit or FP32) branch output
 * into the FP32 residual stream (autocast promotes to the wider input). */
static inline AMP_HD float amp_residual_element(float x, const void *d, size_t i, int dt) {
    return x + amp_load(d, i, dt);
}

#endif
