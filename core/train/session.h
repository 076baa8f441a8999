/* A training session: plugins, backend, data, model and the AMP step as
 * PyTorch lays it out (cast -> forward -> scaled backward -> unscale+check ->
 * clip -> step or skip -> scaler update). The CLI, the tests and the
 * benchmark all drive this. */
#ifndef AMP_SESSION_H
#define AMP_SESSION_H

#include <signal.h>
#include <stdint.h>

#include "io/checkpoint.h"
#include "data/data.h"
#include "data/dataset.h"
#include "dist/dist.h"
#include "plugins/loader.h"
#include "data/batcher.h"
#include "model.h"
#include "formats/scaled.h"
#include "config/settings.h"
#include "data/text.h"
#include "host_trips.h"

typedef struct amp_step_record {
    int64_t step;      /* 1-based index of the step just run */
    int64_t epoch;     /* 0-based epoch the step's data came from */
    double loss;       /* mean training loss of the step's examples */
    double lr;         /* learning rate applied (0 when skipped) */
    double scale;      /* loss scale the step's backward used */
    int skipped;
    double grad_norm;  /* unscaled global L2 norm (inf when non-finite) */
    uint64_t underflow, overflow; /* this step's 16-bit rounding losses, all layers (all ranks) */
    double step_ms;
    double comm_ms;    /* of step_ms, waiting for the other ranks (0 alone) */
    int stop_signal;   /* several ranks: the largest *stop_flag any rank had
                        * during this step (all ranks see the same); 0 alone */
} amp_step_record;

typedef struct amp_session {
    amp_settings set;
    amp_config *cfg;
    amp_plugin precision;
    amp_plugin scaler;
    /* The scaled GEMM operands' state: the model's (NULL: the model has
     * none); the policy's scale_update wired in after model creation. */
    amp_scaled *scaled;
    amp_backend *be;
    const amp_model_ops *model_ops;
    amp_model *model;
    const amp_data_kind *data_ops; /* [data] dataset (dataset.h), over `data` */
    amp_data_view data;     /* the settings and train/test/text below, as data_ops sees them */
    amp_dataset train, test;
    amp_text text;          /* [data] dataset = text */
    amp_batcher *batcher;
    int nlayers;            /* the model's layers (model->desc.layers) */
    const char **layer_ptrs; /* [nlayers] their names, for the plugins */
    unsigned *layer_classes; /* [nlayers] their op class bits, for the plugins */
    amp_step_stats *hstats; /* host copy of the step record (amp_model_stats_bytes) */
    int64_t steps_per_epoch, total_steps;
    int64_t step, applied, skipped;
    double dtype_max;       /* narrowest 16-bit range in use (for the scaler stats) */
    amp_round_count *totals; /* [2 * nlayers] training-step rounding losses (AMP_ROUND_FWD/GRAD) */
    int64_t inject_inf_step; /* test hook: poison a gradient at this 0-based step (-1 off);
                              * with several ranks only this rank's gradients */
    /* data parallel (core/dist/): the caller's context, NULL alone */
    amp_dist *dist;
    amp_dist_grads *grads;   /* this session's gradient reduction (NULL alone) */
    size_t shard;            /* [dist] shard: elements per rank (0: unsharded) */
    /* [dist] shard = gradients at accumulate = 1: the model keeps only its
     * shard of the gradients (amp_model.grad_of, amp_dist_grads_slot). At
     * accumulate > 1 each micro-batch adds into the whole local array, as
     * unsharded, so that the sums add the same numbers in the same order. */
    int shard_grads;
    /* Sharded, the masters and moments are gathered whole on rank 0 only
     * (its checkpoints and weights file); the other ranks hold none of the
     * whole arrays below. */
    float *gather;           /* [world * shard] host staging of a gathered FP32 array on
                              * rank 0; [shard] elsewhere, what this rank sends */
    float *opt_full;         /* [opt_buffers * nparams] the gathered moments (rank 0) */
    int64_t opt_full_step;   /* the step they were gathered after (-1: never), every rank */
    float *master_full;      /* [nparams] the gathered master weights (rank 0) */
    int64_t master_full_step;
    /* the non-finite master weights of master_full_step (rank 0's count, sent
     * to every rank with the gather or read from the restored checkpoint), and
     * the flat index of the first */
    size_t weights_bad, weights_first;
    size_t *wire_at;         /* [nparam_tensors + 1] byte offset of each tensor on the wire */
    size_t *block_bytes, *block_at; /* [world] each rank's block of it */
    uint8_t *wire, *wire_mine; /* host: the whole wire, this rank's block */
    /* NCCL (amp_dist_grads_on_device): the wire gathered in device memory
     * instead, rank r's block at r * dev_block (the longest block, padded
     * to 16 bytes: ncclAllGather moves equal blocks) */
    uint8_t *dev_wire;
    size_t dev_block;
    void *dev16;             /* backend scratch of 16-bit values */
    uint64_t weights_sent;   /* bytes this rank sent of the weights in the last step */
    int rank, world;
    int64_t check_every;     /* replica check every K steps (0 off) */
    /* [dist] sync_batchnorm on several ranks: the hook the model's batch
     * norm sums its statistics over the ranks through (sum NULL: off) */
    amp_allsum bn_sync;
    int poisoned;            /* the injected inf went in this step */
    /* A signal number set asynchronously (SIGINT/SIGTERM) or NULL: with
     * several ranks each step's statistics carry it, so all ranks learn of
     * a signal that reached any of them in the same step. */
    const volatile sig_atomic_t *stop_flag;
    int stop_agreed;
    char *data_id;           /* the data's fingerprint (data_id.h), once asked for */
    /* The last evaluation was cut short by that signal (the largest any
     * rank had; all ranks agree), its loss and accuracy partial: 0 when it
     * covered the whole split. */
    int eval_stopped;
    amp_host_trips *trips;   /* round trips inside forward/backward (NULL: no step yet) */
} amp_session;

/* Builds everything from a parsed config. On failure *out is NULL and err
 * holds the message; the return value is the exit code to use (2 config, 1
 * runtime). */
int amp_session_open(amp_session **out, amp_config *cfg, char *err, size_t errlen);
/* The same as one rank of a data-parallel run: dist (owned by the caller,
 * outliving the session; NULL = alone) gives the rank and the world size.
 * Every step then takes batch_size x accumulate x world rows, this rank
 * the slice the batcher gives it; gradients and statistics are reduced
 * across ranks (dist.h); evaluation is split across ranks and summed. */
int amp_session_open_ex(amp_session **out, amp_config *cfg, amp_dist *dist, char *err,
                        size_t errlen);
void amp_session_close(amp_session *s);

/* One optimizer step (accumulate micro-batches). 0, or -1 with err. */
int amp_session_step(amp_session *s, amp_step_record *rec, char *err, size_t errlen);

/* Several ranks: checks that every rank resolved the same config (every
 * key, defaults included) and has the same data and model sizes; the
 * ranks' collectives only match when they do. 0, or 2 on every rank with
 * the differences in rank 0's err (the others' is empty). Alone: 0. */
int amp_session_check_ranks(amp_session *s, char *err, size_t errlen);

/* Loss and accuracy over the whole test split under the policy (each rank
 * takes a slice; the sums are reduced). A stop signal (*stop_flag) ends it
 * between batches, so a long evaluation does not hold a stop back: then
 * eval_stopped is the signal and the numbers are partial. */
int amp_session_evaluate(amp_session *s, double *loss, double *acc, char *err, size_t errlen);

/* The learning rate of the next applied step. */
double amp_session_lr(const amp_session *s);

/* The optimizer update of the master weights with the step's (unscaled)
 * gradients: one call per run of tensors with the same weight-decay flag
 * (amp_param_desc.decay: nanoGPT decays 2-D tensors only). t is the 1-based
 * count of applied steps. 0, or -1 with be->err. */
int amp_model_optimizer_step(amp_model *m, const amp_settings *st, double lr, int64_t t);

/* Rows (or tokens) whose losses one optimizer step averages: all ranks'. */
int64_t amp_session_rows_per_step(const amp_session *s);

/* Master weights to host memory ([nparams] floats, caller frees). */
float *amp_session_weights(amp_session *s, char *err, size_t errlen);

/* A path from the config (e.g. [model] init) as the session opens it:
 * relative paths are relative to the config file's folder. */
void amp_session_resolve_path(const amp_session *s, const char *p, char *out, size_t outlen);

/* 0 when every master weight is finite; 1 when one is not, with err naming
 * the first (tensor and index) and the count; -1 when they cannot be read. */
int amp_session_check_weights(amp_session *s, char *err, size_t errlen);

/* Writes the master weights as safetensors with the model's parameter
 * table names and shapes (PyTorch's). */
int amp_session_save_weights(amp_session *s, const char *path, char *err, size_t errlen);

/* Checkpoints (session_ckpt.c). snapshot fills ck with the session's state
 * (counters, model shape, plugins, resolved config, master weights,
 * optimizer and scaler state, rounding totals) in buffers that
 * snapshot_free releases; the run-level fields (losses, metrics, wall time)
 * are the caller's. 0, or -1 with err. */
int amp_session_snapshot(amp_session *s, amp_checkpoint *ck, char *err, size_t errlen);
/* [dist] shard: every rank calls this before rank 0 takes a snapshot or
 * reads the weights (amp_session_weights, save_weights) and before any
 * rank checks them (check_weights): the moments and the FP32 master
 * weights are gathered whole on rank 0's host, and every rank learns
 * rank 0's count of non-finite ones. No-op unsharded. 0, or -1. */
int amp_session_gather_optim(amp_session *s, char *err, size_t errlen);
/* weights_bad and weights_first of the whole master weights w[nparams]. */
void amp_session_count_bad(amp_session *s, const float *w);
/* Sharded (session_shard.c): the wire and buffers, after the model; their
 * release; and the gather of the updated shards into every rank's working
 * copies in their working dtypes (after each applied step, and before the
 * first forward after the weights were put). 0, or -1 with err. */
int amp_session_shard_open(amp_session *s, char *err, size_t errlen);
/* After the gradient reduction opened: the device wire where its
 * transport gathers on the device. 0, or -1. */
int amp_session_shard_device(amp_session *s, char *err, size_t errlen);
void amp_session_shard_close(amp_session *s);
int amp_session_share_weights(amp_session *s, char *err, size_t errlen);
void amp_session_snapshot_free(amp_checkpoint *ck);

/* Continues from ck: refuses (returns 2, err says what differs) a checkpoint
 * of another plugin, plugin ABI, model shape, optimizer or a config that
 * differs in a key that changes the math; 1 on a runtime failure; 0 when
 * the session now stands exactly where the checkpointed run stood. */
int amp_session_restore(amp_session *s, const amp_checkpoint *ck, char *err, size_t errlen);

#endif
