/* The AMPTRAIN_* environment variables: one parser for each kind of value,
 * so a bad value reads the same wherever it is read ("NAME=value: expected
 * ..."), and one check of them all when the CLI starts, so a bad value is an
 * error (exit 2) even on a path that would not read it (AMPTRAIN_CUDA_SYNC on
 * the CPU, AMPTRAIN_THREADS on the GPU). An empty value counts as unset. */
#ifndef AMP_ENV_H
#define AMP_ENV_H

#include <stddef.h>

/* AMPTRAIN_GEMM's and AMPTRAIN_CUDA_SYNC's choices (NULL-terminated). */
enum { AMP_ENV_GEMM_ONEDNN = 0, AMP_ENV_GEMM_OPENBLAS = 1, AMP_ENV_GEMM_REFERENCE = 2 };
extern const char *const amp_env_gemm_libs[];
extern const char *const amp_env_zero_one[];

/* NAME's value when set and not empty, else NULL. */
const char *amp_env_get(const char *name);

/* NAME as one of choices (NULL-terminated): 1 with *index set, 0 when unset,
 * -1 with "NAME=value: expected a, b or c" in err. */
int amp_env_choice(const char *name, const char *const *choices, int *index, char *err,
                   size_t errlen);

/* NAME as an integer in [min, max]: 1 with *out set, 0 when unset, -1 with
 * "NAME=value: expected an integer in [min, max]" in err. */
int amp_env_int(const char *name, long min, long max, long *out, char *err, size_t errlen);

/* Checks every AMPTRAIN_* variable amptrain reads: AMPTRAIN_LOG,
 * AMPTRAIN_THREADS, AMPTRAIN_ISA, AMPTRAIN_GEMM, AMPTRAIN_GEMM_PATH,
 * AMPTRAIN_CUDA_SYNC and AMPTRAIN_PLUGIN_PATH (every entry an existing
 * folder); AMPTRAIN_GEMM_CACHE is any folder (or "off"). isa_names and
 * gemm_path_names are AMPTRAIN_ISA's and AMPTRAIN_GEMM_PATH's choices
 * (NULL-terminated), given by the caller so that this file stays below the
 * backend. 0, or -1 with the first problem in err. Other AMPTRAIN_* names
 * get a warning (a misspelt variable would do nothing). */
int amp_env_check(const char *const *isa_names, const char *const *gemm_path_names, char *err,
                  size_t errlen);

/* AMPTRAIN_LOG as an AMP_LOG_* level; -1 when unset or bad. */
int amp_env_log_level(void);

#endif
