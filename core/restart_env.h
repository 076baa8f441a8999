/* The environment the libraries read while the program loads (OpenMP's
 * and OpenBLAS's thread settings) can only take effect by running the
 * program again. Each start-up module records what it wants set here, and
 * the program restarts itself once, with all of it, before anything else
 * (wait_policy.h, mem_limit.h). */
#ifndef AMP_RESTART_ENV_H
#define AMP_RESTART_ENV_H

#define AMP_RESTART_ENV_MAX 8

typedef struct amp_restart_env {
    const char *names[AMP_RESTART_ENV_MAX];
    int n;
} amp_restart_env;

/* setenv(name, value) for the restart, recorded; -1 when it fails or the
 * list is full (then nothing was set). */
int amp_restart_env_set(amp_restart_env *r, const char *name, const char *value);

/* Re-executes this program when anything was set; returns when nothing
 * was (or the exec failed: then every recorded variable is unset again
 * and the program goes on as it is). */
void amp_restart_env_exec(amp_restart_env *r, char **argv);

#endif
