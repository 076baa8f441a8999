/* The CPU backend's "conv" family (backend_cpu_cnn.c), for its op table in
 * backend_cpu.c; the signatures are amp_conv_ops' (backend.h). */
#ifndef AMP_BACKEND_CPU_CNN_H
#define AMP_BACKEND_CPU_CNN_H

#include "backend/backend.h"

extern const amp_conv_ops amp_cpu_conv_ops;
/* The "scaled" family's conv2d_im2col and conv2d_col2im (amp_scaled_ops). */
int amp_cpu_conv2d_im2col(amp_backend *be, float *col, const float *x, const amp_conv2d_desc *d);
int amp_cpu_conv2d_col2im(amp_backend *be, float *dx, const float *col, const amp_conv2d_desc *d);

#endif
