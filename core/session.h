/* A training session: plugins, backend, data, model and the AMP step as
 * PyTorch lays it out (cast -> forward -> scaled backward -> unscale+check ->
 * clip -> step or skip -> scaler update). The CLI, the tests and the
 * benchmark all drive this. */
#ifndef AMP_SESSION_H
#define AMP_SESSION_H

#include <stdint.h>

#include "io/checkpoint.h"
#include "data.h"
#include "loader.h"
#include "batcher.h"
#include "model.h"
#include "settings.h"
#include "text.h"

typedef struct amp_step_record {
    int64_t step;      /* 1-based index of the step just run */
    int64_t epoch;     /* 0-based epoch the step's data came from */
    double loss;       /* mean training loss of the step's examples */
    double lr;         /* learning rate applied (0 when skipped) */
    double scale;      /* loss scale the step's backward used */
    int skipped;
    double grad_norm;  /* unscaled global L2 norm (inf when non-finite) */
    uint64_t underflow, overflow; /* this step's 16-bit rounding losses, all layers */
    double step_ms;
} amp_step_record;

typedef struct amp_session {
    amp_settings set;
    amp_config *cfg;
    amp_plugin precision;
    amp_plugin scaler;
    amp_backend *be;
    const amp_model_ops *model_ops;
    amp_model *model;
    amp_dataset train, test;
    amp_text text;          /* [data] dataset = text */
    amp_batcher *batcher;
    int nlayers;            /* the model's layers (model->desc.layers) */
    const char **layer_ptrs; /* [nlayers] their names, for the plugins */
    amp_step_stats *hstats; /* host copy of the step record (amp_model_stats_bytes) */
    int64_t steps_per_epoch, total_steps;
    int64_t step, applied, skipped;
    double dtype_max;       /* narrowest 16-bit range in use (for the scaler stats) */
    amp_round_count *totals; /* [2 * nlayers] training-step rounding losses (AMP_ROUND_FWD/GRAD) */
    int64_t inject_inf_step; /* test hook: poison a gradient at this 0-based step (-1 off) */
} amp_session;

/* Builds everything from a parsed config. On failure *out is NULL and err
 * holds the message; the return value is the exit code to use (2 config, 1
 * runtime). */
int amp_session_open(amp_session **out, amp_config *cfg, char *err, size_t errlen);
void amp_session_close(amp_session *s);

/* One optimizer step (accumulate micro-batches). 0, or -1 with err. */
int amp_session_step(amp_session *s, amp_step_record *rec, char *err, size_t errlen);

/* Loss and accuracy over the whole test split under the policy. */
int amp_session_evaluate(amp_session *s, double *loss, double *acc, char *err, size_t errlen);

/* The learning rate of the next applied step. */
double amp_session_lr(const amp_session *s);

/* The optimizer update of the master weights with the step's (unscaled)
 * gradients: one call per run of tensors with the same weight-decay flag
 * (amp_param_desc.decay: nanoGPT decays 2-D tensors only). t is the 1-based
 * count of applied steps. 0, or -1 with be->err. */
int amp_model_optimizer_step(amp_model *m, const amp_settings *st, double lr, int64_t t);

/* Rows (or tokens) whose losses one optimizer step averages. */
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
void amp_session_snapshot_free(amp_checkpoint *ck);

/* Continues from ck: refuses (returns 2, err says what differs) a checkpoint
 * of another plugin, plugin ABI, model shape, optimizer or a config that
 * differs in a key that changes the math; 1 on a runtime failure; 0 when
 * the session now stands exactly where the checkpointed run stood. */
int amp_session_restore(amp_session *s, const amp_checkpoint *ck, char *err, size_t errlen);

#endif
