#include "wait_policy.h"

#include "env.h"

void amp_wait_policy_prepare(amp_restart_env *r) {
    if (!amp_env_get("OMP_WAIT_POLICY") && !amp_env_get("GOMP_SPINCOUNT"))
        amp_restart_env_set(r, "OMP_WAIT_POLICY", "PASSIVE");
    if (!amp_env_get("OPENBLAS_THREAD_TIMEOUT")) amp_restart_env_set(r, "OPENBLAS_THREAD_TIMEOUT", "4");
}
