/* An arm's weight GEMMs, read from the session `ab` opens to validate its
 * config: what the projection on other GPUs weighs (ab_project.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab_gemms.h"

/* The model's weight GEMMs with the policy's dtype for each: a GEMM layer's
 * 2-D ".weight" tensor, or the tensor tied to it (the GPT's lm_head). */
int amp_ab_keep_gemms(amp_ab_arm *arm, const amp_session *s) {
    static const char *const names[AMP_DTYPE_COUNT] = {"f32", "f16", "bf16"};
    const amp_model_desc *d = &s->model->desc;
    arm->gemm = calloc((size_t)d->nlayers + 1, sizeof *arm->gemm);
    if (!arm->gemm) return -1;
    for (int l = 0; l < d->nlayers; l++) {
        if (!(d->layers[l].op_classes & (1u << AMP_OP_GEMM))) continue;
        char wname[AMP_MODEL_NAME_MAX + 8];
        snprintf(wname, sizeof wname, "%s.weight", d->layers[l].name);
        double w = 0;
        for (int p = 0; p < d->nparam_tensors && w == 0; p++) {
            const amp_param_desc *pd = &d->params[p];
            if (pd->ndim == 2 && (strcmp(pd->name, wname) == 0 || strcmp(pd->tied, wname) == 0))
                w = (double)pd->shape[0] * (double)pd->shape[1];
        }
        if (w == 0) continue; /* no weight: attention's score GEMMs, not counted */
        amp_ab_gemm *g = &arm->gemm[arm->ngemm++];
        snprintf(g->layer, sizeof g->layer, "%s", d->layers[l].name);
        g->weights = w;
        amp_dtype dt = s->model->prec[l].compute[AMP_OP_GEMM];
        snprintf(g->dtype, sizeof g->dtype, "%s", (unsigned)dt < AMP_DTYPE_COUNT ? names[dt] : "?");
    }
    return 0;
}
