/* Softmax cross-entropy of one row, in FP32 (autocast runs losses in FP32).
 * Writes dlogits = (softmax - onehot) * grad_scale when dlogits is non-NULL,
 * returns the row's loss and sets *hit when the argmax equals the label
 * (first index wins ties, like torch.argmax). */
#ifndef AMP_KERNELS_XENT_H
#define AMP_KERNELS_XENT_H

#include <math.h>
#include <stdint.h>

#include "backend/kernels/amp_hd.h"

static inline AMP_HD float amp_xent_row(float *dlogits, int *hit, const float *logits,
                                        int32_t label, int cols, float grad_scale) {
    float mx = logits[0];
    int arg = 0;
    for (int j = 1; j < cols; j++) {
        if (logits[j] > mx) {
            mx = logits[j];
            arg = j;
        }
    }
    float sum = 0.0f;
    for (int j = 0; j < cols; j++) sum += expf(logits[j] - mx);
    float lse = mx + logf(sum);
    if (dlogits) {
        for (int j = 0; j < cols; j++) {
            float p = expf(logits[j] - lse);
            dlogits[j] = (p - (j == label ? 1.0f : 0.0f)) * grad_scale;
        }
    }
    *hit = arg == label;
    return lse - logits[label];
}

#endif
