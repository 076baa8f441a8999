/* The row batcher: epochs over a dataset in a seeded order, whole rows. */
#include "batcher.h"

#include <stdlib.h>

typedef struct rows_impl {
    const amp_dataset *train, *test;
    int64_t *perm; /* this epoch's order */
    int64_t pos;   /* this rank's next row in perm */
    uint64_t seed;
    int shuffle;
} rows_impl;

static void rows_begin_step(amp_batcher *b, int64_t step, int64_t rows_per_step) {
    rows_impl *r = b->impl;
    if (b->cursor + rows_per_step > r->train->n) {
        b->epoch++;
        b->cursor = 0;
        amp_dataset_order(r->perm, r->train->n, r->seed, b->epoch, r->shuffle);
    }
    /* The step's window is [cursor, cursor + rows_per_step); this rank's
     * slice starts rank / world of the way in. The cursor moves past the
     * whole window now (a checkpoint is taken between steps). */
    r->pos = b->cursor + rows_per_step / b->world * b->rank;
    b->cursor += rows_per_step;
}

static void rows_next(amp_batcher *b, int rows) {
    rows_impl *r = b->impl;
    amp_dataset_gather(b->hx, b->hy, r->train, r->perm, r->pos, rows);
    r->pos += rows;
}

static void rows_eval(amp_batcher *b, int64_t start, int rows) {
    rows_impl *r = b->impl;
    amp_dataset_gather(b->hx, b->hy, r->test, NULL, start, rows);
}

static void rows_restore(amp_batcher *b, int64_t epoch, int64_t cursor, int64_t step) {
    rows_impl *r = b->impl;
    b->epoch = epoch;
    b->cursor = cursor;
    amp_dataset_order(r->perm, r->train->n, r->seed, epoch, r->shuffle);
}

static void rows_destroy(amp_batcher *b) {
    rows_impl *r = b->impl;
    if (r) free(r->perm);
    free(r);
}

static const amp_batcher_ops rows_ops = {
    .begin_step = rows_begin_step,
    .next = rows_next,
    .eval = rows_eval,
    .restore = rows_restore,
    .destroy = rows_destroy,
};

amp_batcher *amp_batcher_rows_create(const amp_dataset *train, const amp_dataset *test,
                                     uint64_t seed, int shuffle, int batch) {
    amp_batcher *b = calloc(1, sizeof *b);
    rows_impl *r = calloc(1, sizeof *r);
    if (!b || !r) {
        free(b);
        free(r);
        return NULL;
    }
    b->ops = &rows_ops;
    b->impl = r;
    b->world = 1;
    r->train = train;
    r->test = test;
    r->seed = seed;
    r->shuffle = shuffle;
    r->perm = malloc((size_t)(train->n > 0 ? train->n : 1) * sizeof *r->perm);
    b->hx = malloc((size_t)batch * (size_t)train->features * sizeof(float));
    b->hy = malloc((size_t)batch * sizeof(int32_t));
    if (!r->perm || !b->hx || !b->hy) goto fail;
    b->x_row_bytes = (size_t)train->features * sizeof(float);
    b->y_row_count = 1;
    b->train_rows = train->n;
    b->eval_rows = test->n;
    amp_dataset_order(r->perm, train->n, seed, 0, shuffle);
    return b;
fail:
    amp_batcher_free(b);
    return NULL;
}

void amp_batcher_free(amp_batcher *b) {
    if (!b) return;
    if (b->ops && b->ops->destroy) b->ops->destroy(b);
    free(b->hx);
    free(b->hy);
    free(b);
}
