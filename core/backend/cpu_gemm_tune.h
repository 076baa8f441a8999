/* The CPU backend's GEMM paths chosen by measurement, as cuDNN's benchmark
 * mode does: the first time a GEMM of a new shape runs, each candidate path
 * that gives autocast's math (FP32 accumulation of the exact products of
 * the operands' values) is timed on operands of that shape and layout, and
 * the fastest runs that shape from then on. The choice, not the timing,
 * decides the bits, so it is kept:
 *   - in a cache file per CPU model, instruction-set path and library
 *     versions ($AMPTRAIN_GEMM_CACHE, else $XDG_CACHE_HOME/amptrain, else
 *     ~/.cache/amptrain), written under an exclusive lock and never
 *     changed once written, so every later run on that machine, and two
 *     runs started together, run each shape on one path;
 *   - in the checkpoint (amp_backend_gemm_preload), so a resume runs the
 *     paths the run began with;
 *   - in summary.json, with every candidate's time.
 * A shape with one candidate (a pinned library or path) is not timed. */
#ifndef AMP_CPU_GEMM_TUNE_H
#define AMP_CPU_GEMM_TUNE_H

#include <stddef.h>

#include "backend/backend.h"

/* The candidate paths. The *_F32 ones widen 16-bit operands exactly to
 * FP32 first; the 16-bit ones multiply them natively, accumulating in FP32. */
typedef enum amp_gemm_cand {
    AMP_GEMM_ONEDNN_F32 = 0,
    AMP_GEMM_OPENBLAS_F32,
    AMP_GEMM_ONEDNN_BF16,
    AMP_GEMM_ONEDNN_F16,
    AMP_GEMM_REFERENCE, /* never timed: only when AMPTRAIN_GEMM=reference pins it */
    AMP_GEMM_CAND_COUNT
} amp_gemm_cand;

/* "onednn-f32", "openblas-f32", "onednn-bf16", "onednn-f16", "reference-f64" */
const char *amp_gemm_cand_name(amp_gemm_cand c);
/* The candidate named `name`, or -1. */
int amp_gemm_cand_parse(const char *name);

typedef struct amp_gemm_tuner amp_gemm_tuner;

/* A tuner whose cache file is named after `machine` (the CPU model, path
 * and library versions: whatever makes a choice invalid elsewhere). The
 * cache folder is made on first write; when it cannot be, the run says so
 * once and keeps its choices in memory. NULL when out of memory. */
amp_gemm_tuner *amp_gemm_tuner_create(const char *machine);
void amp_gemm_tuner_destroy(amp_gemm_tuner *t);

/* The text that identifies a GEMM shape (dtype, transposes, sizes, leading
 * dimensions, batch and strides, whether beta is 0, threads): the key of
 * the table, the cache and the checkpoint. */
void amp_gemm_tune_key(const amp_gemm_desc *d, int threads, char *out, size_t len);

/* Times candidate c once on the tuning operands; seconds, or < 0 with the
 * backend's err set. */
typedef double (*amp_gemm_time_fn)(void *ctx, amp_gemm_cand c);

/* The path for `key` among cands[n]: the table's (as chosen before, loaded
 * from the cache, or preloaded from a checkpoint when it is among cands),
 * else n == 1's only one ("pinned"), else the fastest of cands timed with
 * `time` (interleaved rounds, each candidate's fastest round), recorded in
 * the cache. -1 with err when timing fails. */
int amp_gemm_tuner_choose(amp_gemm_tuner *t, const char *key, const amp_gemm_cand *cands, int n,
                          amp_gemm_time_fn time, void *ctx, amp_gemm_cand *out, char *err,
                          size_t errlen);

/* Presets the path of `key` (a resume's): it wins over the cache. 0, or -1
 * with err for an unknown path name. */
int amp_gemm_tuner_preload(amp_gemm_tuner *t, const char *key, const char *path, char *err,
                           size_t errlen);

/* The choices so far, in the order they were made (for be->info). */
const amp_gemm_choice *amp_gemm_tuner_choices(const amp_gemm_tuner *t, int *n);

#endif
