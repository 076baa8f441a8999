/* The CNN model (cnn.c): registered as [model] name = cnn; this header is
 * for tests that look inside it. */
#ifndef AMP_MODELS_CNN_H
#define AMP_MODELS_CNN_H

#include "model.h"

extern const amp_model_ops amp_model_cnn;

/* The last forward's logits [rows, classes] as FP32 on the host (widened
 * from the classifier's activation dtype). 0, or -1 with m->be->err. */
int amp_cnn_logits(amp_model *m, float *dst, int rows);

#endif
