/* Datasets: Fashion-MNIST from IDX files and a synthetic "tiny gradient"
 * task, plus the deterministic epoch order both are read in. Everything
 * lives in host memory; the training loop gathers a batch on the host and
 * uploads it. */
#ifndef AMP_DATA_H
#define AMP_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "data_id.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where Debian's dataset-fashion-mnist package installs the files. */
#define AMP_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

typedef struct amp_dataset {
    int64_t n;    /* examples */
    int features; /* floats per example (784 for Fashion-MNIST) */
    int classes;  /* 10 */
    int rows;     /* image height when the examples are images, else 0 */
    int cols;     /* image width when the examples are images, else 0 */
    float *x;     /* [n, features], host memory, owned */
    int32_t *y;   /* [n], owned, each in [0, classes) */
    amp_data_source src[2]; /* the images and labels files (IDX) */
} amp_dataset;

/* Loads Fashion-MNIST from dir (NULL = AMP_FASHION_MNIST_DIR).
 * split: "train" (train-*-ubyte.gz) or "test" (t10k-*-ubyte.gz); a missing
 * .gz falls back to the uncompressed name. limit > 0 keeps the first `limit`
 * examples (for quick runs); the whole files are still validated, streamed
 * through a fixed buffer, so memory follows the kept examples, not the
 * declared count. Only regular files are opened (io/file.h). Pixels
 * become x = byte / 255. On failure *out is zeroed and err names the file
 * and what to do. */
int amp_dataset_load_fashion_mnist(amp_dataset *out, const char *dir, const char *split,
                                   int64_t limit, char *err, size_t errlen);

/* Loads one IDX pair: an images file (magic 0x803, n x rows x cols bytes)
 * and a labels file (magic 0x801, n bytes in 0..9), each gzip or plain.
 * Same checks, limit and errors as amp_dataset_load_fashion_mnist, which
 * calls it; any bytes give an error, never a crash (fuzz/fuzz_idx.c). */
int amp_dataset_load_idx(amp_dataset *out, const char *images_path, const char *labels_path,
                         int64_t limit, char *err, size_t errlen);

/* 0 when test can be evaluated by a model built for train (same features
 * and classes); else -1 with a message naming dir. Without this check a
 * test split of larger images would overrun the batch buffers. */
int amp_dataset_check_splits(const amp_dataset *train, const amp_dataset *test, const char *dir,
                             char *err, size_t errlen);

/* The tiny-gradient synthetic task (see data.c): n examples of `features`
 * floats in `classes` classes; split "train" or "test" share the class
 * means and differ in their noise. input_scale multiplies every input
 * (exactly, when it is a power of two). On failure *out is zeroed. */
int amp_dataset_make_tiny(amp_dataset *out, const char *split, int64_t n, int features,
                          int classes, double input_scale, uint64_t seed, char *err,
                          size_t errlen);

/* Frees x and y and zeroes *d; safe on a zeroed or already freed dataset. */
void amp_dataset_free(amp_dataset *d);

/* Deterministic epoch order: perm[n] = a shuffle of 0..n-1 (Fisher-Yates
 * with amp_rng seeded from (seed, epoch)), or the identity when
 * shuffle == 0. The same (seed, epoch) gives the same order everywhere. */
void amp_dataset_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch, int shuffle);

/* Gathers rows perm[start .. start+count) of d into x_out [count, features]
 * and y_out [count]. perm == NULL means the identity order. The caller
 * keeps start + count <= d->n and every perm entry in [0, d->n). */
void amp_dataset_gather(float *x_out, int32_t *y_out, const amp_dataset *d,
                        const int64_t *perm, int64_t start, int64_t count);

#ifdef __cplusplus
}
#endif

#endif /* AMP_DATA_H */
