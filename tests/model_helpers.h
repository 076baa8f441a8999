/* Test helpers that build one model directly (no session, no plugins): all
 * layers in FP32, on the CPU backend, for gradient checks. */
#ifndef AMP_TEST_MODEL_HELPERS_H
#define AMP_TEST_MODEL_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* The model `name` described from cfg's [model] keys for the data in `in`,
 * every layer FP32; exits on failure. */
static inline amp_model *model_f32_or_die(const char *name, amp_backend *be, amp_config *cfg,
                                          const amp_model_input *in) {
    char err[1024];
    const amp_model_ops *ops = amp_model_find(name);
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    if (!ops || ops->describe(&desc, cfg, in, err, sizeof err) != 0) {
        fprintf(stderr, "model %s: %s\n", name, ops ? err : "not registered");
        exit(1);
    }
    amp_layer_precision *prec = calloc((size_t)desc.nlayers, sizeof *prec);
    for (int l = 0; l < desc.nlayers; l++) {
        prec[l].struct_size = sizeof prec[l];
        for (int c = 0; c < AMP_OP_COUNT; c++) prec[l].compute[c] = AMP_DTYPE_F32;
        prec[l].activation = prec[l].param = AMP_DTYPE_F32;
    }
    amp_model *m = NULL;
    if (amp_model_create(&m, ops, be, &desc, prec, in, 0, cfg, err, sizeof err) != 0 ||
        m->ops->init_params(m, 42) != 0) {
        fprintf(stderr, "model %s: %s\n", name, err);
        exit(1);
    }
    free(prec);
    return m;
}

/* Mean loss of the batch in m->x/m->y under the current master weights
 * (CPU backend: the buffers are host memory). */
static inline double model_batch_loss(amp_model *m, int rows) {
    amp_backend *be = m->be;
    size_t bytes = amp_model_stats_bytes(m->desc.nlayers);
    amp_forward_args fa = {rows, 0, 1.0f};
    if (be->ops->zero(be, m->stats, bytes) || m->ops->cast_weights(m) || m->ops->forward(m, &fa))
        exit(1);
    return m->stats->loss_sum / ((double)rows * m->input.targets);
}

/* Backward of the mean loss over `rows` rows into m->grads. */
static inline void model_backward_or_die(amp_model *m, int rows) {
    amp_backend *be = m->be;
    amp_forward_args fa = {rows, 1, 1.0f / ((float)rows * (float)m->input.targets)};
    amp_backward_args ba = {rows, 0};
    if (be->ops->zero(be, m->stats, amp_model_stats_bytes(m->desc.nlayers)) ||
        m->ops->cast_weights(m) || m->ops->forward(m, &fa) || m->ops->backward(m, &ba)) {
        fprintf(stderr, "backward: %s\n", be->err);
        exit(1);
    }
}

#endif
