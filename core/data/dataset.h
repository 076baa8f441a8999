/* The dataset interface, beside the model interface (model.h): each
 * [data] dataset kind is one ops table in core/datasets/, found by
 * amp_data_kind_of. The session opens the data through it, asks it what
 * the data gives the model, how many rows an epoch hands out and for the
 * batcher over it; checkpoints ask it for the data's fingerprint
 * (data_id.h). See docs/datasets.md. */
#ifndef AMP_DATASET_H
#define AMP_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "batcher.h"
#include "data.h"
#include "model.h"
#include "config/settings.h"
#include "text.h"

/* What a kind reads and fills: the settings and the session's data (the
 * session's own fields; a kind never sees the session). */
typedef struct amp_data_view {
    const amp_settings *set;
    amp_dataset *train, *test; /* row datasets; train->n is the size checkpoints compare */
    amp_text *text;            /* [data] dataset = text */
    struct amp_tokens *tokens; /* [data] dataset = tokens: its own, freed by close */
    struct amp_text_bpe *bpe;  /* dataset = text with a [data] tokenizer (datasets/text_bpe.h) */
} amp_data_view;

typedef struct amp_data_kind {
    const char *name;          /* [data] dataset = name */
    amp_dataset_kind kind;     /* the settings' value for it (settings.h) */
    /* Loads the training and evaluation splits into d->train/d->test
     * (d->text for text), from the settings; path is [data] path taken
     * relative to the config's folder. 0; else err names the key or file
     * and the run exits 2 when open returns 2 (the data or its keys are
     * wrong), 1 for any other value. */
    int (*open)(amp_data_view *d, const char *path, char *err, size_t errlen);
    /* Frees what open loaded (also after a failed open); NULL when the
     * session's own fields hold nothing to free. */
    void (*close)(amp_data_view *d);
    /* What the loaded data gives the model (batch is set already). */
    void (*describe)(const amp_data_view *d, amp_model_input *in);
    /* Rows (windows, images) one training epoch can hand out. */
    int64_t (*train_rows)(const amp_data_view *d);
    /* The batcher over the data (training order, evaluation split); NULL
     * when out of memory. */
    amp_batcher *(*batcher)(amp_data_view *d);
    /* The data's fingerprint lines (data_id.h) into f: "file <sha256>
     * <bytes> <path>" per file, or one line of a generator's parameters.
     * 0, or -1 with err. */
    int (*fingerprint)(amp_data_view *d, FILE *f, char *err, size_t errlen);
    /* The data the run reads, for messages ("PATH (and ...)"); NULL for
     * generated data, whose parameters are in the config. */
    void (*source)(const amp_data_view *d, char *out, size_t outlen);
    /* A file the data writes beside the run's outputs and checkpoints
     * (vocab.json), NULL when none, and what writes it. */
    const char *beside;
    int (*write_beside)(const amp_data_view *d, FILE *f);
    int eval_is_validation;    /* the evaluation split is held-out training data: summary.json
                                * reports its loss as val_loss too */
} amp_data_kind;

/* The kind the settings chose; never NULL (the settings' choice list holds
 * the registry's names). */
const amp_data_kind *amp_data_kind_of(const amp_settings *st);

/* The kinds, NULL-terminated, in amp_dataset_kind order. */
const amp_data_kind *const *amp_data_kinds(void);
/* Their names in the same order: amp_data_kind_names, declared in
 * settings.h for [data] dataset's choices. */

/* Row datasets (amp_dataset: images or flat features, one label a row):
 * the parts their entries share. */
void amp_data_rows_describe(const amp_data_view *d, amp_model_input *in);
int64_t amp_data_rows_train_rows(const amp_data_view *d);
amp_batcher *amp_data_rows_batcher(amp_data_view *d);

#endif
