/* The model interface: one ops table per model, in the style of
 * amp_backend. A model is written once against the backend op table and
 * runs on every backend under every precision policy; the session, the
 * checkpoints, safetensors, the summary and `amptrain ab` see only this
 * interface and never name a model.
 *
 * The life of a model, as the session drives it:
 *   1. describe(): reads the model's own [model] keys and the data's shape
 *      and fills the parameter table (PyTorch names, shapes, offsets into
 *      one flat FP32 array) and the layer table (names and op classes).
 *      Nothing is allocated on the backend yet: the precision policy is
 *      asked about each layer name first.
 *   2. amp_model_create(): the common part (master weights, gradients,
 *      optimizer state, the step stats record, the input batch) and the
 *      model's own buffers are carved out of one arena per memory category
 *      by running the model's layout() twice (measure, then hand out).
 *   3. per step: init_params(seed) once, cast_weights() once per optimizer
 *      step, then forward()/backward() per micro-batch.
 *
 * Forward/backward are explicit per-layer functions (as llm.c writes them),
 * no graph engine. Every place a value is rounded into 16 bits counts what
 * it lost into the layer's slot of the stats record
 * (amp_model_rounds(m, layer, AMP_ROUND_FWD or AMP_ROUND_GRAD)). */
#ifndef AMP_MODEL_H
#define AMP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/arena.h"
#include "backend/backend.h"
#include "io/config.h"
#include "formats/scaled.h"

#define AMP_MODEL_NAME_MAX 96 /* parameter and layer names, with the NUL */
#define AMP_MODEL_MAX_DIMS 4

/* One tensor of the parameter table. Names and layouts are PyTorch's
 * state_dict ones ("fc1.weight" [out, in]), so safetensors files move
 * between amptrain and PyTorch unchanged. */
typedef struct amp_param_desc {
    char name[AMP_MODEL_NAME_MAX];
    int ndim;      /* 0 for a scalar (one element), as PyTorch's num_batches_tracked */
    int64_t shape[AMP_MODEL_MAX_DIMS];
    size_t offset; /* element offset into the flat parameter arrays */
    size_t numel;
    int layer;     /* index into the layer table: whose precision/telemetry */
    int decay;     /* 1: weight decay applies (nanoGPT: 2-D tensors only) */
    int buffer;    /* 1: a buffer, not a trained parameter (BatchNorm's running
                    * statistics): stored in the flat arrays after every trained
                    * tensor, so checkpoints and safetensors carry it, but it has
                    * no gradient and the optimizer, unscale and clipping stop at
                    * desc.ntrained. The model updates it in forward(). */
    char tied[AMP_MODEL_NAME_MAX]; /* the name a tied weight also has in a PyTorch
                                    * state_dict (the GPT's lm_head.weight for
                                    * transformer.wte.weight); "" for none. [model] init
                                    * takes the tensor under either name, or both when
                                    * equal (one tensor here, stored once) */
} amp_param_desc;

/* One layer: the unit a precision policy decides for and telemetry counts. */
typedef struct amp_layer_desc {
    char name[AMP_MODEL_NAME_MAX];
    unsigned op_classes; /* bit (1u << AMP_OP_GEMM) ... : the op classes it runs */
} amp_layer_desc;

/* What the data gives a model. */
typedef struct amp_model_input {
    int batch;        /* rows (sequences, images) per micro-batch: buffers are sized for it */
    int features;     /* values per row of x (flattened) */
    int channels, height, width; /* image rows (features = c*h*w); 0 for flat rows */
    int classes;      /* label range (vocabulary size for text) */
    int targets;      /* labels per row (1; the sequence length for text) */
    int x_is_tokens;  /* x holds int32 token ids instead of floats */
} amp_model_input;

typedef struct amp_model_desc {
    amp_param_desc *params; /* [nparam_tensors], malloc'd; amp_model_desc_free */
    int nparam_tensors;
    size_t nparams;         /* elements in all tensors */
    size_t ntrained;        /* elements of the trained tensors: the prefix [0, ntrained)
                             * of the flat arrays; buffers follow (== nparams without) */
    amp_layer_desc *layers; /* [nlayers], malloc'd */
    int nlayers;
} amp_model_desc;

typedef struct amp_model amp_model;
typedef struct amp_kit amp_kit;

/* Arguments of a forward pass. */
typedef struct amp_forward_args {
    int rows;               /* <= the batch the model was created for */
    int for_backward;       /* also prepare the loss gradient for backward(); this is
                             * also the training mode (PyTorch's model.train(): batch
                             * norm uses and tracks batch statistics); 0 is evaluation */
    float loss_grad_scale;  /* d(loss)/d(per-row loss): loss_scale / rows per optimizer step */
} amp_forward_args;

/* Arguments of a backward pass (after a forward with for_backward). */
typedef struct amp_backward_args {
    int rows;
    int accumulate;         /* add into m->grads instead of overwriting them */
} amp_backward_args;

/* Where a parameter tensor's working copy lives (amp_model_ops.working_copy). */
typedef struct amp_working_copy {
    void *ptr;      /* [numel] of dt, or of FP32 holding dt's values when f32_store */
    amp_dtype dt;   /* the dtype the master weights round to */
    int f32_store;
    int layer;      /* whose forward counts the rounding goes to */
    int also_f32;   /* a forward reads the FP32 weights too (a tied weight: the GPT's wte,
                     * the LM head's 16-bit copy and the embedding's FP32 lookup) */
} amp_working_copy;

typedef struct amp_model_ops {
    const char *name; /* "[model] name" */
    /* Its own [model] keys (beside name and init) as a settings table
     * (settings_table.h: read by describe, printed in docs/settings.md), or
     * NULL: such a key set for another model is explained, not unknown. */
    const struct amp_setting *settings;
    /* Reads the model's [model] keys (through cfg, so unknown keys stay
     * errors) and fills desc for the data in `in`. Allocates only host
     * memory owned by desc. 0, or -1 with a "file:line: ..." message. */
    int (*describe)(amp_model_desc *desc, amp_config *cfg, const amp_model_input *in, char *err,
                    size_t errlen);
    /* Builds the model's private state (m->impl) on the host; called once
     * before layout. m->desc, m->prec and m->input are set. */
    int (*create)(amp_model *m, amp_config *cfg, char *err, size_t errlen);
    /* Carves the model's buffers from m->mem (amp_arena_take); run twice,
     * once measuring (pointers come back NULL) and once for real. Must take
     * the same sizes in the same order both times. */
    void (*layout)(amp_model *m);
    void (*destroy)(amp_model *m); /* frees m->impl (the arenas are the core's) */
    /* Writes the initial master weights for this seed (PyTorch's default
     * init for the layer kinds). Host-side RNG, then one upload. */
    int (*init_params)(amp_model *m, uint64_t seed);
    /* Rounds the master weights into the working copies (counting what is
     * lost); once per optimizer step, on a zeroed stats record. A model with
     * working_copy starts it with amp_model_cast_reuse (models/layers/:
     * amp_kit_cast_weights is the whole frame). */
    int (*cast_weights)(amp_model *m);
    /* Optional: tensor i's working copy, when it has one: fills *wc and
     * returns 1 (0: the tensor is used from the master weights). With it,
     * and a backend with optim_step_cast, the optimizer writes the working
     * copies in its own pass over the weights (the counts of that cast are
     * the layer kit's state, m->kit: a model with working_copy has one). */
    int (*working_copy)(amp_model *m, int tensor, amp_working_copy *wc);
    /* Forward over the batch in m->x/m->y: adds the loss sum and the metric
     * (hits) to m->stats. */
    int (*forward)(amp_model *m, const amp_forward_args *a);
    /* Back-propagates into m->grads (scaled as the forward asked). */
    int (*backward)(amp_model *m, const amp_backward_args *a);
    /* Optional (NULL where a model has none; text models for `amptrain
     * sample`): after a forward, copies the FP32 logits of row `row` at
     * position `pos` into host[input.classes]. */
    int (*logits)(amp_model *m, int row, int pos, float *host);
} amp_model_ops;

struct amp_model {
    const amp_model_ops *ops;
    amp_backend *be;
    amp_model_desc desc;
    amp_layer_precision *prec; /* [desc.nlayers], from the precision policy */
    amp_model_input input;
    int opt_buffers;           /* FP32 optimizer arrays per parameter (0, 1 or 2) */
    amp_arena mem[AMP_MEM_COUNT];
    /* the common part, carved by the core before the model's layout */
    float *master;             /* [nparams] FP32 master weights; sharded: [opt_len], elements
                                * [opt_lo, opt_lo + opt_len) of the flat array */
    float *grads;              /* [grads_len]: elements [grads_lo, grads_lo + grads_len) of
                                * the flat array, [nparams] from 0 unless grad_of is set */
    size_t grads_lo, grads_len;
    /* [dist] shard = gradients: the gradients that outlive their bucket's
     * reduce-scatter are this rank's shard only (grads). The backward
     * writes tensor t's gradient where grad_of(grad_ctx, t) says: its
     * bucket's buffer, zeroed when the bucket takes it and given back
     * once the bucket is summed. NULL: into grads (the whole array). */
    float *(*grad_of)(void *ctx, int tensor);
    void *grad_ctx;
    float *opt[2];             /* [opt_len] each, or NULL: elements [opt_lo, opt_lo + opt_len) */
    size_t opt_lo, opt_len;    /* this rank's shard of the flat array ([dist] shard) */
    /* [dist] shard: the masters are this rank's shard only; what the
     * forward reads in FP32 every rank holds in `wts` (AMP_MEM_WORKING): the
     * tensors without a 16-bit working copy (amp_model_ops.working_copy
     * returns 0: FP32 layers, norms, embeddings, FP8 copies' sources) and
     * the buffers, wts_off[t] elements in (-1: a tensor with a 16-bit copy only,
     * which the session writes from the gathered shards). copies_stale:
     * the copies do not hold the masters yet (after amp_model_put_master). */
    int sharded, copies_stale;
    float *wts;
    size_t *wts_off;           /* [nparam_tensors] */
    size_t wts_len;            /* elements of wts */
    void *x;                   /* [batch, features] f32, or [batch, features] int32 tokens */
    /* What m->x holds: F32 (or int32 tokens) unless the model's create sets
     * a 16-bit dtype, which it may where the backend has upload_round; the
     * batch is then rounded on its way in, counted into the forward counts
     * of layer x_round_layer (m->x is half the size and no FP32 copy of
     * the batch exists on the device). */
    amp_dtype x_dtype;
    int x_round_layer;
    /* The layer kit's state (models/layers/layers.h): the working copies,
     * the operand scratch and the optimizer's fused cast; NULL for a model
     * written without the kit. */
    amp_kit *kit;
    /* The scaled GEMM operands' state (scaled.h): one slot per (layer,
     * role) the policy put in an FP8/MX format; never NULL after create
     * (no slots when the policy has none). */
    amp_scaled *scaled;
    /* On a device backend: [nslots] step records in device memory the
     * quantize ops add to, brought into slot->step by
     * amp_model_scaled_collect (NULL on the CPU: they add to slot->step). */
    amp_fp8_stats *scaled_dev;
    /* The same for NVFP4's block-scale range and rounding bias ([nslots],
     * into slot->nv_step), when a slot is NVFP4. */
    amp_nvfp4_stats *nvfp4_dev;
    const char **layer_names;  /* [desc.nlayers] into desc.layers, for scaled's hook */
    int32_t *y;                /* [batch, targets] */
    amp_step_stats *stats;     /* the step record, 2 * nlayers round counts after it */
    void *impl;
    /* Set by a data-parallel session during the backward whose gradients
     * are final (NULL otherwise); models call amp_model_grads_ready. */
    int (*grads_ready)(void *ctx, int first, int count);
    void *ready_ctx;
    /* Set by a data-parallel session with [dist] sync_batchnorm during the
     * training step's forward and backward (NULL otherwise): batch norm
     * passes it to the backend, which sums its statistics over the ranks. */
    const amp_allsum *allsum;
};

/* A model's backward calls this as soon as parameter tensors [first, first
 * + count) of its table hold their final gradient, so a data-parallel run
 * sums them across ranks while backward goes on. A model that never calls
 * it is still correct: what was not reported is reduced after backward
 * returns. Non-zero: fail the backward. */
static inline int amp_model_grads_ready(amp_model *m, int first, int count) {
    return m->grads_ready ? m->grads_ready(m->ready_ctx, first, count) : 0;
}

/* The registry: the one place that maps [model] name to a model. */
const amp_model_ops *amp_model_find(const char *name);
/* The names, NULL-terminated (for the config's choice list). */
const char *const *amp_model_names(void);
/* Adds a model (test programs do, for models that ship only with the
 * tests). -1 when the name is taken or the registry is full. */
int amp_model_register(const amp_model_ops *ops);

void amp_model_desc_free(amp_model_desc *d);
/* Appends a parameter / a layer to a description being built; the
 * parameter's offset is the running total. -1 when out of memory. */
int amp_model_desc_add_layer(amp_model_desc *d, const char *name, unsigned op_classes);
int amp_model_desc_add_param(amp_model_desc *d, const char *name, int layer, int decay, int ndim,
                             const int64_t *shape);
/* Appends a buffer (amp_param_desc.buffer); every buffer comes after every
 * parameter: add_param after add_buffer fails (-1). */
int amp_model_desc_add_buffer(amp_model_desc *d, const char *name, int layer, int ndim,
                              const int64_t *shape);
/* Names the last tensor added also by `tied` (amp_param_desc.tied). */
void amp_model_desc_tie_last(amp_model_desc *d, const char *tied);
/* Index of the tensor called name, or -1. */
int amp_model_desc_find(const amp_model_desc *d, const char *name);

/* Creates the model on be: runs ops->create, carves the arenas, checks the
 * host memory bound, allocates and zeroes grads and optimizer state.
 * Takes ownership of *desc (it is moved into m->desc) and copies prec. On
 * failure *out is NULL and err says why. */
int amp_model_create(amp_model **out, const amp_model_ops *ops, amp_backend *be,
                     amp_model_desc *desc, const amp_layer_precision *prec,
                     const amp_model_input *in, int opt_buffers, amp_config *cfg, char *err,
                     size_t errlen);
/* The same with the master weights and optimizer state for elements
 * [opt_lo, opt_lo + opt_len) of the flat array only (one rank's shard,
 * [dist] shard; opt_len counts the padding past the trained elements) and
 * the FP32 weights the forward reads in `wts` (see amp_model.sharded);
 * with shard_grads the gradients too (amp_model.grads, grad_of).
 * amp_model_create is unsharded. */
int amp_model_create_sharded(amp_model **out, const amp_model_ops *ops, amp_backend *be,
                             amp_model_desc *desc, const amp_layer_precision *prec,
                             const amp_model_input *in, int opt_buffers, size_t opt_lo,
                             size_t opt_len, int shard_grads, amp_config *cfg, char *err,
                             size_t errlen);
/* The model's weights from host[nparams] (the flat array): unsharded into
 * master; sharded, this rank's shard into master and the FP32 tensors and
 * buffers into wts (the 16-bit copies are then stale until the session
 * gathers the shards). 0, or -1 with be->err. */
int amp_model_put_master(amp_model *m, const float *host);
/* Whether tensor t has a 16-bit working copy, which the session writes
 * from the gathered shards when sharded (*wc filled). */
int amp_model_copy16(amp_model *m, int t, amp_working_copy *wc);
void amp_model_free(amp_model *m);

/* The one call the host makes at the end of an optimizer step, before it
 * reduces m->scaled's step stats across ranks and calls
 * amp_scaled_step_end: brings every slot's stats of this step (what the
 * kit's quantizers saw) into slot->step. On the CPU backend the quantizers
 * add into slot->step directly (host memory), so there is nothing to copy;
 * on a device it downloads m->scaled_dev (one copy, after the step's other
 * work), merges it and zeroes it. 0, or 1 with m->be->err. */
int amp_model_scaled_collect(amp_model *m);

/* The end of an evaluation that began with amp_scaled_eval_begin: what its
 * quantizers added to the step records (device ones zeroed) is dropped and
 * every slot is as before, so evaluating never changes training. 0, or 1
 * with m->be->err. */
int amp_model_scaled_eval_end(amp_model *m);

/* The record the quantize ops of slot `slot` add to (device memory on a
 * device backend). */
static inline amp_fp8_stats *amp_model_scaled_stats(amp_model *m, int slot) {
    return m->scaled_dev ? &m->scaled_dev[slot] : &m->scaled->slot[slot].step;
}

/* The NVFP4 record of slot `slot` (device memory on a device backend). */
static inline amp_nvfp4_stats *amp_model_nvfp4_stats(amp_model *m, int slot) {
    return m->nvfp4_dev ? &m->nvfp4_dev[slot] : &m->scaled->slot[slot].nv_step;
}

/* Bytes of the stats record (header + 2 round counts per layer). */
size_t amp_model_stats_bytes(int nlayers);
/* The round-count slot of a layer and direction inside a stats record. */
amp_round_count *amp_stats_rounds(amp_step_stats *stats, int layer, int dir);
const amp_round_count *amp_stats_rounds_const(const amp_step_stats *stats, int layer, int dir);
/* The slot of m's device-side record. */
static inline amp_round_count *amp_model_rounds(amp_model *m, int layer, int dir) {
    return amp_stats_rounds(m->stats, layer, dir);
}

#endif
