/* Shared body of the built-in precision policies (fp32, fp16, bf16).
 * Compiled into each policy plugin; plugins never link the core.
 *
 * A policy has one low dtype L. Defaults, following PyTorch autocast:
 *   GEMM, CONV, ATTENTION compute in L; POINTWISE follows the activations (L);
 *   SOFTMAX, LOSS, NORM, REDUCE in F32; activations and working params in L.
 * INI overrides (the plugin's section):
 *   op.<class>   = f32|f16|bf16   one op class, every layer
 *   layer.<name> = f32|f16|bf16   GEMM/CONV/ATTENTION/POINTWISE compute,
 *                                 activation and param of one layer, or of
 *                                 every layer a glob matches
 *                                 (layer.transformer.h.*.attn.*)
 * op.* applies first, layer.* wins; among layer.* keys the later one wins. */
#ifndef AMP_PLUGINS_POLICY_COMMON_H
#define AMP_PLUGINS_POLICY_COMMON_H

#include "amptrain/plugin.h"

typedef struct amp_policy_layer {
    const char *name; /* host->layer_name pointer, valid until fini */
    int set;
    amp_dtype dtype;
} amp_policy_layer;

typedef struct amp_policy {
    const amp_host_api *host;
    amp_dtype low;
    int op_set[AMP_OP_COUNT];
    amp_dtype op_dtype[AMP_OP_COUNT];
    int layer_count;
    amp_policy_layer *layers; /* [layer_count] */
    int requires_scaler;
    int tf32;
} amp_policy;

/* Builds a policy with low dtype `low` and reads op.* / layer.* from the
 * plugin's section. On failure the host holds the message, *out is NULL. */
int amp_policy_create(const amp_host_api *host, amp_dtype low, amp_policy **out);
void amp_policy_destroy(amp_policy *p);
/* Fills out (host sets struct_size) for `layer` (a model layer or "loss"). */
int amp_policy_resolve(const amp_policy *p, const char *layer, amp_layer_precision *out);

/* Vtable adaptors so each plugin's table is three lines. */
void amp_policy_vt_fini(void *self);
int amp_policy_vt_resolve(void *self, const char *layer, amp_layer_precision *out);
int amp_policy_vt_requires_scaler(void *self);
int amp_policy_vt_allow_tf32(void *self);

#endif
