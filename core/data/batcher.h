/* Batchers: how a dataset hands the training loop its micro-batches and its
 * evaluation rows. The session keeps the step; a batcher keeps where the
 * data stands (epoch order, cursor, host staging) and is rebuilt exactly
 * from (seed, epoch, cursor, step) on resume. IDX rows and the tiny task
 * use the row batcher below; other data (text windows) bring their own
 * ops. */
#ifndef AMP_BATCHER_H
#define AMP_BATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"

typedef struct amp_batcher amp_batcher;

typedef struct amp_batcher_ops {
    /* Called before each optimizer step's micro-batches: starts a new epoch
     * when rows_per_step more rows do not fit in this one (the ragged tail
     * is dropped). step is the 0-based step about to run. rows_per_step is
     * the GLOBAL count (all ranks): the step's rows are one window of the
     * epoch's order whatever the number of ranks, and rank r takes the r-th
     * of `world` equal consecutive slices of it, so the global batch of a
     * step depends on the seed and the step alone. */
    void (*begin_step)(amp_batcher *b, int64_t step, int64_t rows_per_step);
    /* Host staging of this rank's next `rows` training rows; returns
     * b->hx/b->hy filled (valid until the next call). */
    void (*next)(amp_batcher *b, int rows);
    /* Host staging of evaluation rows [start, start + rows). */
    void (*eval)(amp_batcher *b, int64_t start, int rows);
    /* Stands the batcher where a checkpointed run stood. */
    void (*restore)(amp_batcher *b, int64_t epoch, int64_t cursor, int64_t step);
    void (*destroy)(amp_batcher *b);
} amp_batcher_ops;

struct amp_batcher {
    const amp_batcher_ops *ops;
    int rank, world;        /* data parallel: this rank's slice of each step (0 of 1 alone) */
    int64_t epoch, cursor;  /* saved in checkpoints; cursor is global (all ranks) */
    int64_t train_rows;     /* rows an epoch can hand out */
    int64_t eval_rows;      /* rows of the evaluation split */
    void *hx;               /* [batch, row_x] host staging: floats or int32 tokens */
    int32_t *hy;            /* [batch, row_y] */
    size_t x_row_bytes;     /* bytes of one row of hx */
    size_t y_row_count;     /* labels per row */
    void *impl;
};

/* The row batcher over (train, test): a seeded shuffle per epoch
 * (amp_dataset_order) and gathers of whole rows. NULL when out of memory. */
amp_batcher *amp_batcher_rows_create(const amp_dataset *train, const amp_dataset *test,
                                     uint64_t seed, int shuffle, int batch);
void amp_batcher_free(amp_batcher *b);

#endif
