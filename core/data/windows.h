/* The window batcher: nanoGPT's get_batch over token ids. A row is a window
 * of T tokens, its labels the same window shifted by one (x = t[i:i+T],
 * y = t[i+1:i+T+1]). Training windows start uniformly over the training
 * split's valid starts, from a generator seeded with (seed, step), so a
 * resumed run sees the same batches (under data parallel, rank r takes the
 * r-th slice of the step's draws); the evaluation windows are a fixed set
 * over the validation split, the same for every seed and run. The text and
 * tokens datasets both read through it: the same ids give the same
 * batches. */
#ifndef AMP_WINDOWS_H
#define AMP_WINDOWS_H

#include <stdint.h>

#include "batcher.h"

enum { AMP_WINDOWS_TRAIN = 0, AMP_WINDOWS_VAL = 1 };

/* Where the windows come from. starts[split] windows of T + 1 tokens fit
 * in the split; copy writes window `start` (0 <= start < starts[split]) of
 * a split as x[T] and y[T]. */
typedef struct amp_window_source {
    int64_t train_tokens;     /* tokens in the training split (epochs, rows per epoch) */
    int64_t starts[2];        /* valid window starts per split, each > 0 */
    void (*copy)(const void *ctx, int split, int64_t start, int T, int32_t *x, int32_t *y);
    const void *ctx;          /* kept by the caller while the batcher lives */
} amp_window_source;

/* eval_windows fixed validation windows; NULL when out of memory. */
amp_batcher *amp_batcher_windows_create(const amp_window_source *src, uint64_t seed, int batch,
                                        int T, int64_t eval_windows);

/* The fixed validation window starts, within the validation split (for
 * tests); NULL for another batcher. */
const int64_t *amp_batcher_windows_eval_starts(const amp_batcher *b);

#endif
