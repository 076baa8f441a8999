/* The CNN model (cnn.c): registered as [model] name = cnn; this header is
 * for tests that look inside it. */
#ifndef AMP_MODELS_CNN_H
#define AMP_MODELS_CNN_H

#include "model.h"

extern const amp_model_ops amp_model_cnn;

/* The last forward's logits [rows, classes] as FP32 on the host (widened
 * from the classifier's activation dtype). 0, or -1 with m->be->err. */
int amp_cnn_logits(amp_model *m, float *dst, int rows);

/* Only the convolutions and GEMMs of one training step (forward, weight and
 * input gradients), on the model's own operand buffers and in its operand
 * dtypes, whatever they hold: with an FP32 model, the floor bench_cnn
 * compares a whole step with. *flops (may be NULL) gets their flop count.
 * 0, or -1 with m->be->err. */
int amp_cnn_conv_gemm_only(amp_model *m, int rows, double *flops);

#endif
