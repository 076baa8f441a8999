/* The CPU backend's pooling and batch-norm ops (cpu_maxpool.c,
 * cpu_batchnorm.c), for the "conv" family's table in backend_cpu_cnn.c;
 * the signatures are amp_conv_ops' (backend.h). */
#ifndef AMP_CPU_CNN_OPS_H
#define AMP_CPU_CNN_OPS_H

#include <stdint.h>

#include "backend/backend.h"

int amp_cpu_max_pool2d_forward(amp_backend *be, float *y, uint16_t *idx, const float *x,
                               const amp_pool2d_desc *d);
int amp_cpu_max_pool2d_backward(amp_backend *be, float *dx, const float *dy, const uint16_t *idx,
                                const amp_pool2d_desc *d);
int amp_cpu_batch_norm_forward(amp_backend *be, const amp_batch_norm_fwd *a);
int amp_cpu_batch_norm_backward(amp_backend *be, const amp_batch_norm_bwd *a);

#endif
