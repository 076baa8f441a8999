/* The core's own configuration keys, read and range-checked in one place.
 * The [precision] and [scaler] sections belong to their plugins except for
 * their `plugin` key. */
#ifndef AMP_SETTINGS_H
#define AMP_SETTINGS_H

#include <stdint.h>

#include "backend/backend.h"
#include "io/config.h"
#include "keys/settings_table.h"

typedef enum amp_device_choice { AMP_RUN_AUTO = 0, AMP_RUN_CPU = 1, AMP_RUN_CUDA = 2 } amp_device_choice;
typedef enum amp_dataset_kind { AMP_DATA_FASHION_MNIST = 0, AMP_DATA_TINY = 1, AMP_DATA_TEXT = 2, AMP_DATA_TOKENS = 3 } amp_dataset_kind;
/* The dataset registry's names (core/datasets/registry.c), in
 * amp_dataset_kind order: [data] dataset's choices. */
const char *const *amp_data_kind_names(void);
typedef enum amp_optim_kind { AMP_OPTIM_SGD = 0, AMP_OPTIM_ADAMW = 1 } amp_optim_kind;
typedef enum amp_schedule_kind { AMP_SCHED_CONSTANT = 0, AMP_SCHED_COSINE = 1 } amp_schedule_kind;

typedef struct amp_settings {
    /* [run] */
    const char *name;
    uint64_t seed;
    amp_device_choice device;
    int deterministic; /* deterministic library algorithms only (cuDNN convolutions) */
    int gemm_path;     /* amp_gemm_path: 16-bit GEMM operands on the CPU */
    int gemm_path_given; /* [run] gemm_path set (else AMPTRAIN_GEMM_PATH or auto) */
    int tensorboard;   /* write TensorBoard event files beside metrics.jsonl */
    /* [data] */
    amp_dataset_kind dataset;
    const char *path;
    int batch_size;
    int shuffle;
    int64_t train_limit, test_limit;          /* 0 = all */
    int64_t tiny_train, tiny_test;            /* tiny task sizes */
    int tiny_features, tiny_classes;
    double input_scale;
    int path_given;                            /* text: [data] path set (else the shipped corpus) */
    int64_t eval_iters;                        /* text, tokens: validation batches per evaluation */
    int block_size;                            /* text, tokens: window length, from [model] block_size */
    const char *train_tokens, *val_tokens;     /* tokens: a file or a glob of shards each */
    int token_format;                          /* tokens: amp_token_format */
    int64_t vocab_size;                        /* tokens: ids are below it (0: not given) */
    const char *tokenizer;                     /* tokens: a tokenizer file, or "none" */
    /* [model]: name and init here; the rest are the model's own keys */
    const char *model;                         /* a name from the model registry */
    int model_index;                           /* its index in amp_model_names() */
    const char *init;                          /* "default" or a .safetensors path */
    /* [optim] */
    amp_optim_kind optim;
    double lr, momentum, weight_decay, grad_clip, beta1, beta2, eps;
    amp_schedule_kind schedule;
    int64_t warmup_steps;
    double min_lr;                             /* cosine: the LR it decays to */
    /* [train] */
    int64_t epochs, steps, accumulate, log_every, eval_every;
    double loss_weight;                        /* multiplies the loss before backward */
    int64_t checkpoint_every;                  /* steps between checkpoints, 0 = off */
    double checkpoint_minutes;                 /* training minutes between checkpoints, 0 = off */
    int64_t keep;                              /* checkpoints kept */
    /* [precision] / [scaler] */
    const char *precision_plugin;
    const char *scaler_plugin;                 /* NULL: chosen from the policy */
    /* [dist]: data parallel (read in every run, used with more than one rank) */
    int dist_grad_bf16;                        /* grad_dtype = bf16 */
    int dist_shard;                            /* 0 none, 1 optimizer (moments sharded),
                                                * 2 gradients (and the gradients) */
    int64_t dist_bucket_kb;
    int64_t dist_check_every;                  /* 0: off (every 10 under AMPTRAIN_LOG=debug) */
    double dist_timeout;                       /* seconds */
    int dist_sync_batchnorm;                   /* batch norm over the global batch (SyncBatchNorm) */
} amp_settings;

/* Reads every core key (recording defaults for the resolved config).
 * 0, or -1 with a "file:line: ..." message. */
int amp_settings_read(amp_settings *s, amp_config *cfg, char *err, size_t errlen);

/* The core's keys (core/config/settings.c), NULL-key terminated. */
const amp_setting *amp_settings_core_table(void);

/* 1 when the arms of an A/B study may differ in (section, key): the arm's
 * label, what the runner sets, and the plugin sections under test. */
int amp_settings_ab_free(const char *section, const char *key);

#endif
