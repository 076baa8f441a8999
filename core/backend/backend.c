/* Backend-independent helpers of the op table. */
#include "backend/backend.h"

#include <stdio.h>

int amp_backend_missing(amp_backend *be, const char *op) {
    snprintf(be->err, sizeof be->err,
             "backend '%s' has no op '%s' (this model needs it; run on a backend that has it)",
             be->ops->name, op);
    return 1;
}

int amp_gemm_desc_check(amp_backend *be, const amp_gemm_desc *d) {
    if ((d->bias || d->out) && d->ldc != d->n) {
        snprintf(be->err, sizeof be->err, "gemm_ex: an epilogue needs ldc == n (ldc %d, n %d)",
                 d->ldc, d->n);
        return 1;
    }
    if (d->act != AMP_ACT_NONE && (!d->out || !d->act_out)) {
        snprintf(be->err, sizeof be->err, "gemm_ex: an activation needs out and act_out");
        return 1;
    }
    if (d->batch < 1) {
        snprintf(be->err, sizeof be->err, "gemm_ex: batch %d (must be >= 1)", d->batch);
        return 1;
    }
    return 0;
}
