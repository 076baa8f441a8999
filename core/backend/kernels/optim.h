/* Optimizer updates for one element of the flat FP32 master arrays, shared by
 * CPU and CUDA. Semantics follow torch.optim.SGD and torch.optim.AdamW. */
#ifndef AMP_KERNELS_OPTIM_H
#define AMP_KERNELS_OPTIM_H

#include <math.h>

#include "backend/kernels/amp_hd.h"

/* SGD: d = g + wd*w; buf = momentum*buf + d (buf starts at 0, so the first
 * step stores d as torch does); w -= lr*buf. With momentum 0, buf is unused. */
static inline AMP_HD void amp_sgd_element(float *w, float *buf, float g, float lr, float momentum,
                                          float wd) {
    float d = g + wd * *w;
    if (momentum != 0.0f) {
        *buf = momentum * *buf + d;
        d = *buf;
    }
    *w -= lr * d;
}

/* AdamW: decoupled decay w *= 1 - lr*wd, then the Adam step with bias
 * corrections bc1 = 1 - beta1^t and bc2_sqrt = sqrt(1 - beta2^t) computed once
 * per step by the caller. */
static inline AMP_HD void amp_adamw_element(float *w, float *m, float *v, float g, float lr,
                                            float beta1, float beta2, float eps, float wd,
                                            float bc1, float bc2_sqrt) {
    *w *= 1.0f - lr * wd;
    *m = beta1 * *m + (1.0f - beta1) * g;
    *v = beta2 * *v + (1.0f - beta2) * g * g;
    float denom = sqrtf(*v) / bc2_sqrt + eps;
    *w -= (lr / bc1) * (*m / denom);
}

#endif
