#include "wait_policy.h"

#include <stdlib.h>
#include <unistd.h>

#include "env.h"

void amp_wait_policy_prepare(char **argv) {
    int set_omp = !amp_env_get("OMP_WAIT_POLICY") && !amp_env_get("GOMP_SPINCOUNT");
    int set_blas = !amp_env_get("OPENBLAS_THREAD_TIMEOUT");
    if (!set_omp && !set_blas) return; /* the user's choice, or already restarted */
    if ((set_omp && setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) ||
        (set_blas && setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1) != 0))
        return;
    execv("/proc/self/exe", argv);
    if (set_omp) unsetenv("OMP_WAIT_POLICY"); /* exec failed: go on as we are */
    if (set_blas) unsetenv("OPENBLAS_THREAD_TIMEOUT");
}
