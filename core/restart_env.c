#include "restart_env.h"

#include <stdlib.h>
#include <unistd.h>

int amp_restart_env_set(amp_restart_env *r, const char *name, const char *value) {
    if (r->n >= AMP_RESTART_ENV_MAX || setenv(name, value, 1) != 0) return -1;
    r->names[r->n++] = name;
    return 0;
}

void amp_restart_env_exec(amp_restart_env *r, char **argv) {
    if (r->n == 0) return;
    execv("/proc/self/exe", argv);
    while (r->n > 0) unsetenv(r->names[--r->n]); /* exec failed: go on as we are */
}
