/* The objects' rows of a parameter table, named as PyTorch names them
 * ("<layer>.weight", ...): a model's describe() lists its layers with
 * these, trained parameters first and buffers after (the table's rule). */
#include <stdio.h>
#include <string.h>

#include "image.h"

static int add(amp_model_desc *d, const char *layer, const char *member, int decay, int ndim,
               const int64_t *shape) {
    char p[AMP_MODEL_NAME_MAX + 32];
    snprintf(p, sizeof p, "%s.%s", layer, member);
    return amp_model_desc_add_param(d, p, d->nlayers - 1, decay, ndim, shape);
}

int amp_conv2d_describe(amp_model_desc *d, const char *name, int out, int in, int k, int bias,
                        int decay) {
    int64_t w[4] = {out, in, k, k}, b[1] = {out};
    unsigned ops = (1u << AMP_OP_CONV) | (1u << AMP_OP_POINTWISE);
    return amp_model_desc_add_layer(d, name, ops) || add(d, name, "weight", decay, 4, w) ||
           (bias && add(d, name, "bias", decay, 1, b));
}

int amp_linear_describe(amp_model_desc *d, const char *name, int out, int in, int bias, int decay) {
    int64_t w[2] = {out, in}, b[1] = {out};
    unsigned ops = (1u << AMP_OP_GEMM) | (1u << AMP_OP_POINTWISE);
    return amp_model_desc_add_layer(d, name, ops) || add(d, name, "weight", decay, 2, w) ||
           (bias && add(d, name, "bias", decay, 1, b));
}

int amp_batchnorm_describe(amp_model_desc *d, const char *name, int c, int decay) {
    int64_t v[1] = {c};
    unsigned ops = (1u << AMP_OP_NORM) | (1u << AMP_OP_POINTWISE);
    return amp_model_desc_add_layer(d, name, ops) || add(d, name, "weight", decay, 1, v) ||
           add(d, name, "bias", decay, 1, v);
}

int amp_batchnorm_describe_buffers(amp_model_desc *d, const char *name, int c) {
    static const char *const member[] = {"running_mean", "running_var", "num_batches_tracked"};
    int64_t v[1] = {c};
    int layer = 0;
    while (layer < d->nlayers && strcmp(d->layers[layer].name, name) != 0) layer++;
    for (int i = 0; i < 3; i++) {
        char p[AMP_MODEL_NAME_MAX + 32];
        snprintf(p, sizeof p, "%s.%s", name, member[i]);
        if (amp_model_desc_add_buffer(d, p, layer, i < 2 ? 1 : 0, i < 2 ? v : NULL) != 0) return -1;
    }
    return 0;
}
