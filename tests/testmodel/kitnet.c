/* A test-only model written against the layer kit alone (no dtype code,
 * no backend info): conv(3x3, pad 1) -> BatchNorm2d -> ReLU -> MaxPool(2)
 * -> Linear, on images, or on flat rows of a square number of features
 * seen as one-channel images.
 *   conv.weight [channels, c, 3, 3], conv.bias, bn.weight, bn.bias,
 *   head.weight [classes, channels * h/2 * w/2], head.bias; buffers
 *   bn.running_mean, bn.running_var, bn.num_batches_tracked.
 * Layers "conv", "bn" and "head". [model] channels = 4 (its only key). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "layers/image.h"
#include "layers/layers.h"
#include "model.h"
#include "keys/settings_table.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

typedef struct kitnet {
    amp_conv2d conv;
    amp_batchnorm bn;
    amp_maxpool pool;
    amp_linear head;
    int c, h, w, k;          /* input image; conv channels */
    void *z, *y, *p, *logits; /* conv out, bn/relu out, pool out, head out */
    amp_image_scratch views;  /* [batch, conv out] FP32 each */
    float *g1, *g2;           /* [batch, conv out] FP32 gradients */
    float *f_logits, *f_dlogits;
} kitnet;

static int shape(const amp_model_input *in, int *c, int *h, int *w, char *err, size_t errlen) {
    *c = in->channels, *h = in->height, *w = in->width;
    if (*c > 0) return 0;
    int s = (int)lround(sqrt((double)in->features));
    *c = 1, *h = *w = s;
    if (s * s == in->features && s >= 2 && !in->x_is_tokens) return 0;
    snprintf(err, errlen, "model kitnet: needs images or a square number of features (got %d)",
             in->features);
    return -1;
}

typedef struct kitnet_keys {
    int channels;
} kitnet_keys;

static const amp_setting kitnet_settings[] = {
    {"model", "channels", AMP_SETTING_INT, "4", 1, 256, AMP_SETTING_AT(kitnet_keys, channels),
     .doc = "the convolution's output channels"},
    {.key = NULL}};

static int kn_describe(amp_model_desc *d, amp_config *cfg, const amp_model_input *in, char *err,
                       size_t errlen) {
    kitnet_keys k;
    int c, h, w;
    if (amp_settings_table_read(kitnet_settings, &k, cfg, err, errlen) != 0) return -1;
    if (shape(in, &c, &h, &w, err, errlen) != 0) return -1;
    int K = k.channels;
    if (amp_conv2d_describe(d, "conv", K, c, 3, 1, 1) || amp_batchnorm_describe(d, "bn", K, 0) ||
        amp_linear_describe(d, "head", in->classes, K * (h / 2) * (w / 2), 1, 1) ||
        amp_batchnorm_describe_buffers(d, "bn", K)) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    return 0;
}

static int kn_create(amp_model *m, amp_config *cfg, char *err, size_t errlen) {
    (void)cfg;
    kitnet *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->impl = n;
    if (amp_kit_create(m, err, errlen) != 0 || shape(&m->input, &n->c, &n->h, &n->w, err, errlen))
        return -1;
    int B = m->input.batch;
    n->k = (int)m->desc.params[0].shape[0];
    amp_conv2d *C = &n->conv;
    if (amp_conv2d_init(m, C, "conv", AMP_DTYPE_F32, B, n->c, n->h, n->w, 3, 1, 1) ||
        amp_batchnorm_init(m, &n->bn, "bn", n->k, n->h * n->w, 0.1, 1e-5)) {
        snprintf(err, errlen, "%s", m->be->err);
        return -1;
    }
    amp_maxpool_init(&n->pool, B, n->k, n->h, n->w, 2, 2, 0);
    if (amp_linear_init(m, &n->head, "head", NULL, B, AMP_ACT_NONE,
                        amp_array_of(NULL, n->bn.out_dt)) != 0) {
        snprintf(err, errlen, "%s", m->be->err);
        return -1;
    }
    return 0;
}

static void kn_destroy(amp_model *m) {
    amp_kit_free(m);
    free(m->impl);
    m->impl = NULL;
}

static void kn_layout(amp_model *m) {
    kitnet *n = m->impl;
    size_t B = (size_t)m->input.batch, cn = B * n->conv.out_n, pn = B * n->pool.out_n;
    size_t ln = B * (size_t)m->input.classes;
    amp_conv2d_layout(m, &n->conv, m->x);
    amp_batchnorm_layout(m, &n->bn);
    amp_maxpool_layout(m, &n->pool);
    n->z = amp_kit_take(m, AMP_MEM_ACTIVATIONS, cn, n->conv.out_dt);
    n->y = amp_kit_take(m, AMP_MEM_ACTIVATIONS, cn, n->bn.out_dt);
    n->p = amp_kit_take(m, AMP_MEM_ACTIVATIONS, pn, n->bn.out_dt);
    n->logits = amp_kit_take(m, AMP_MEM_ACTIVATIONS, ln, n->head.out_dt);
    size_t wide = cn > B * n->conv.in_n ? cn : B * n->conv.in_n;
    for (int i = 0; i < 2; i++) n->views.f[i] = amp_kit_take(m, AMP_MEM_WORKSPACE, wide, AMP_DTYPE_F32);
    n->g1 = amp_kit_take(m, AMP_MEM_WORKSPACE, cn, AMP_DTYPE_F32);
    n->g2 = amp_kit_take(m, AMP_MEM_WORKSPACE, cn, AMP_DTYPE_F32);
    n->f_logits = amp_kit_take(m, AMP_MEM_WORKSPACE, ln, AMP_DTYPE_F32);
    n->f_dlogits = amp_kit_take(m, AMP_MEM_WORKSPACE, ln, AMP_DTYPE_F32);
    amp_kit_layout(m);
}

static int kn_forward(amp_model *m, const amp_forward_args *a) {
    kitnet *n = m->impl;
    int R = a->rows;
    amp_array x = amp_array_of(m->x, AMP_DTYPE_F32), z, y, p;
    CHECK(amp_conv2d_forward(m, &n->conv, n->z, x, R));
    z = amp_array_of(n->z, n->conv.out_dt);
    CHECK(amp_batchnorm_forward(m, &n->bn, &y, n->y, z, &n->views, R, a->for_backward, 0));
    CHECK(amp_relu_forward(m, &y, n->y, y, &n->views, (size_t)R * n->conv.out_n));
    CHECK(amp_maxpool_forward(m, &n->pool, &p, n->p, y, &n->views, R));
    CHECK(amp_linear_forward(m, &n->head, n->logits, NULL, p, R));
    return amp_kit_xent(m, a->for_backward ? n->f_dlogits : NULL, n->f_logits, n->logits,
                        n->head.out_dt, R, m->input.classes, a->loss_grad_scale);
}

static int kn_backward(amp_model *m, const amp_backward_args *a) {
    kitnet *n = m->impl;
    int R = a->rows;
    size_t cn = (size_t)R * n->conv.out_n, pn = (size_t)R * n->pool.out_n;
    amp_array dy;
    CHECK(amp_linear_grad_in(m, &n->head, &dy, n->logits, n->f_dlogits, n->f_dlogits,
                             (size_t)R * m->input.classes));
    CHECK(amp_linear_backward_weights(m, &n->head, &dy, amp_array_of(n->p, n->bn.out_dt), R,
                                      a->accumulate));
    CHECK(amp_linear_backward_data(m, &n->head, n->g2, &dy, R));
    CHECK(amp_kit_grad_round(m, n->g2, n->bn.out_dt, n->bn.layer, pn));
    CHECK(amp_maxpool_backward(m, &n->pool, n->g1, n->g2, R));
    CHECK(amp_relu_backward(m, n->g1, amp_array_of(n->y, n->bn.out_dt), n->views.f[0], cn));
    CHECK(amp_batchnorm_backward(m, &n->bn, n->g1, amp_array_of(n->z, n->conv.out_dt),
                                 n->views.f[0], R, a->accumulate));
    return amp_conv2d_backward_round(m, &n->conv, NULL, n->g1, R, a->accumulate, AMP_DTYPE_F32, -1);
}

const amp_model_ops amp_test_model_kitnet = {
    .name = "kitnet",
    .settings = kitnet_settings,
    .describe = kn_describe,
    .create = kn_create,
    .layout = kn_layout,
    .destroy = kn_destroy,
    .init_params = amp_kit_init_params,
    .cast_weights = amp_kit_cast_weights,
    .working_copy = amp_kit_working_copy,
    .forward = kn_forward,
    .backward = kn_backward,
};
