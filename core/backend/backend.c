/* Backend-independent helpers of the op table. */
#include "backend/backend.h"

#include <stdio.h>
#include <string.h>

int amp_backend_supports(const amp_backend *be, const char *name) {
    const amp_backend_ops *o = be->ops;
    const amp_fused_ops *f = o->fused;
    if (strcmp(name, "transformer") == 0) return o->transformer != NULL;
    if (strcmp(name, "conv") == 0) return o->conv != NULL;
    if (strcmp(name, "scaled") == 0) return o->scaled != NULL;
    if (strcmp(name, "batch_norm_x16") == 0) return o->conv && o->conv->batch_norm_x16;
    if (strcmp(name, "conv2d_forward_round") == 0) return o->conv && o->conv->conv2d_forward_round;
    if (strcmp(name, "conv2d_backward_round") == 0) return o->conv && o->conv->conv2d_backward_round;
    if (!f) return 0;
    if (strcmp(name, "optim_step_cast") == 0) return f->optim_step_cast != NULL;
    if (strcmp(name, "optim_multi_step") == 0) return f->optim_multi_step != NULL;
    if (strcmp(name, "upload_round") == 0) return f->upload_round != NULL;
    if (strcmp(name, "act_backward_round") == 0) return f->act_backward_round != NULL;
    if (strcmp(name, "fp8_gemm") == 0) return f->fp8_gemm != NULL;
    if (strcmp(name, "nvfp4_gemm") == 0) return f->nvfp4_gemm != NULL;
    if (strcmp(name, "round_act") == 0) return f->round_act != NULL;
    return 0;
}

int amp_backend_missing(amp_backend *be, const char *family, const char *op) {
    snprintf(be->err, sizeof be->err,
             "backend '%s' has no op '%s' (family '%s'; this model needs it, run on a backend "
             "that has it)",
             be->ops->name, op, family);
    return 1;
}

int amp_nvfp4_desc_check(amp_backend *be, const amp_nvfp4_desc *d, const char *op) {
    const char *why = NULL;
    if (d->rows < 0 || d->cols < 0 || d->blocks < AMP_NVFP4_ROWS || d->blocks > AMP_NVFP4_TILES)
        why = "a negative size or an unknown block layout";
    else if (d->hadamard && strcmp(op, "nvfp4_qdq") != 0)
        why = "the Hadamard transform is for quantize-dequantize (nvfp4_qdq) only";
    else if (d->hadamard && d->blocks != AMP_NVFP4_COLS)
        why = "the Hadamard transform runs down the columns (blocks AMP_NVFP4_COLS)";
    if (!why) return 0;
    snprintf(be->err, sizeof be->err, "%s: %s (shape [%d, %d], blocks %d)", op, why, d->rows,
             d->cols, d->blocks);
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
