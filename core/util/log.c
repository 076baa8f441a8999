#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int log_level = AMP_LOG_INFO;
static int log_rank;

void amp_log_set_level(int level) { log_level = level; }
void amp_log_set_rank(int rank) { log_rank = rank; }
int amp_log_get_level(void) { return log_level; }

void amp_log(int level, const char *fmt, ...) {
    static const char *const tags[] = {"error: ", "warning: ", "", "debug: "};
    if (level > log_level) return;
    /* Every rank says the same: rank 0 speaks, the others only of errors. */
    if (log_rank > 0 && level > AMP_LOG_ERROR) return;
    va_list ap;
    va_start(ap, fmt);
    if (log_rank > 0) fprintf(stderr, "amptrain: rank %d: ", log_rank);
    else fputs("amptrain: ", stderr);
    fputs(tags[level < 0 ? 0 : level > 3 ? 3 : level], stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void amp_set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
