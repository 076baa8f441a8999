/* The CPU backend's convolutional-network ops (backend_cpu_cnn.c), for its
 * op table in backend_cpu.c; signatures as in amp_backend_ops. */
#ifndef AMP_BACKEND_CPU_CNN_H
#define AMP_BACKEND_CPU_CNN_H

#include "backend/backend.h"

int amp_cpu_conv2d_workspace(amp_backend *be, const amp_conv2d_desc *d, size_t *bytes);
int amp_cpu_conv2d_forward(amp_backend *be, float *y, const void *x, const void *w,
                           const float *bias, const amp_conv2d_desc *d, void *ws,
                           size_t ws_bytes);
int amp_cpu_conv2d_backward_data(amp_backend *be, float *dx, const void *dy, const void *w,
                                 const amp_conv2d_desc *d, void *ws, size_t ws_bytes);
int amp_cpu_conv2d_backward_filter(amp_backend *be, float *dw, float *dbias, const void *x,
                                   const void *dy, const amp_conv2d_desc *d, void *ws,
                                   size_t ws_bytes);
int amp_cpu_max_pool2d_forward(amp_backend *be, float *y, uint16_t *idx, const float *x,
                               const amp_pool2d_desc *d);
int amp_cpu_max_pool2d_backward(amp_backend *be, float *dx, const float *dy, const uint16_t *idx,
                                const amp_pool2d_desc *d);
int amp_cpu_batch_norm_forward(amp_backend *be, float *y, float *save_mean, float *save_invstd,
                               float *running_mean, float *running_var, const float *x,
                               const float *gamma, const float *beta, int n, int c, int hw,
                               int training, float momentum, float eps);
int amp_cpu_batch_norm_backward(amp_backend *be, float *dx, float *dgamma, float *dbeta,
                                const float *dy, const float *x, const float *gamma,
                                const float *save_mean, const float *save_invstd, int n, int c,
                                int hw, int training);

#endif
