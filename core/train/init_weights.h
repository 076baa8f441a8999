/* [model] init: a model's initial FP32 weights from a checkpoint, by one
 * loader for every kind (io/name_map.h has the per-kind tables):
 *   - a .safetensors file with PyTorch state_dict names (nanoGPT's, or the
 *     MLP's and CNN's own);
 *   - a Hugging Face model folder: model.safetensors, or
 *     model.safetensors.index.json and the shards its weight_map names.
 * Tensors may be F32, BF16 or F16 (widened exactly). A torch.compile
 * `_orig_mod.` prefix is stripped; buffers that are not parameters (the
 * causal masks attn.bias and attn.masked_bias) are skipped and said once;
 * any other extra tensor, a missing one or a shape that disagrees is an
 * error naming the file and the tensor. */
#ifndef AMP_INIT_WEIGHTS_H
#define AMP_INIT_WEIGHTS_H

#include <stddef.h>

#include "model.h"

/* Every parameter of d from path into host (d->nparams floats, the table's
 * layout). 0, or -1 with err. */
int amp_init_weights_read(const amp_model_desc *d, const char *path, float *host, char *err,
                          size_t errlen);

/* "fc2.bias[3]": the tensor and index of flat parameter element i. */
void amp_param_at(const amp_model_desc *d, size_t i, char *out, size_t outlen);

#endif
