#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int log_level = AMP_LOG_INFO;

void amp_log_set_level(int level) { log_level = level; }
int amp_log_get_level(void) { return log_level; }

void amp_log(int level, const char *fmt, ...) {
    static const char *const tags[] = {"error: ", "warning: ", "", "debug: "};
    if (level > log_level) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "amptrain: %s", tags[level < 0 ? 0 : level > 3 ? 3 : level]);
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
