/* The environment the libraries read while the program loads (OpenMP's
 * and OpenBLAS's thread settings) can only take effect by running the
 * program again. Each start-up module records what it wants set here, and
 * the start-up step (startup.h) restarts the program once, with all of it
 * (wait_policy.h, mem_limit.h). */
#ifndef AMP_RESTART_ENV_H
#define AMP_RESTART_ENV_H

#include <stddef.h>

#define AMP_RESTART_ENV_MAX 8

typedef struct amp_restart_env {
    const char *names[AMP_RESTART_ENV_MAX];
    int n;
} amp_restart_env;

/* setenv(name, value) for the restart, recorded; -1 when it fails or the
 * list is full (then nothing was set). */
int amp_restart_env_set(amp_restart_env *r, const char *name, const char *value);

/* "NAME=value NAME=value" of the recorded variables into out. */
void amp_restart_env_list(const amp_restart_env *r, char *out, size_t len);

/* Re-executes this program (through the dynamic loader when it was started
 * so: self_exe.h) with argv[1..] when anything was recorded; returns 0 when
 * nothing was, or -1 with why when the exec failed: then every recorded
 * variable is unset again. */
int amp_restart_env_exec(amp_restart_env *r, char **argv, char *why, size_t whylen);

#endif
