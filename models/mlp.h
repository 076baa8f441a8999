/* A multi-layer perceptron written once against the backend op table: the
 * same code runs on the CPU and the CUDA backend under any precision policy.
 * Layers are named fc1..fcN and laid out like PyTorch nn.Linear
 * (fcK.weight is [out, in], fcK.bias is [out]). */
#ifndef AMP_MLP_H
#define AMP_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "backend/backend.h"

typedef struct amp_mlp_spec {
    int in_features;
    int classes;
    int hidden[AMP_MAX_LAYERS - 1];
    int nhidden;
    amp_act act;               /* activation after every hidden layer */
    int batch;                 /* rows per micro-batch (buffers are sized for it) */
    int opt_buffers;           /* FP32 optimizer state arrays per parameter (0, 1 or 2) */
    amp_layer_precision prec[AMP_MAX_LAYERS]; /* per layer, from the policy */
} amp_mlp_spec;

typedef struct amp_mlp_layer {
    char name[16];
    int in, out;
    amp_act act;
    amp_layer_precision prec;
    size_t w_off, b_off; /* element offsets into the flat parameter arrays */
    void *w_work;        /* [out, in] working weights in prec.param (aliases master for F32) */
    void *b_work;        /* [out] */
    void *z;             /* [batch, out] pre-activation in prec.activation; reused for dZ */
    void *a;             /* [batch, out] post-activation (aliases z without activation) */
} amp_mlp_layer;

typedef struct amp_mlp {
    amp_backend *be;
    int nlayers;
    amp_mlp_layer layers[AMP_MAX_LAYERS];
    int batch, in_features, classes;
    size_t nparams;
    amp_arena mem[AMP_MEM_COUNT];
    float *master;        /* [nparams] */
    float *grads;         /* [nparams] */
    float *opt[2];        /* [nparams] each, or NULL */
    float *x_f32;         /* [batch, in] the uploaded batch */
    int32_t *labels;      /* [batch] */
    void *x_in;           /* [batch, in] the batch rounded into fc1's GEMM dtype */
    amp_dtype x_dtype;
    float *f_y, *f_t;     /* [batch, widest] FP32 scratch */
    float *f_w;           /* [largest weight] FP32 scratch for dW */
    float *f_bias;        /* [widest] */
    float *op_f32[2];     /* operand conversion scratch (only when a policy mixes dtypes) */
    void *op_16[2];
    size_t op_len;
    amp_step_stats *stats; /* the per-step record (backend memory) */
} amp_mlp;

/* Fills names[i] = "fc<i+1>" for every layer of the spec; returns the count. */
int amp_mlp_layer_count(const amp_mlp_spec *spec);
void amp_mlp_layer_name(char *out, size_t outlen, int index);

int amp_mlp_create(amp_mlp **out, amp_backend *be, const amp_mlp_spec *spec, char *err,
                   size_t errlen);
void amp_mlp_free(amp_mlp *m);

/* PyTorch nn.Linear's default init: U(-1/sqrt(in), 1/sqrt(in)) for weights
 * and biases, from the seed; written to the master weights. */
int amp_mlp_init_params(amp_mlp *m, uint64_t seed);

/* Rounds the master weights into the working copies (counting what is lost). */
int amp_mlp_cast_weights(amp_mlp *m);

/* Forward over the batch already in x_f32/labels (rows <= batch); adds the
 * loss and hits to m->stats. With backward != 0 also back-propagates
 * d(loss * loss_scale / denom) into m->grads (added when accumulate != 0). */
int amp_mlp_step(amp_mlp *m, int rows, int backward, float loss_scale, float denom,
                 int accumulate);

#endif
