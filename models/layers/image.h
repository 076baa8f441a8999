/* The kit's image layers (NCHW, one row = one example): Conv2d, BatchNorm2d,
 * ReLU and MaxPool2d, as PyTorch's nn modules, on the terms of layers.h:
 * each object owns its tensors, working copies, init rules, operand dtypes
 * and rounding points, and a model chains them with explicit calls.
 *
 * Activations travel as amp_arrays: `p` the stored output (in the layer's
 * activation dtype), `f32`, when not NULL, an FP32 scratch array holding
 * exactly the same values (what the layer computed before it stored it),
 * which the next layer reads instead of widening the stored one. Two FP32
 * scratch arrays (amp_image_scratch) carry those views from layer to layer.
 * Gradients travel as FP32 arrays holding values of the dtype of the
 * activation they belong to (amp_kit_grad_round rounds them there). */
#ifndef AMP_LAYERS_IMAGE_H
#define AMP_LAYERS_IMAGE_H

#include "layers.h"

/* Two FP32 arrays of a layer's largest activation: a widened input lands in
 * f[0], an output view in whichever does not hold the input's. */
typedef struct amp_image_scratch {
    float *f[2];
} amp_image_scratch;

/* a's values in FP32: its view, a itself when stored in FP32, else widened
 * into tmp. NULL and be->err on failure. */
const float *amp_array_f32(amp_model *m, const amp_array *a, float *tmp, size_t n);
/* g[n] (FP32) rounded in place to dt, the dtype of the activation it is the
 * gradient of, counted in layer's gradient slot (layer -1: uncounted). */
int amp_kit_grad_round(amp_model *m, float *g, amp_dtype dt, int layer, size_t n);

/* Tensor "<layer>.<member>" (-1 for none). */
int amp_kit_member(const amp_model *m, const char *layer, const char *member);

/* Layer `name` and its tensors appended to a description being built, as
 * amp_linear_describe (layers.h). */
int amp_conv2d_describe(amp_model_desc *d, const char *name, int out, int in, int k, int bias,
                        int decay);
int amp_batchnorm_describe(amp_model_desc *d, const char *name, int c, int decay);
int amp_batchnorm_describe_buffers(amp_model_desc *d, const char *name, int c);

/* ---- Conv2d: y = conv(x, W) + b, nn.Conv2d (groups 1, dilation 1) --------- */

typedef struct amp_conv2d {
    int layer, w, b;       /* b = -1 without a bias */
    amp_dtype cd, out_dt;  /* compute[conv] (input, weights, dY), where y is stored */
    amp_dtype x_dt;        /* how its input is stored */
    amp_conv2d_desc d;     /* d.n: the most rows per call */
    size_t in_n, out_n, wn; /* per row, per row, weight elements */
    void *x_op;            /* [rows, in_n] the input in cd, kept for the backward
                            * (scaled: FP32, x's own values where INPUT is scaled) */
    /* per amp_gemm_role: m->scaled's slot index of a scaled operand, or -1;
     * any >= 0 makes the layer run its im2col GEMMs itself, FP32 on the
     * dequantized operands (conv2d_scaled.c) */
    int fp8[AMP_ROLE_COUNT];
    int scaled;
} amp_conv2d;

/* The Conv2d `name` (name.weight [out, c, k, k], name.bias when present) on
 * rows x c x h x w inputs stored in x_dt. Default init: U(+-1/sqrt(c k k)). */
int amp_conv2d_init(amp_model *m, amp_conv2d *C, const char *name, amp_dtype x_dt, int rows,
                    int c, int h, int w, int k, int stride, int pad);
/* Its input operand: x itself where x is stored in cd, else its own array. */
void amp_conv2d_layout(amp_model *m, amp_conv2d *C, void *x);
/* out[rows, out_n] = round(conv(x, W) + b). */
int amp_conv2d_forward(amp_model *m, const amp_conv2d *C, void *out, amp_array x, int rows);
/* dW, db into the FP32 gradients (added when accumulate) and dx (FP32;
 * NULL: not wanted) from dy (FP32 of out_dt values). */
int amp_conv2d_backward(amp_model *m, const amp_conv2d *C, float *dx, const float *dy, int rows,
                        int accumulate);
/* The same from dy not yet rounded to out_dt (FP32, may be overwritten),
 * with dx then rounded to dx_dt, the dtype its input is stored in: as
 * amp_kit_grad_round(dy, out_dt, layer), amp_conv2d_backward and
 * amp_kit_grad_round(dx, dx_dt, dx_layer), with the same bits and counts,
 * each rounding done where the data is at hand. */
int amp_conv2d_backward_round(amp_model *m, const amp_conv2d *C, float *dx, float *dy, int rows,
                              int accumulate, amp_dtype dx_dt, int dx_layer);
/* The three convolutions of a step alone on its own operands (a speed
 * floor): y and dx FP32 scratch of the output and input; adds its flops. */
int amp_conv2d_convs_only(amp_model *m, const amp_conv2d *C, float *y, float *dx, int rows,
                          double *flops);

/* ---- BatchNorm2d: FP32 statistics and affine, output in its activation dtype */

typedef struct amp_batchnorm {
    int layer, g, b, mean, var, count; /* weight, bias, running_mean/var, num_batches_tracked */
    int c, hw;
    float momentum, eps;
    amp_dtype out_dt;
    float *save_mean, *save_invstd; /* [c] for the backward */
    float *one;                     /* a device-side 1.0f for the batch count */
    int one_ready;                  /* uploaded (by the first training forward) */
} amp_batchnorm;

/* The BatchNorm2d `name` over c channels of hw values. Init as PyTorch's:
 * weight 1, bias 0, running mean 0, running var 1, count 0. */
int amp_batchnorm_init(amp_model *m, amp_batchnorm *N, const char *name, int c, int hw,
                       double momentum, double eps);
void amp_batchnorm_layout(amp_model *m, amp_batchnorm *N);
/* *y = the normalized x (training: batch statistics, the running ones and
 * the count updated in the master array; else the running ones). With
 * store = 0 an in-place activation stores it next: y->p is not written,
 * only the (rounded, counted) view. With store = AMP_BN_STORE_RELU (only
 * where amp_batchnorm_fuses_relu) *y is already the in-place ReLU's output
 * (stored, with its view): the ReLU's forward is done too. */
#define AMP_BN_STORE_RELU 2
int amp_batchnorm_forward(amp_model *m, amp_batchnorm *N, amp_array *y, void *out,
                          amp_array x, const amp_image_scratch *s, int rows, int training,
                          int store);
/* 1 when its output's rounding and a ReLU after it can be one pass (a
 * 16-bit output and a backend with round_act). */
int amp_batchnorm_fuses_relu(amp_model *m, const amp_batchnorm *N);
/* dy (FP32) replaced by dx; dgamma, dbeta into the gradients. */
int amp_batchnorm_backward(amp_model *m, const amp_batchnorm *N, float *dy, amp_array x,
                           float *tmp, int rows, int accumulate);

/* ---- ReLU in place and MaxPool2d: exact in any dtype, stored as they came -- */

/* *y = relu(x) stored into out (x's dtype; out may be x's own array). */
int amp_relu_forward(amp_model *m, amp_array *y, void *out, amp_array x,
                     const amp_image_scratch *s, size_t n);
/* dy[n] (FP32) *= (y > 0) over the forward's stored output y. */
int amp_relu_backward(amp_model *m, float *dy, amp_array y, float *tmp, size_t n);

typedef struct amp_maxpool {
    amp_pool2d_desc d;     /* d.n: the most rows per call */
    size_t in_n, out_n;    /* per row */
    uint16_t *idx;         /* [rows, out_n] argmax offsets in their windows */
} amp_maxpool;

void amp_maxpool_init(amp_maxpool *P, int rows, int c, int h, int w, int k, int stride, int pad);
void amp_maxpool_layout(amp_model *m, amp_maxpool *P);
int amp_maxpool_forward(amp_model *m, const amp_maxpool *P, amp_array *y, void *out, amp_array x,
                        const amp_image_scratch *s, int rows);
int amp_maxpool_backward(amp_model *m, const amp_maxpool *P, float *dx, const float *dy, int rows);
/* amp_maxpool_backward then amp_kit_grad_round(dx, dt, layer), with the
 * same bits and counts; dy may be overwritten. */
int amp_maxpool_backward_round(amp_model *m, const amp_maxpool *P, float *dx, float *dy, int rows,
                               amp_dtype dt, int layer);

/* A Linear without activation under autocast's rule (autocast.c): working
 * weights in its GEMM dtype, its input's rounding counted in its forward. */
int amp_linear_init_autocast(amp_model *m, amp_linear *L, const char *name, int rows, amp_array x);
int amp_linear_forward_autocast(amp_model *m, const amp_linear *L, void *out, amp_array x, int rows);

/* L's dY for backward_weights from g (FP32 [rows, out] already rounded to
 * L's output dtype, as the gradient of a stored activation is). */
static inline amp_array amp_linear_rounded_dy(const amp_linear *L, const float *g) {
    amp_array a = {g, AMP_DTYPE_F32, L->out_dt, g};
    return a;
}

/* Linear's three GEMMs of a step alone (the speed floor), dy and dx FP32
 * scratch of its output and input; adds its flops. */
int amp_linear_gemms_only(amp_model *m, const amp_linear *L, amp_array x, float *dy, float *dx,
                          int rows, double *flops);

#endif
