/* The CPU backend's "conv" family (backend_cpu_cnn.c), for its op table in
 * backend_cpu.c; the signatures are amp_conv_ops' (backend.h). */
#ifndef AMP_BACKEND_CPU_CNN_H
#define AMP_BACKEND_CPU_CNN_H

#include "backend/backend.h"

extern const amp_conv_ops amp_cpu_conv_ops;

#endif
