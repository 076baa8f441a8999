#include "restart_env.h"

#include <stdio.h>
#include <stdlib.h>

#include "self_exe.h"

int amp_restart_env_set(amp_restart_env *r, const char *name, const char *value) {
    if (r->n >= AMP_RESTART_ENV_MAX || setenv(name, value, 1) != 0) return -1;
    r->names[r->n++] = name;
    return 0;
}

void amp_restart_env_list(const amp_restart_env *r, char *out, size_t len) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < r->n && used < len; i++) {
        const char *v = getenv(r->names[i]);
        used += (size_t)snprintf(out + used, len - used, "%s%s=%s", i ? " " : "", r->names[i],
                                 v ? v : "");
    }
}

int amp_restart_env_exec(amp_restart_env *r, char **argv, char *why, size_t whylen) {
    if (r->n == 0) return 0;
    amp_self_execv(argv, why, whylen);
    while (r->n > 0) unsetenv(r->names[--r->n]); /* go on as we are */
    return -1;
}
