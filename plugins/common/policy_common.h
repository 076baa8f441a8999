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

#include "amptrain/layer_keys.h"
#include "amptrain/plugin.h"

/* layer.* keys, read by the SDK's helper (amptrain/layer_keys.h) that
 * out-of-tree plugins use too. */
typedef amp_layer_key amp_policy_layer;

typedef struct amp_policy {
    const amp_host_api *host;
    amp_dtype low;
    int op_set[AMP_OP_COUNT];
    amp_dtype op_dtype[AMP_OP_COUNT];
    int layer_count;
    amp_policy_layer *layers; /* [layer_count] */
    int requires_scaler;
    int tf32;
    /* Scaled GEMM operands (fp8, mxfp8): when `scaled` is set, every layer
     * that runs GEMM or CONV and has no layer.* override gets operand[]. */
    int scaled;
    amp_operand_format operand[AMP_ROLE_COUNT];
    uint32_t operand_flags[AMP_ROLE_COUNT]; /* ABI 1.3's amp_operand_flag bits */
    unsigned *layer_classes; /* [layer_count] from host->layer_op_classes */
} amp_policy;

/* Builds a policy with low dtype `low` and reads op.* / layer.* from the
 * plugin's section. On failure the host holds the message, *out is NULL. */
int amp_policy_create(const amp_host_api *host, amp_dtype low, amp_policy **out);
void amp_policy_destroy(amp_policy *p);
/* Fills out (host sets struct_size) for `layer` (a model layer or "loss"). */
int amp_policy_resolve(const amp_policy *p, const char *layer, amp_layer_precision *out);

/* Parses `key` of the plugin's section into *out (preset to the default)
 * as one of names[count] ("hybrid", "e4m3"); 0, or -1 after key_error
 * listing the choices. */
int amp_policy_choice(const amp_host_api *host, const char *key, const char *const *names,
                      int count, int *out);
/* Reads `key` as an integer in lo..hi (preset *out to the default); a value
 * that is not finite, not whole or out of range is a key_error. 0 or -1. */
int amp_policy_integer(const amp_host_api *host, const char *key, double lo, double hi,
                       int64_t *out);
/* Turns on scaled operands: INPUT and WEIGHT E4M3, GRAD_OUTPUT in
 * `grad_format`, all with `scaling` and `history_len`. Needs a host of ABI
 * 1.2 (layer_op_classes); -1 after host->error otherwise. */
int amp_policy_set_scaled(amp_policy *p, uint32_t grad_format, uint32_t scaling,
                          uint32_t history_len);
/* The same with each role's format and flags given ([AMP_ROLE_COUNT]). */
int amp_policy_set_operands(amp_policy *p, const amp_operand_format *operand,
                            const uint32_t *flags);

/* Vtable adaptors so each plugin's table is three lines. */
void amp_policy_vt_fini(void *self);
int amp_policy_vt_resolve(void *self, const char *layer, amp_layer_precision *out);
int amp_policy_vt_requires_scaler(void *self);
int amp_policy_vt_allow_tf32(void *self);

#endif
