/* Diagnostics: messages to stderr, and the formatter library functions use
 * for their error buffers. Only main() and the CLI decide what is fatal. */
#ifndef AMP_LOG_H
#define AMP_LOG_H

#include <stddef.h>

#include "amptrain/plugin.h"

/* Messages above this level are dropped (AMP_LOG_INFO by default). */
void amp_log_set_level(int level);
int amp_log_get_level(void);
/* A data-parallel rank: ranks above 0 print errors only, prefixed with
 * "rank N: " (the others' messages would repeat rank 0's). */
void amp_log_set_rank(int rank);
void amp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* printf into a caller's error buffer; err NULL or errlen 0 writes nothing. */
void amp_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
