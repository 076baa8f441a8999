/* The host's check of the scaled operand formats a precision policy gives
 * a layer (plugin ABI 1.2/1.3): refused at config time, naming the policy,
 * the layer and the role. */
#ifndef AMP_OPERAND_CHECK_H
#define AMP_OPERAND_CHECK_H

#include <stddef.h>

#include "amptrain/plugin.h"

/* The operand formats of p for layer `layer` (whose op classes, bits of
 * 1 << amp_op_class, are `classes`; 0 for "loss") are in range, consistent,
 * and on a layer that can run them: a scaled format on a layer that runs a
 * GEMM or a convolution, NVFP4 on a GEMM (Linear) layer only. A policy of
 * ABI 1.0/1.1 has none: its struct does not reach operand[], which the host
 * preset to DTYPE. 0, or -1 with err. */
int amp_operands_check(const char *policy, const char *layer, unsigned classes,
                       const amp_layer_precision *p, char *err, size_t errlen);

#endif
