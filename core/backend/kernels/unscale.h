/* One gradient element of the fused unscale + non-finite check
 * (GradScaler's _amp_foreach_non_finite_check_and_unscale_), shared by the
 * CPU loop and the CUDA kernel. */
#ifndef AMP_KERNELS_UNSCALE_H
#define AMP_KERNELS_UNSCALE_H

#include <math.h>

#include "backend/kernels/amp_hd.h"

/* Returns 0 for an inf/NaN element, left as it is. Otherwise multiplies *g by
 * inv_scale (skipped when it is 1, as PyTorch does) and checks the product
 * too: a finite gradient times an inv_scale > 1 can overflow to inf, and
 * that inf must skip the step like any other (the product is stored, so the
 * gradient buffer shows what was counted). A finite product adds its square
 * to *sumsq, raises *maxabs to its magnitude and returns 1. */
static inline AMP_HD int amp_unscale_element(float *g, float inv_scale, double *sumsq,
                                             float *maxabs) {
    float v = *g;
    if (!isfinite(v)) return 0;
    if (inv_scale != 1.0f) {
        *g = v = v * inv_scale;
        if (!isfinite(v)) return 0;
    }
    *sumsq += (double)v * (double)v;
    float a = fabsf(v);
    if (a > *maxabs) *maxabs = a;
    return 1;
}

#endif
