/* The window batcher (windows.h), as the text dataset drew its windows:
 * the generators' seeds are the text batcher's, so text runs keep their
 * bits. */
#include "windows.h"

#include <stdlib.h>

#include "util/rng.h"

#define AMP_STREAM_TEXT_TRAIN 0x54585454524e0000ULL /* "TXTTRN", step in the stream */
#define AMP_TEXT_EVAL_SEED 0x5458545645414cULL      /* "TXTVAL": one set for every run */

typedef struct windows_impl {
    amp_window_source src;
    uint64_t seed;
    int T;
    int64_t *eval_starts; /* [eval_windows] */
    amp_rng rng;          /* this step's window generator */
} windows_impl;

/* Rows row0 .. row0+rows of the staging: windows of split at starts[0 .. rows). */
static void fill(amp_batcher *b, int split, const int64_t *starts, int row0, int rows) {
    windows_impl *p = b->impl;
    int32_t *x = (int32_t *)b->hx + (size_t)row0 * p->T, *y = b->hy + (size_t)row0 * p->T;
    for (int r = 0; r < rows; r++)
        p->src.copy(p->src.ctx, split, starts[r], p->T, x + (size_t)r * p->T, y + (size_t)r * p->T);
}

static void windows_begin_step(amp_batcher *b, int64_t step, int64_t rows_per_step) {
    windows_impl *p = b->impl;
    amp_rng_seed_stream(&p->rng, p->seed, AMP_STREAM_TEXT_TRAIN ^ (uint64_t)step);
    /* passes over the training tokens so far (for the metrics' epoch) */
    double tokens = (double)step * (double)rows_per_step * (double)p->T;
    b->epoch = (int64_t)(tokens / (double)p->src.train_tokens);
    b->cursor = 0;
    /* Data parallel: the step's rows_per_step (global) draws are one stream;
     * rank r takes the r-th of `world` equal consecutive slices of it, so it
     * skips the draws of the ranks before it (the global batch is the same
     * whatever the number of ranks). */
    int64_t skip = rows_per_step / (b->world > 0 ? b->world : 1) * b->rank;
    for (int64_t i = 0; i < skip; i++)
        (void)amp_rng_below(&p->rng, (uint64_t)p->src.starts[AMP_WINDOWS_TRAIN]);
}

static void windows_next(amp_batcher *b, int rows) {
    windows_impl *p = b->impl;
    int64_t starts[64];
    for (int done = 0; done < rows;) {
        int k = rows - done < 64 ? rows - done : 64;
        for (int i = 0; i < k; i++)
            starts[i] = (int64_t)amp_rng_below(&p->rng, (uint64_t)p->src.starts[AMP_WINDOWS_TRAIN]);
        fill(b, AMP_WINDOWS_TRAIN, starts, done, k);
        done += k;
    }
    b->cursor += rows;
}

static void windows_eval(amp_batcher *b, int64_t start, int rows) {
    windows_impl *p = b->impl;
    fill(b, AMP_WINDOWS_VAL, p->eval_starts + start, 0, rows);
}

static void windows_restore(amp_batcher *b, int64_t epoch, int64_t cursor, int64_t step) {
    (void)step; /* begin_step re-seeds from the step: nothing else to rebuild */
    b->epoch = epoch;
    b->cursor = cursor;
}

static void windows_destroy(amp_batcher *b) {
    windows_impl *p = b->impl;
    if (p) free(p->eval_starts);
    free(p);
}

static const amp_batcher_ops windows_ops = {
    .begin_step = windows_begin_step,
    .next = windows_next,
    .eval = windows_eval,
    .restore = windows_restore,
    .destroy = windows_destroy,
};

amp_batcher *amp_batcher_windows_create(const amp_window_source *src, uint64_t seed, int batch,
                                        int T, int64_t eval_windows) {
    amp_batcher *b = calloc(1, sizeof *b);
    windows_impl *p = calloc(1, sizeof *p);
    if (!b || !p) {
        free(b);
        free(p);
        return NULL;
    }
    b->ops = &windows_ops;
    b->impl = p;
    p->src = *src;
    p->seed = seed;
    p->T = T;
    p->eval_starts = malloc((size_t)(eval_windows > 0 ? eval_windows : 1) * sizeof *p->eval_starts);
    b->hx = malloc((size_t)batch * (size_t)T * sizeof(int32_t));
    b->hy = malloc((size_t)batch * (size_t)T * sizeof(int32_t));
    if (!p->eval_starts || !b->hx || !b->hy) {
        amp_batcher_free(b);
        return NULL;
    }
    amp_rng r;
    amp_rng_seed(&r, AMP_TEXT_EVAL_SEED);
    for (int64_t i = 0; i < eval_windows; i++)
        p->eval_starts[i] = (int64_t)amp_rng_below(&r, (uint64_t)src->starts[AMP_WINDOWS_VAL]);
    b->x_row_bytes = (size_t)T * sizeof(int32_t);
    b->y_row_count = (size_t)T;
    b->train_rows = src->train_tokens / T;
    b->eval_rows = eval_windows;
    windows_begin_step(b, 0, batch);
    return b;
}

const int64_t *amp_batcher_windows_eval_starts(const amp_batcher *b) {
    return b && b->ops == &windows_ops ? ((const windows_impl *)b->impl)->eval_starts : NULL;
}
