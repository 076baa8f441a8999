#include "env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/log.h"

extern char **environ;

static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL}; /* AMP_LOG_* */
const char *const amp_env_gemm_libs[] = {"onednn", "openblas", "reference", NULL};
const char *const amp_env_zero_one[] = {"0", "1", NULL};

const char *amp_env_get(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int amp_env_choice(const char *name, const char *const *choices, int *index, char *err,
                   size_t errlen) {
    const char *v = amp_env_get(name);
    if (!v) return 0;
    for (int i = 0; choices[i]; i++)
        if (strcmp(v, choices[i]) == 0) {
            *index = i;
            return 1;
        }
    int n = snprintf(err, errlen, "%s=%s: expected ", name, v);
    for (int i = 0; choices[i] && n >= 0 && (size_t)n < errlen; i++)
        n += snprintf(err + n, errlen - (size_t)n, "%s%s", i == 0 ? "" : choices[i + 1] ? ", " : " or ",
                      choices[i]);
    return -1;
}

int amp_env_int(const char *name, long min, long max, long *out, char *err, size_t errlen) {
    const char *v = amp_env_get(name);
    if (!v) return 0;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE || x < min || x > max) {
        snprintf(err, errlen, "%s=%s: expected an integer in [%ld, %ld]", name, v, min, max);
        return -1;
    }
    *out = x;
    return 1;
}

/* Every entry a folder: a misspelt one would only hide the plugins in it. */
static int check_plugin_path(char *err, size_t errlen) {
    const char *v = amp_env_get("AMPTRAIN_PLUGIN_PATH");
    for (const char *p = v; p && *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0) {
            char *dir = strndup(p, n);
            struct stat st;
            int bad = !dir ? ENOMEM : stat(dir, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
            if (bad)
                snprintf(err, errlen,
                         "AMPTRAIN_PLUGIN_PATH: entry '%s': %s; expected folders separated by ':'",
                         dir ? dir : "?", strerror(bad));
            free(dir);
            if (bad) return -1;
        }
        p += n;
        if (*p == ':') p++;
    }
    return 0;
}

/* Names amptrain reads; others starting with AMPTRAIN_ are warned about. */
static const char *const known_names[] = {
    "AMPTRAIN_LOG",       "AMPTRAIN_THREADS",     "AMPTRAIN_ISA",        "AMPTRAIN_GEMM",
    "AMPTRAIN_GEMM_PATH", "AMPTRAIN_GEMM_CACHE",  "AMPTRAIN_CUDA_SYNC",  "AMPTRAIN_PLUGIN_PATH"};

static void warn_unknown_names(void) {
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "AMPTRAIN_", 9) != 0) continue;
        size_t n = strcspn(*e, "=");
        int known = 0;
        for (size_t i = 0; i < sizeof known_names / sizeof known_names[0]; i++)
            known |= strlen(known_names[i]) == n && strncmp(*e, known_names[i], n) == 0;
        if (!known)
            amp_log(AMP_LOG_WARN,
                    "%.*s is set but amptrain reads no such variable (it reads AMPTRAIN_LOG, "
                    "AMPTRAIN_THREADS, AMPTRAIN_ISA, AMPTRAIN_GEMM, AMPTRAIN_GEMM_PATH, "
                    "AMPTRAIN_GEMM_CACHE, AMPTRAIN_CUDA_SYNC and AMPTRAIN_PLUGIN_PATH)",
                    (int)n, *e);
    }
}

int amp_env_check(const char *const *isa_names, const char *const *gemm_path_names, char *err,
                  size_t errlen) {
    int idx;
    long threads;
    if (amp_env_choice("AMPTRAIN_LOG", log_levels, &idx, err, errlen) < 0 ||
        amp_env_int("AMPTRAIN_THREADS", 1, 1024, &threads, err, errlen) < 0 ||
        amp_env_choice("AMPTRAIN_ISA", isa_names, &idx, err, errlen) < 0 ||
        amp_env_choice("AMPTRAIN_GEMM", amp_env_gemm_libs, &idx, err, errlen) < 0 ||
        amp_env_choice("AMPTRAIN_GEMM_PATH", gemm_path_names, &idx, err, errlen) < 0 ||
        amp_env_choice("AMPTRAIN_CUDA_SYNC", amp_env_zero_one, &idx, err, errlen) < 0 ||
        check_plugin_path(err, errlen) < 0)
        return -1;
    warn_unknown_names();
    return 0;
}

int amp_env_log_level(void) {
    char err[8];
    int idx = -1;
    return amp_env_choice("AMPTRAIN_LOG", log_levels, &idx, err, sizeof err) == 1 ? idx : -1;
}
