/* The state of a model's scaled GEMM operands (ABI 1.2's amp_operand_format):
 * one slot per (layer, role) the precision policy put in a scaled format.
 * The layer kit's quantizers read a slot's scale and add what they saw to
 * the slot's stats for this optimizer step; at the end of the step the host
 * reduces those stats across data-parallel ranks, pushes the amax into the
 * slot's history and asks the policy (scale_update, or the default rule)
 * for the next scale. The scales and histories are training state: they
 * travel in checkpoints and a resume continues them bit for bit. */
#ifndef AMP_FORMATS_SCALED_H
#define AMP_FORMATS_SCALED_H

#include <stddef.h>
#include <stdint.h>

#include "amptrain/plugin.h"
#include "backend/kernels/fp8.h"
#include "backend/kernels/nvfp4.h"

struct amp_format_family;

typedef struct amp_scaled_slot {
    int layer;              /* index into the model's layer table */
    int role;               /* amp_gemm_role */
    amp_operand_format fmt; /* from the policy */
    const struct amp_format_family *family; /* what serves fmt (family.h); NULL: none */
    uint32_t flags;         /* the policy's amp_operand_flag bits (NVFP4) */
    float scale;            /* DELAYED: quantizes this step; CURRENT: the last one used */
    double *history;        /* DELAYED: [fmt.history_len], circular, newest at [head] */
    uint32_t head, count;   /* count <= history_len values written so far */
    amp_fp8_stats step;     /* this optimizer step so far (host copy; amax max, counts summed) */
    amp_fp8_stats last;     /* the last finished step's, for telemetry */
    int64_t kept;           /* updates that kept the previous scale (amax 0 or not finite) */
    int claimed;            /* a layer object quantizes it (amp_format_scaled_slot) */
    /* NVFP4: the block scales and rounding bias of this step and of the
     * last finished one (this rank's), and the quantizes of this step so
     * far (each one's stochastic-rounding key takes it, so every tensor
     * of a step gets its own bits) */
    amp_nvfp4_stats nv_step, nv_last;
    uint32_t nv_calls;
} amp_scaled_slot;

/* The policy's scale_update (amp_precision_vtable), or NULL for the default. */
typedef int (*amp_scale_update_fn)(void *ctx, const amp_scale_stats *st, double *scale);

typedef struct amp_scaled {
    int nlayers, nslots;
    amp_scaled_slot *slot;  /* [nslots], layer-major, roles in amp_gemm_role order */
    int *index;             /* [nlayers * AMP_ROLE_COUNT]: slot index or -1 */
    const char *const *layer_names; /* [nlayers], for the hook; owned by the caller */
    amp_scale_update_fn update;
    void *update_ctx;
    /* The policy's name and its host's message buffer (cleared before each
     * call of `update`, read after it), so that a bad scale of either
     * scaling names the policy and the step; NULL without a policy. */
    const char *policy;
    char *policy_err;
    int64_t step;           /* optimizer steps finished (the stats' step index) */
    double *ordered; /* the newest-first history handed to a recipe hook, sized once */
    uint64_t seed;          /* the run's seed: NVFP4's stochastic rounding and Hadamard signs */
    /* The loss scale of the training step in progress (1 outside one): a
     * GRAD_OUTPUT operand holds gradients times it, while its slot's amax,
     * history and scale are kept in unscaled units, so a change of the loss
     * scale does not reach the FP8 scales (amp_scaled_unit). */
    float loss_scale;
    amp_scaled_slot *saved; /* [nslots]: the slots while an evaluation runs */
} amp_scaled;

/* Slots for every (layer, role) of prec[nlayers] whose format is not
 * AMP_FORMAT_DTYPE (an empty state when there is none). Every scale starts
 * at 1, every history empty. 0, or -1 with err (out of memory). */
int amp_scaled_create(amp_scaled **out, int nlayers, const amp_layer_precision *prec,
                      const char *const *layer_names, char *err, size_t errlen);
void amp_scaled_free(amp_scaled *s);

/* The slot of (layer, role), or NULL when that operand is not scaled. */
amp_scaled_slot *amp_scaled_find(amp_scaled *s, int layer, int role);

/* What the values of slot sl's operand are multiplied by against the
 * slot's units: the loss scale for a GRAD_OUTPUT, 1 for the others. A slot's
 * scale quantizes its operand as scale / unit; its amax is divided by it. */
float amp_scaled_unit(const amp_scaled *s, const amp_scaled_slot *sl);

/* An evaluation's forward passes quantize with the current scales but
 * leave no trace in the state: eval_begin keeps every slot (scale, this
 * step's stats, kept count, NVFP4 tensor count), eval_end puts them back,
 * so training is the same with and without evaluations. */
void amp_scaled_eval_begin(amp_scaled *s);
void amp_scaled_eval_end(amp_scaled *s);

/* The largest finite value of an amp_format (448, 57344, 6; 0 for DTYPE). */
double amp_format_max(uint32_t format);
/* The stochastic-rounding key of the next quantize of slot sl this step
 * (advances sl's count). */
uint64_t amp_scaled_nvfp4_key(amp_scaled *s, amp_scaled_slot *sl);
/* The Hadamard transform's signs of this step. */
uint32_t amp_scaled_nvfp4_signs(const amp_scaled *s);
/* amp_format as the backend's amp_fp8_format. */
int amp_format_fp8(uint32_t format);

/* The host's rule when a policy has no scale_update: format_max / the max
 * of st->amax and st's history (a NaN wins), or st->scale (*kept = 1) when
 * that is 0 or not finite. */
double amp_scaled_default_rule(const amp_scale_stats *st, int *kept);

/* CURRENT scaling: the scale that quantizes a tensor whose amax is `amax`
 * (this tensor's own), from the hook or the default rule; sets sl->scale.
 * 0, or -1 with err when the hook fails or returns a scale that is not
 * finite and > 0 ("precision plugin 'P' at step N: ..." with s->policy,
 * the hook's own message after it). */
int amp_scaled_current(amp_scaled *s, amp_scaled_slot *sl, float amax, char *err, size_t errlen);

/* The end of an optimizer step, after every slot's `step` holds the step's
 * stats (reduced across ranks): a GRAD_OUTPUT's amax is divided by the
 * step's loss scale; each DELAYED slot pushes its amax into its history and
 * takes its next scale; every slot's step moves to `last` and is zeroed;
 * s->step advances and s->loss_scale returns to 1. 0, or -1 with err (as amp_scaled_current). */
int amp_scaled_step_end(amp_scaled *s, char *err, size_t errlen);

#endif
